package protocol

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testHandler serves Metadata v0–v12 and ApiVersions; a Metadata request
// whose first topic is "panic" panics, "sleep-N" sleeps N ms first,
// "throttle-N" throttles the connection for N ms (Request.Throttle).
type testHandler struct{ handled atomic.Int32 }

func (h *testHandler) Handle(ctx context.Context, r *Request) kmsg.Response {
	h.handled.Add(1)
	switch req := r.Body.(type) {
	case *kmsg.MetadataRequest:
		if len(req.Topics) > 0 && req.Topics[0].Topic != nil {
			switch name := *req.Topics[0].Topic; {
			case name == "panic":
				panic("boom")
			case len(name) > 9 && name[:9] == "throttle-":
				d, _ := time.ParseDuration(name[9:] + "ms")
				r.Throttle(d)
			case len(name) > 6 && name[:6] == "sleep-":
				d, _ := time.ParseDuration(name[6:] + "ms")
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
			}
		}
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.ControllerID = r.CorrelationID
		return resp
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = h.ApiKeys()
		return resp
	}
	return nil
}

func (h *testHandler) VersionRange(key int16) (int16, int16, bool) {
	switch key {
	case 3:
		return 0, 12, true
	case 18:
		return 0, 4, true
	}
	return 0, 0, false
}

func (h *testHandler) ApiKeys() []kmsg.ApiVersionsResponseApiKey {
	return []kmsg.ApiVersionsResponseApiKey{{ApiKey: 3, MaxVersion: 12}, {ApiKey: 18, MaxVersion: 4}}
}

func startServer(t *testing.T, cfg Config) (*Server, *Metrics, string) {
	t.Helper()
	return serve(t, cfg, &testHandler{})
}

// serve runs a Server with handler h on a loopback port until the test
// (or subtest) ends.
func serve(t testing.TB, cfg Config, h Handler) (*Server, *Metrics, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(nil)
	s := NewServer(cfg, h, nil, m)
	done := make(chan struct{})
	go func() { s.Serve(ln); close(done) }()
	t.Cleanup(func() {
		s.Shutdown(context.Background())
		<-done
	})
	return s, m, ln.Addr().String()
}

func metadataFrame(corr int32, topic string) []byte {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &topic
	req.Topics = append(req.Topics, rt)
	return requestFrame(corr, req)
}

// requestFrame is req as a size-prefixed frame with a v1 request header
// (no client id): every test request here has a non-flexible version.
func requestFrame(corr int32, req kmsg.Request) []byte {
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt16(b, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, nil)
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func readCorr(t *testing.T, nc net.Conn) (int32, error) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return 0, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, body); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(body)), nil
}

// Pipelined requests whose handling takes different times are answered in
// the order they were sent.
func TestPipelinedResponsesInOrder(t *testing.T) {
	_, _, addr := startServer(t, DefaultConfig())
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var frames []byte
	delays := []string{"sleep-30", "t", "sleep-10", "t", "sleep-1", "t"}
	for i, d := range delays {
		frames = append(frames, metadataFrame(int32(i), d)...)
	}
	nc.Write(frames)
	for i := range delays {
		corr, err := readCorr(t, nc)
		if err != nil || corr != int32(i) {
			t.Fatalf("response %d: corr %d err %v", i, corr, err)
		}
	}
}

// Responses stay in order across bursts of pipelined requests with pauses
// between them (the queues between reader, processor and writer fill and
// drain).
func TestResponsesInOrderInBursts(t *testing.T) {
	_, _, addr := startServer(t, DefaultConfig())
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const n = 300
	go func() {
		for i := 0; i < n; {
			var frames []byte
			for burst := i % 7; burst >= 0 && i < n; burst-- {
				topic := "t"
				if i%5 == 0 {
					topic = "sleep-1"
				}
				frames = append(frames, metadataFrame(int32(i), topic)...)
				i++
			}
			if _, err := nc.Write(frames); err != nil {
				return
			}
			if i%3 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	for i := range n {
		corr, err := readCorr(t, nc)
		if err != nil || corr != int32(i) {
			t.Fatalf("response %d: corr %d err %v", i, corr, err)
		}
	}
}

// A handler panic closes that connection only, is counted, and the server
// keeps serving.
func TestPanicClosesOnlyThatConnection(t *testing.T) {
	_, m, addr := startServer(t, DefaultConfig())
	other, _ := net.Dial("tcp", addr)
	defer other.Close()
	nc, _ := net.Dial("tcp", addr)
	defer nc.Close()
	nc.Write(metadataFrame(1, "panic"))
	if _, err := readCorr(t, nc); err == nil {
		t.Fatal("got a response from a panicking handler")
	}
	if got := testutil.ToFloat64(m.Panics); got != 1 {
		t.Fatalf("panics metric %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.HandlerPanics.WithLabelValues("Metadata")); got != 1 {
		t.Fatalf("minibroker_handler_panics_total{api=Metadata} %v, want 1", got)
	}
	other.Write(metadataFrame(2, "fine"))
	if corr, err := readCorr(t, other); err != nil || corr != 2 {
		t.Fatalf("other connection: %d %v", corr, err)
	}
}

// max.connections=2: a third connection is accepted and held, unread, as
// Kafka's acceptor waits for a slot (ConnectionQuotas.waitForConnectionSlot)
// rather than refusing it; it is served once one of the two closes.
func TestMaxConnections(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxConnections = 2
	_, m, addr := startServer(t, cfg)
	var conns []net.Conn
	for i := 0; i < 2; i++ {
		nc, _ := net.Dial("tcp", addr)
		defer nc.Close()
		nc.Write(metadataFrame(int32(i), "x"))
		if _, err := readCorr(t, nc); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
	}
	third, _ := net.Dial("tcp", addr)
	defer third.Close()
	third.Write(metadataFrame(9, "x"))
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := third.Read(make([]byte, 1)); err == nil {
		t.Fatal("third connection served past max.connections=2")
	}
	if testutil.ToFloat64(m.ConnectionsRejected) != 0 {
		t.Fatal("a connection waiting for a slot was counted as rejected")
	}
	conns[0].Close()
	if corr, err := readCorr(t, third); err != nil || corr != 9 {
		t.Fatalf("waiting connection not served after a slot was freed: corr %d, %v", corr, err)
	}
	// A fourth waits again; Shutdown (the cleanup) does not wait for it.
	fourth, _ := net.Dial("tcp", addr)
	defer fourth.Close()
}

func TestIdleConnectionsClosed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IdleTimeout = 100 * time.Millisecond
	_, _, addr := startServer(t, cfg)
	nc, _ := net.Dial("tcp", addr)
	defer nc.Close()
	start := time.Now()
	if _, err := readCorr(t, nc); err == nil {
		t.Fatal("idle connection got data")
	}
	if time.Since(start) > 3*time.Second {
		t.Fatal("idle connection not closed in time")
	}
}

// Shutdown lets an in-flight request finish and its response be written.
func TestShutdownFinishesInFlight(t *testing.T) {
	s, _, addr := startServer(t, DefaultConfig())
	nc, _ := net.Dial("tcp", addr)
	defer nc.Close()
	nc.Write(metadataFrame(5, "sleep-200"))
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { s.Shutdown(context.Background()); close(done) }()
	if corr, err := readCorr(t, nc); err != nil || corr != 5 {
		t.Fatalf("in-flight response lost: %d %v", corr, err)
	}
	<-done
}
