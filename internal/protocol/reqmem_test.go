package protocol

import (
	"encoding/binary"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rssBytes reads VmRSS from /proc/self/status (0 where unavailable).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// stalledFrame is the start of a Produce frame declaring declared bytes,
// sent bytes of it: one buffer all connections send, so that the test's
// own memory does not grow with them.
func stalledFrame(declared, sent int) []byte {
	b := make([]byte, 4+sent)
	binary.BigEndian.PutUint32(b, uint32(declared))
	binary.BigEndian.PutUint16(b[4:], produceKey)
	binary.BigEndian.PutUint16(b[6:], 3)
	for i := 12; i < len(b); i++ {
		b[i] = byte(i)
	}
	return b
}

// stallFrame opens a connection that sends b (see stalledFrame) and
// stops.
func stallFrame(t *testing.T, addr string, b []byte) net.Conn {
	t.Helper()
	nc := dialFrom(t, "127.0.0.1", addr)
	go func() {
		// Past the cap the server stops reading: the write may not end.
		nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		nc.Write(b)
	}()
	return nc
}

// dropSpares lets the pool's spare lists drop the frames these tests
// returned to them (a class unused between two GCs is trimmed), so that
// later tests measuring the heap start from a clean one.
func dropSpares() {
	for range 4 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// settled waits until the request memory has not changed for a while.
func settled(t *testing.T, m *Metrics) float64 {
	t.Helper()
	last, since := -1.0, time.Now()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		v := testutil.ToFloat64(m.RequestMemory)
		if v != last {
			last, since = v, time.Now()
		} else if time.Since(since) > time.Second && v > 0 {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("request memory never settled (last %v)", last)
	return 0
}

// 16 connections each declare a 100 MiB Produce request, send 4 MiB of it
// and stall. With queued.max.request.bytes at 24 MiB they hold no more
// than 24 MiB by the gauge, and the process's RSS grows by less than
// twice that (the GC's headroom); once they are gone the memory is free
// and a request is served. Negative controls: unbounded, they hold over
// 64 MiB by the gauge and RSS grows by more than twice the cap; with the whole declared size allocated up front (as
// before), 4 such connections hold 400 MiB by the gauge.
func TestStalledFramesHoldTheirBytes(t *testing.T) {
	t.Cleanup(dropSpares)
	const (
		declared = 100 << 20
		sent     = 4 << 20
		limit    = 24 << 20
	)
	cases := []struct {
		name       string
		conns      int
		limit      int64
		prealloc   bool
		wantAtMost int64 // gauge
		wantAbove  int64
	}{
		{"bounded", 16, limit, false, limit, 0},
		{"unbounded", 16, -1, false, 0, 16 * sent},
		{"preallocated", 4, -1, true, 0, 4 * declared},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			frame := stalledFrame(declared, sent)
			runtime.GC()
			debug.FreeOSMemory()
			before := rssBytes()
			cfg := DefaultConfig()
			cfg.QueuedMaxRequestBytes = tc.limit
			cfg.private.preallocateFrames = tc.prealloc
			s, m, addr := startServer(t, cfg)
			var conns []net.Conn
			for range tc.conns {
				conns = append(conns, stallFrame(t, addr, frame))
			}
			var held float64
			if tc.wantAbove > 0 {
				waitFor(t, "the connections to hold their bytes", func() bool {
					return testutil.ToFloat64(m.RequestMemory) >= float64(tc.wantAbove)
				})
				held = settled(t, m)
			} else {
				held = settled(t, m)
			}
			grew := rssBytes() - before
			if raceEnabled {
				before = 0 // RSS is not checked: the race detector's shadow memory inflates it
			}
			t.Logf("%s: %d connections hold %.1f MiB (gauge); RSS grew %.1f MiB", tc.name, tc.conns, held/(1<<20), float64(grew)/(1<<20))
			if tc.wantAtMost > 0 {
				if held > float64(tc.wantAtMost) {
					t.Errorf("held %.0f bytes, over the cap %d", held, tc.wantAtMost)
				}
				// The heap may hold freed buffers until the next GC
				// (GOGC=100: up to as much again).
				if before > 0 && grew > 2*tc.wantAtMost {
					t.Errorf("RSS grew %d bytes, over twice the cap %d", grew, tc.wantAtMost)
				}
				if got := s.mem.inUse(); got > tc.wantAtMost {
					t.Errorf("reserved %d", got)
				}
			}
			if !tc.prealloc && tc.wantAbove > 0 && before > 0 && grew < 2*limit {
				t.Errorf("RSS grew %d bytes: the negative control must show more than twice the cap", grew)
			}
			if tc.wantAbove > 0 && held < float64(tc.wantAbove) {
				t.Errorf("held %.0f bytes, want over %d (the negative control must show the growth)", held, tc.wantAbove)
			}
			for _, c := range conns {
				c.Close()
			}
			waitFor(t, "the memory freed", func() bool { return testutil.ToFloat64(m.RequestMemory) == 0 })
			if !served(t, dialFrom(t, "127.0.0.1", addr)) {
				t.Fatal("not served after the stalled connections closed")
			}
		})
	}
}

// Two clients each send a whole 16 MiB frame at once under a 28 MiB cap
// (one such frame needs 24 MiB while its buffer grows):
// growing, both may come to wait for the other's bytes. The pool finds
// that every byte is held by waiting readers and the newest gives up (its
// connection is closed, as the client would see a broker closing under
// memory pressure); the other is read in full. No reader ever hangs.
func TestRequestMemoryDeadlockBroken(t *testing.T) {
	t.Cleanup(dropSpares)
	cfg := DefaultConfig()
	cfg.QueuedMaxRequestBytes = 28 << 20
	_, m, addr := startServer(t, cfg)
	// A Metadata request naming 512 topics of 32 KiB: 16 MiB.
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	for i := range 512 {
		name := strings.Repeat(string(rune('a'+i%26)), 32<<10-1)
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: &name})
	}
	big := requestFrame(1, req)
	var wg sync.WaitGroup
	results := make([]bool, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc := dialFrom(t, "127.0.0.1", addr)
			nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
			if _, err := nc.Write(big); err != nil {
				return
			}
			_, err := readCorr(t, nc)
			results[i] = err == nil
		}()
	}
	wg.Wait()
	if !results[0] && !results[1] {
		for _, r := range []string{"request memory", "short frame", "decode", "size", "read"} {
			t.Logf("%s: %v", r, testutil.ToFloat64(m.ConnectionsClosedOnError.WithLabelValues(r)))
		}
		t.Fatal("neither request was answered")
	}
	waitFor(t, "the memory freed", func() bool { return testutil.ToFloat64(m.RequestMemory) == 0 })
	t.Logf("answered: %v; closed for request memory: %v", results,
		testutil.ToFloat64(m.ConnectionsClosedOnError.WithLabelValues("request memory")))
}
