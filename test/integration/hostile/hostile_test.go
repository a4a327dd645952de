package hostile

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// stillServes checks a normal client gets full service.
func stillServes(t *testing.T, addr string) {
	t.Helper()
	cl := itest.NewClient(t, addr, kgo.DefaultProduceTopic("after-hostile"), kgo.AllowAutoTopicCreation())
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
		send func(rc *itest.RawConn)
	}{
		{"negative size", func(rc *itest.RawConn) { rc.Write([]byte{0xff, 0xff, 0xff, 0xfe}) }},
		{"1 GiB size prefix", func(rc *itest.RawConn) { rc.Write([]byte{0x40, 0, 0, 0}) }},
		{"size below a header", func(rc *itest.RawConn) { rc.Write([]byte{0, 0, 0, 3, 1, 2, 3}) }},
		{"unknown api key", func(rc *itest.RawConn) { rc.Write(itest.Frame(999, 0, 1, false, nil)) }},
		{"unsupported produce version", func(rc *itest.RawConn) { rc.Write(itest.Frame(0, 99, 1, false, nil)) }},
		{"garbage metadata body", func(rc *itest.RawConn) {
			rc.Write(itest.Frame(3, 12, 1, true, []byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3}))
		}},
		{"truncated header", func(rc *itest.RawConn) { rc.Write([]byte{0, 0, 0, 8, 0, 3, 0, 1, 0, 0, 0, 1}) }},
		{"frame cut short then close", func(rc *itest.RawConn) {
			rc.Write([]byte{0, 0, 1, 0, 0, 3})
			rc.Nc.(*net.TCPConn).CloseWrite()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := itest.DialRaw(t, addr)
			tc.send(rc)
			rc.ExpectClosed()
			stillServes(t, addr)
		})
	}
}

// ApiVersions at a version above the supported range is answered with
// UNSUPPORTED_VERSION and ApiVersions' own range in a v0 body, as Kafka
// 2.4+ does (KIP-511): the client retries at a version it can use.
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	rc := itest.DialRaw(t, c.Addr())
	rc.Write(itest.Frame(18, 99, 7, false, []byte{0xde, 0xad}))
	body := rc.ReadResponse(7, false)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want 35", resp.ErrorCode)
	}
	if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("keys %+v, want ApiVersions 0-4 only", resp.ApiKeys)
	}
	// The connection stays usable.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1.0"
	rc.Write(itest.RequestFrame(req, 8))
	body = rc.ReadResponse(8, false)
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
	rc := itest.DialRaw(t, c.Addr())
	good := itest.RecordBatch([]byte("hello"))
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
		frames = append(frames, itest.RequestFrame(req, int32(100+i))...)
	}
	rc.Write(frames) // all four pipelined in one write
	want := []struct {
		code int16
		base int64
	}{{kerr.CorruptMessage.Code, -1}, {0, 0}, {kerr.CorruptMessage.Code, -1}, {0, 1}}
	for i, w := range want {
		body := rc.ReadResponse(int32(100+i), true)
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
	got := itest.ConsumeAll(t, c.Addr(), "crc", 2)
	if len(got) != 2 || string(got[0].Value) != "hello" || got[1].Offset != 1 {
		t.Fatalf("log holds %d records", len(got))
	}
}
