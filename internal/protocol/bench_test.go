package protocol

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceFrame is a Produce v9 request frame (without the size prefix) of
// one partition holding a batch of n 100-byte records.
func produceFrame(n int) []byte {
	var recs []byte
	val := make([]byte, 100)
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: val}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(n - 1), NumRecords: int32(n), ProducerID: -1,
		ProducerEpoch: -1, FirstSequence: -1, Records: recs}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = rb.AppendTo(nil)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	frame := []byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 3, 'c', 'l', 'i', 0} // key, version, correlation id, client id, tags
	return req.AppendTo(frame)
}

type produceHandler struct{ testHandler }

func (*produceHandler) VersionRange(key int16) (int16, int16, bool) {
	if key == 0 {
		return 3, 11, true
	}
	return 0, 0, false
}

// BenchmarkDecodeProduce decodes a request header and a Produce body with
// kmsg; the records alias the frame, so allocations do not grow with the
// batch.
func BenchmarkDecodeProduce(b *testing.B) {
	for _, n := range []int{1, 100, 5000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			frame := produceFrame(n)
			s := NewServer(DefaultConfig(), &produceHandler{}, nil, nil)
			c1, c2 := net.Pipe()
			defer c1.Close()
			defer c2.Close()
			c := &conn{s: s, nc: c1}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				in, err := c.decode(frame)
				if err != nil {
					b.Fatal(err)
				}
				if len(in.req.Body.(*kmsg.ProduceRequest).Topics[0].Partitions[0].Records) == 0 {
					b.Fatal("no records")
				}
			}
		})
	}
}

// BenchmarkAppendFetchResponse encodes a Fetch response whose records are
// bytes long as the connection writer does: into its buffer, which it
// keeps when small and hands to a shared pool when over 1 MiB
// (writer=true); writer=false starts every response from no buffer.
func BenchmarkAppendFetchResponse(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20, 8 << 20} {
		for _, reuse := range []bool{true, false} {
			b.Run(fmt.Sprintf("bytes=%d/writer=%v", size, reuse), func(b *testing.B) {
				resp := kmsg.NewPtrFetchResponse()
				resp.Version = 12
				for p := range 8 {
					t := kmsg.NewFetchResponseTopic()
					t.Topic = "orders"
					sp := kmsg.NewFetchResponseTopicPartition()
					sp.Partition = int32(p)
					sp.RecordBatches = make([]byte, size/8)
					t.Partitions = append(t.Partitions, sp)
					resp.Topics = append(resp.Topics, t)
				}
				var buf []byte
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if !reuse {
						buf = nil
					}
					buf = appendResponse(buf[:0], 1, resp)
					if reuse {
						buf = releaseLarge(buf)
					}
				}
			})
		}
	}
}

// BenchmarkRequestMetrics is the per-request metrics update of the
// connection writer: cached series, and the label lookups it replaced.
func BenchmarkRequestMetrics(b *testing.B) {
	m := NewMetrics(nil)
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			api := m.forAPI(0)
			api.requests.Inc()
			api.latency.Observe(0.001)
		}
	})
	b.Run("WithLabelValues", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			api := apiName(0)
			m.Requests.WithLabelValues(api).Inc()
			m.Latency.WithLabelValues(api).Observe(0.001)
		}
	})
}

// BenchmarkRoundTrip is one small request answered at a time over
// loopback TCP (a client with one request in flight, as kgo's
// non-idempotent producer): read, decode, handle, encode, write.
func BenchmarkRoundTrip(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := NewServer(DefaultConfig(), &testHandler{}, nil, NewMetrics(nil))
	done := make(chan struct{})
	go func() { s.Serve(ln); close(done) }()
	defer func() {
		s.Shutdown(context.Background())
		<-done
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	frame := metadataFrame(1, "t")
	b.ReportAllocs()
	roundTrips(b, nc, frame)
}

// roundTrips writes msg (a whole frame, size prefix included) and reads
// the whole answer, b.N times.
func roundTrips(b *testing.B, nc net.Conn, msg []byte) {
	var size [4]byte
	body := make([]byte, 0, 1024)
	for b.Loop() {
		if _, err := nc.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			b.Fatal(err)
		}
		body = body[:binary.BigEndian.Uint32(size[:])]
		if _, err := io.ReadFull(nc, body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFetchFromFile: a Fetch response of one record set of the size
// given, served from a file over loopback TCP and read whole by the
// client, sent with sendfile(2) or (copy) read into a pooled buffer and
// written, as the server serves record sets the log left in the segment
// file or read. ns/op is the round trip; the broker-side saving shows in
// CPU profiles more than here, the client's read being the same.
func BenchmarkFetchFromFile(b *testing.B) {
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(b.TempDir(), "segment")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{64 << 10, 1 << 20, 8 << 20} {
		for _, copying := range []bool{false, true} {
			b.Run(fmt.Sprintf("bytes=%dK/copy=%v", size>>10, copying), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.private.copyFileRecords = copying
				_, _, addr := serve(b, cfg, &fileHandler{path: path, truncate: -1})
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				frame := requestFrame(1, fetchOf(11, [][2]int{{0, size}}))
				resp := make([]byte, size+1<<10)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := nc.Write(frame); err != nil {
						b.Fatal(err)
					}
					var n [4]byte
					if _, err := io.ReadFull(nc, n[:]); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(nc, resp[:binary.BigEndian.Uint32(n[:])]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// ackingProduceHandler answers every Produce with an empty response.
type ackingProduceHandler struct{ produceHandler }

func (*ackingProduceHandler) Handle(_ context.Context, r *Request) kmsg.Response {
	return r.Body.(*kmsg.ProduceRequest).ResponseKind()
}

// BenchmarkReadProduceFrame sends Produce requests of about 1 and 8 MiB
// over loopback TCP, one in flight, and reads each answer: the frame read
// as the server reads it (grown: one buffer up to frameStep, a growing
// one past it) or into one buffer of the declared size (whole). The
// client's work is the same in both, so the difference in ns/op is the
// server's reading of the frame.
func BenchmarkReadProduceFrame(b *testing.B) {
	for _, records := range []int{10000, 75000} {
		frame := produceFrame(records)
		msg := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
		msg = append(msg, frame...)
		for _, whole := range []bool{false, true} {
			name := fmt.Sprintf("MiB=%d/%s", len(frame)>>20, map[bool]string{false: "grown", true: "whole"}[whole])
			b.Run(name, func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.private.preallocateFrames = whole
				_, _, addr := serve(b, cfg, &ackingProduceHandler{})
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				b.SetBytes(int64(len(msg)))
				roundTrips(b, nc, msg)
			})
		}
	}
}
