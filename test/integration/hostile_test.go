package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// rawConn is a bare TCP connection speaking frames by hand.
type rawConn struct {
	t  *testing.T
	nc net.Conn
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

// frame builds a request frame: size, header v1 (v2 when flexible), body.
func frame(key, version int16, corr int32, flexible bool, body []byte) []byte {
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt16(b, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, nil)
	if flexible {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func requestFrame(req kmsg.Request, corr int32) []byte {
	return frame(req.Key(), req.GetVersion(), corr, req.IsFlexible(), req.AppendTo(nil))
}

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readResponse reads one response frame and returns its body after the
// correlation id (and the flexible header's tags when flexibleHeader).
func (c *rawConn) readResponse(corr int32, flexibleHeader bool) []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		c.t.Fatalf("read size: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.nc, body); err != nil {
		c.t.Fatalf("read body: %v", err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	body = body[4:]
	if flexibleHeader {
		body = body[1:]
	}
	return body
}

// expectClosed asserts the broker closes the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.nc.Read(make([]byte, 1))
	if err == nil {
		c.t.Fatalf("connection still open (read %d bytes)", n)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatal("connection not closed within 5s")
	}
}

// stillServes checks a normal client gets full service.
func stillServes(t *testing.T, addr string) {
	t.Helper()
	cl := newClient(t, addr, kgo.DefaultProduceTopic("after-hostile"), kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatalf("normal client refused after hostile input: %v", err)
	}
}

func TestHostileInputAtTheSocket(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	addr := c.Addr()
	cases := []struct {
		name string
		send func(rc *rawConn)
	}{
		{"negative size", func(rc *rawConn) { rc.write([]byte{0xff, 0xff, 0xff, 0xfe}) }},
		{"1 GiB size prefix", func(rc *rawConn) { rc.write([]byte{0x40, 0, 0, 0}) }},
		{"size below a header", func(rc *rawConn) { rc.write([]byte{0, 0, 0, 3, 1, 2, 3}) }},
		{"unknown api key", func(rc *rawConn) { rc.write(frame(999, 0, 1, false, nil)) }},
		{"unsupported produce version", func(rc *rawConn) { rc.write(frame(0, 99, 1, false, nil)) }},
		{"garbage metadata body", func(rc *rawConn) {
			rc.write(frame(3, 12, 1, true, []byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3}))
		}},
		{"truncated header", func(rc *rawConn) { rc.write([]byte{0, 0, 0, 8, 0, 3, 0, 1, 0, 0, 0, 1}) }},
		{"frame cut short then close", func(rc *rawConn) {
			rc.write([]byte{0, 0, 1, 0, 0, 3})
			rc.nc.(*net.TCPConn).CloseWrite()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, addr)
			tc.send(rc)
			rc.expectClosed()
			stillServes(t, addr)
		})
	}
}

// ApiVersions at a version above the supported range is answered with
// UNSUPPORTED_VERSION and the supported ranges in a v0 body, as Kafka does.
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	rc := dialRaw(t, c.Addr())
	rc.write(frame(18, 99, 7, false, []byte{0xde, 0xad}))
	body := rc.readResponse(7, false)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want 35", resp.ErrorCode)
	}
	var sawProduce bool
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 0 {
			sawProduce = k.MinVersion == 3 && k.MaxVersion >= 9
		}
	}
	if !sawProduce || len(resp.ApiKeys) < 10 {
		t.Fatalf("ranges missing: %+v", resp.ApiKeys)
	}
	// The connection stays usable.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1.0"
	rc.write(requestFrame(req, 8))
	body = rc.readResponse(8, false)
	ok := kmsg.NewPtrApiVersionsResponse()
	ok.Version = 3
	if err := ok.ReadFrom(body); err != nil || ok.ErrorCode != 0 {
		t.Fatalf("v3 after v99: %v code %d", err, ok.ErrorCode)
	}
}

// A produce whose batch CRC is wrong is answered CORRUPT_MESSAGE and
// nothing is written; pipelined requests are answered in order.
func TestProduceCorruptCRCAndPipelining(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("crc", 1))
	rc := dialRaw(t, c.Addr())
	good := recordBatch([]byte("hello"))
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 0xff

	var frames []byte
	for i, recs := range [][]byte{bad, good, bad, good} {
		req := kmsg.NewPtrProduceRequest()
		req.Version = 9
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "crc"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = append([]byte(nil), recs...)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		frames = append(frames, requestFrame(req, int32(100+i))...)
	}
	rc.write(frames) // all four pipelined in one write
	want := []struct {
		code int16
		base int64
	}{{kerr.CorruptMessage.Code, -1}, {0, 0}, {kerr.CorruptMessage.Code, -1}, {0, 1}}
	for i, w := range want {
		body := rc.readResponse(int32(100+i), true)
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		if err := resp.ReadFrom(body); err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != w.code || p.BaseOffset != w.base {
			t.Fatalf("response %d: code %d base %d, want code %d base %d", i, p.ErrorCode, p.BaseOffset, w.code, w.base)
		}
	}
	got := consumeAll(t, c.Addr(), "crc", 2)
	if len(got) != 2 || string(got[0].Value) != "hello" || got[1].Offset != 1 {
		t.Fatalf("log holds %d records", len(got))
	}
}

// recordBatch encodes one uncompressed v2 batch holding one record.
func recordBatch(value []byte) []byte {
	rec := kmsg.Record{Value: value}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	body := rec.AppendTo(nil)
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: 0, FirstTimestamp: time.Now().UnixMilli(),
		MaxTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: 1, Records: body}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	crc := crc32c(raw[21:])
	binary.BigEndian.PutUint32(raw[17:], crc)
	return raw
}
