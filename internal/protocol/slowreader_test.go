package protocol

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchHandler answers a Fetch with MaxBytes of freshly allocated record
// bytes, as a read from the log would.
type fetchHandler struct{ testHandler }

func (h *fetchHandler) Handle(ctx context.Context, r *Request) kmsg.Response {
	req, ok := r.Body.(*kmsg.FetchRequest)
	if !ok {
		return h.testHandler.Handle(ctx, r)
	}
	h.handled.Add(1)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	t := kmsg.NewFetchResponseTopic()
	t.Topic = "big"
	p := kmsg.NewFetchResponseTopicPartition()
	p.RecordBatches = make([]byte, req.MaxBytes)
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp
}

func (h *fetchHandler) VersionRange(key int16) (int16, int16, bool) {
	if key == 1 {
		return 4, 11, true
	}
	return h.testHandler.VersionRange(key)
}

// fetchFrame is a Fetch v11 request frame asking for maxBytes.
func fetchFrame(corr, maxBytes int32) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes, req.SessionEpoch, req.ReplicaID = 11, maxBytes, -1, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "big"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return requestFrame(corr, req)
}

// smallSendBuffers gives accepted connections a 16 KiB socket send
// buffer, so a client that does not read blocks the writer at once.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return nc, err
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // the second empties sync.Pool victims (largeBuffers)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

const (
	stuckConns      = 4
	stuckPipeline   = 8
	stuckFetchBytes = 4 << 20
)

// slowReaders starts a server with cfg and stuckConns clients that each
// pipeline stuckPipeline Fetches of stuckFetchBytes and never read.
func slowReaders(t *testing.T, cfg Config) (*Server, *Metrics, *fetchHandler, []net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &fetchHandler{}
	m := NewMetrics(nil)
	s := NewServer(cfg, h, nil, m)
	done := make(chan struct{})
	go func() { s.Serve(smallSendBuffers{ln}); close(done) }()
	t.Cleanup(func() { s.Shutdown(context.Background()); <-done })
	var ncs []net.Conn
	for range stuckConns {
		nc := dialFrom(t, "127.0.0.1", ln.Addr().String())
		nc.(*net.TCPConn).SetReadBuffer(16 << 10)
		var frames []byte
		for i := range stuckPipeline {
			frames = append(frames, fetchFrame(int32(i), stuckFetchBytes)...)
		}
		if _, err := nc.Write(frames); err != nil {
			t.Fatal(err)
		}
		ncs = append(ncs, nc)
	}
	return s, m, h, ncs
}

// budgets reports each connection's requests and bytes held.
func budgets(s *Server) (requests []int, bytes []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		r, b := c.budget.held()
		requests, bytes = append(requests, r), append(bytes, b)
	}
	return requests, bytes
}

// Clients that pipeline 8 Fetches of 4 MiB each and never read their
// responses: with the per-connection budget each connection holds one
// response (the one its writer is blocked on) and reads nothing further,
// as a muted Kafka channel; without it (the negative control) each holds
// all 8. The live heap is measured in both states.
func TestSlowReaderHoldsOneResponse(t *testing.T) {
	base := liveHeap()
	t.Run("bounded", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.IdleTimeout = 10 * time.Minute // the writers stay blocked while measured
		s, _, h, _ := slowReaders(t, cfg)
		waitFor(t, "one Fetch handled per connection, its writer blocked", func() bool {
			reqs, bytes := budgets(s)
			if h.handled.Load() != stuckConns || len(reqs) != stuckConns {
				return false
			}
			for i := range reqs {
				if reqs[i] != 1 || bytes[i] < stuckFetchBytes {
					return false
				}
			}
			return true
		})
		heap := liveHeap() - min(base, liveHeap())
		reqs, bytes := budgets(s)
		t.Logf("budget on: %d Fetches handled of %d sent; per connection %v requests, %v bytes held; live heap +%d MiB",
			h.handled.Load(), stuckConns*stuckPipeline, reqs, bytes, heap>>20)
		if got := h.handled.Load(); got != stuckConns {
			t.Fatalf("%d Fetches handled: connections read past a blocked response", got)
		}
		if limit := uint64(stuckConns*2*stuckFetchBytes + 8<<20); heap > limit {
			t.Fatalf("live heap +%d MiB > %d MiB", heap>>20, limit>>20)
		}
	})
	t.Run("negative control: budget off", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.IdleTimeout = 10 * time.Minute
		cfg.private.pipelineBytes = -1
		s, _, h, _ := slowReaders(t, cfg)
		waitFor(t, "every Fetch handled", func() bool { return h.handled.Load() == stuckConns*stuckPipeline })
		heap := liveHeap() - min(base, liveHeap())
		reqs, bytes := budgets(s)
		t.Logf("budget off: %d Fetches handled of %d sent; per connection %v requests, %v bytes held; live heap +%d MiB",
			h.handled.Load(), stuckConns*stuckPipeline, reqs, bytes, heap>>20)
		if limit := uint64(stuckConns * 6 * stuckFetchBytes); heap < limit {
			t.Fatalf("live heap +%d MiB < %d MiB: the control does not show the growth", heap>>20, limit>>20)
		}
	})
}

// A connection whose client stops reading is closed once a write has made
// no progress for connections.max.idle.ms, and what it held is freed.
func TestSlowReaderClosedAndReleased(t *testing.T) {
	base := liveHeap()
	cfg := DefaultConfig()
	cfg.IdleTimeout = 300 * time.Millisecond
	_, m, h, ncs := slowReaders(t, cfg)
	waitFor(t, "the stuck connections closed by the write timeout", func() bool {
		return testutil.ToFloat64(m.Connections) == 0
	})
	if got := testutil.ToFloat64(m.ConnectionsClosedOnError.WithLabelValues("write")); got != stuckConns {
		t.Fatalf("%v connections closed on a write error, want %d", got, stuckConns)
	}
	for _, nc := range ncs {
		// What the kernel buffered is still readable, then the close.
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, nc)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("client side not closed")
		}
	}
	heap := liveHeap() - min(base, liveHeap())
	t.Logf("%d Fetches handled; after the close live heap +%d KiB", h.handled.Load(), heap>>10)
	if heap > 4<<20 {
		t.Fatalf("live heap +%d MiB after the stuck connections closed", heap>>20)
	}
}
