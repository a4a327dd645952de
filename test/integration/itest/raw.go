// Helpers for tests that speak the Kafka protocol by hand over a bare TCP
// connection (hostile clients, exact frames, wire versions).

package itest

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

// RawConn is a bare TCP connection speaking frames by hand.
type RawConn struct {
	t  *testing.T
	Nc net.Conn
}

func DialRaw(t *testing.T, addr string) *RawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &RawConn{t: t, Nc: nc}
}

// Frame builds a request frame: size, header v1 (v2 when flexible), body.
func Frame(key, version int16, corr int32, flexible bool, body []byte) []byte {
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

func RequestFrame(req kmsg.Request, corr int32) []byte {
	return Frame(req.Key(), req.GetVersion(), corr, req.IsFlexible(), req.AppendTo(nil))
}

func (c *RawConn) Write(b []byte) {
	c.t.Helper()
	c.Nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// ReadResponse reads one response frame and returns its body after the
// correlation id (and the flexible header's tags when flexibleHeader).
func (c *RawConn) ReadResponse(corr int32, flexibleHeader bool) []byte {
	c.t.Helper()
	c.Nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.Nc, size[:]); err != nil {
		c.t.Fatalf("read size: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.Nc, body); err != nil {
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

// ExpectClosed asserts the broker closes the connection.
func (c *RawConn) ExpectClosed() {
	c.t.Helper()
	c.Nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Nc.Read(make([]byte, 1))
	if err == nil {
		c.t.Fatalf("connection still open (read %d bytes)", n)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatal("connection not closed within 5s")
	}
}

// RecordBatch encodes one uncompressed v2 batch holding one record.
func RecordBatch(value []byte) []byte {
	rec := kmsg.Record{Value: value}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	body := rec.AppendTo(nil)
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: 0, FirstTimestamp: time.Now().UnixMilli(),
		MaxTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: 1, Records: body}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	crc := Crc32c(raw[21:])
	binary.BigEndian.PutUint32(raw[17:], crc)
	return raw
}

// ReadBare reads one bare (size-prefixed, headerless) frame.
func (c *RawConn) ReadBare() []byte {
	c.t.Helper()
	c.Nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.Nc, size[:]); err != nil {
		c.t.Fatalf("read bare size: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.Nc, b); err != nil {
		c.t.Fatalf("read bare token: %v", err)
	}
	return b
}
