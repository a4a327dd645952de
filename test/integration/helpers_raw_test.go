// Helpers for tests that speak the Kafka protocol by hand over a bare TCP
// connection (hostile clients, exact frames, wire versions).

package integration

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
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
