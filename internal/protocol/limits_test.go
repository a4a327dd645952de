package protocol

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dialFrom connects to addr from a given loopback source address.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// served reports whether a Metadata request on nc is answered.
func served(t *testing.T, nc net.Conn) bool {
	t.Helper()
	nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(metadataFrame(7, "x")); err != nil {
		return false
	}
	corr, err := readCorr(t, nc)
	return err == nil && corr == 7
}

// closedByServer reports whether the server closed nc (EOF or reset)
// within a generous deadline, without nc having sent anything.
func closedByServer(nc net.Conn) bool {
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := nc.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// max.connections.per.ip=2: two connections from 127.0.0.1 are served,
// a third is closed at once without being read (as Kafka's acceptor
// does) and counted; 127.0.0.2 is still served; closing one frees its
// slot. 127.0.0.3 has an override of 3.
func TestMaxConnectionsPerIP(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxConnectionsPerIP = 2
	cfg.MaxConnectionsPerIPOverrides = map[string]int{"127.0.0.3": 3}
	_, m, addr := startServer(t, cfg)

	first := dialFrom(t, "127.0.0.1", addr)
	second := dialFrom(t, "127.0.0.1", addr)
	if !served(t, first) || !served(t, second) {
		t.Fatal("connections within the limit not served")
	}
	third := dialFrom(t, "127.0.0.1", addr)
	if !closedByServer(third) {
		t.Fatal("third connection from 127.0.0.1 not closed")
	}
	if got := testutil.ToFloat64(m.ConnectionsRejected); got != 1 {
		t.Fatalf("minibroker_connections_rejected_total %v, want 1", got)
	}
	if other := dialFrom(t, "127.0.0.2", addr); !served(t, other) {
		t.Fatal("127.0.0.2 refused because 127.0.0.1 is at its limit")
	}
	for i := range 3 {
		if nc := dialFrom(t, "127.0.0.3", addr); !served(t, nc) {
			t.Fatalf("127.0.0.3 connection %d refused under its override of 3", i+1)
		}
	}
	if !closedByServer(dialFrom(t, "127.0.0.3", addr)) {
		t.Fatal("fourth connection from 127.0.0.3 not closed")
	}
	if got := testutil.ToFloat64(m.ConnectionsRejected); got != 2 {
		t.Fatalf("minibroker_connections_rejected_total %v, want 2", got)
	}

	first.Close()
	waitFor(t, "the slot freed by a close", func() bool {
		nc := dialFrom(t, "127.0.0.1", addr)
		ok := served(t, nc)
		nc.Close()
		return ok
	})
	if !served(t, second) {
		t.Fatal("second connection lost")
	}
}

// Kafka's max.connections.per.ip=0 with overrides admits only the
// overridden addresses.
func TestNoConnectionsExceptOverrides(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxConnectionsPerIP = NoConnections
	cfg.MaxConnectionsPerIPOverrides = map[string]int{"127.0.0.2": 1}
	_, _, addr := startServer(t, cfg)
	if !closedByServer(dialFrom(t, "127.0.0.1", addr)) {
		t.Fatal("127.0.0.1 admitted without an override")
	}
	if !served(t, dialFrom(t, "127.0.0.2", addr)) {
		t.Fatal("overridden 127.0.0.2 refused")
	}
}

// A half-open connection — part of a request sent, then silence — is
// closed after connections.max.idle.ms, as an idle one is.
func TestHalfOpenConnectionsClosed(t *testing.T) {
	full := metadataFrame(1, "half-open")
	cases := []struct {
		name, reason string
		sent         []byte
	}{
		{"two bytes of the size", "short frame", full[:2]},
		{"size only", "short frame", full[:4]},
		{"size and half the body", "short frame", full[:4+(len(full)-4)/2]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.IdleTimeout = 200 * time.Millisecond
			_, m, addr := startServer(t, cfg)
			nc := dialFrom(t, "127.0.0.1", addr)
			if _, err := nc.Write(tc.sent); err != nil {
				t.Fatal(err)
			}
			if !closedByServer(nc) {
				t.Fatal("half-open connection not closed")
			}
			waitFor(t, "the close counted", func() bool {
				return testutil.ToFloat64(m.ConnectionsClosedOnError.WithLabelValues(tc.reason)) == 1
			})
		})
	}
}

// gateHandler blocks every Metadata request until open is closed.
type gateHandler struct {
	testHandler
	open      chan struct{}
	inHandler atomic.Int32
}

func (h *gateHandler) Handle(ctx context.Context, r *Request) kmsg.Response {
	h.inHandler.Add(1)
	defer h.inHandler.Add(-1)
	select {
	case <-h.open:
	case <-ctx.Done():
	}
	return h.testHandler.Handle(ctx, r)
}

// queued.max.requests=4 with 20 connections pipelining 8 requests each
// into handlers that block: 20 requests are being handled (one per
// connection, in order: a connection's first request never waits for a
// slot), exactly 4 wait in the queue behind them, the others wait for a
// slot, and the goroutines are the same 3 per connection however many
// requests are sent. Then a flood of 50 connections × 200 requests keeps
// the goroutine count within the same per-connection constant.
func TestQueuedMaxRequestsBoundsWorkNotGoroutines(t *testing.T) {
	const conns, pipelined, queued = 20, 8, 4
	before := runtime.NumGoroutine()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &gateHandler{open: make(chan struct{})}
	m := NewMetrics(nil)
	cfg := DefaultConfig()
	cfg.QueuedMaxRequests = queued
	s := NewServer(cfg, h, nil, m)
	served := make(chan struct{})
	go func() { s.Serve(ln); close(served) }()
	defer func() { s.Shutdown(context.Background()); <-served }()
	addr := ln.Addr().String()

	var ncs []net.Conn
	for range conns {
		nc := dialFrom(t, "127.0.0.1", addr)
		var frames []byte
		for i := range pipelined {
			frames = append(frames, metadataFrame(int32(i), "x")...)
		}
		if _, err := nc.Write(frames); err != nil {
			t.Fatal(err)
		}
		ncs = append(ncs, nc)
	}
	waitFor(t, "a request in every connection's handler and a full queue", func() bool {
		return h.inHandler.Load() == conns && testutil.ToFloat64(m.RequestQueue) == queued
	})
	perConn := 3 // reader, processor, writer
	during := runtime.NumGoroutine()
	t.Logf("%d connections, %d requests sent: %d in handlers, %v queued, goroutines %d → %d",
		conns, conns*pipelined, h.inHandler.Load(), testutil.ToFloat64(m.RequestQueue), before, during)
	if during > before+1+perConn*conns+4 {
		t.Fatalf("goroutines %d → %d: more than %d per connection", before, during, perConn)
	}
	close(h.open)
	for _, nc := range ncs {
		for i := range pipelined {
			if corr, err := readCorr(t, nc); err != nil || corr != int32(i) {
				t.Fatalf("response %d: corr %d err %v", i, corr, err)
			}
		}
		nc.Close()
	}

	// A flood: 50 connections × 200 pipelined requests, goroutines sampled.
	const floodConns, floodRequests = 50, 200
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			peak.Store(max(peak.Load(), int64(runtime.NumGoroutine())))
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var clients sync.WaitGroup
	for range floodConns {
		clients.Add(1)
		go func() {
			defer clients.Done()
			nc := dialFrom(t, "127.0.0.1", addr)
			defer nc.Close()
			var frames []byte
			for i := range floodRequests {
				frames = append(frames, metadataFrame(int32(i), "x")...)
			}
			go nc.Write(frames) // written while responses are read
			for i := range floodRequests {
				if corr, err := readCorr(t, nc); err != nil || corr != int32(i) {
					t.Errorf("flood response %d: corr %d err %v", i, corr, err)
					return
				}
			}
		}()
	}
	clients.Wait()
	close(stop)
	sampler.Wait()
	// Each client is 2 goroutines here (reader and writer of the test).
	limit := int64(before + 2 + (perConn+2)*floodConns + 8)
	t.Logf("flood of %d requests on %d connections: peak goroutines %d (limit %d)", floodConns*floodRequests, floodConns, peak.Load(), limit)
	if peak.Load() > limit {
		t.Fatalf("peak goroutines %d > %d", peak.Load(), limit)
	}
	if got := testutil.ToFloat64(m.RequestQueue); got != 0 {
		t.Fatalf("queue gauge %v after the flood", got)
	}
}
