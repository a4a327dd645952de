package protocol

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestThrottleMutesConnection: a request the handler throttles for 300 ms
// is answered at once, and the connection then reads and serves nothing
// for 300 ms (KIP-219): a request pipelined behind it and one sent after
// its answer both wait; another connection does not. Negative control:
// with the mute off (noThrottleMute) they are answered at once.
func TestThrottleMutesConnection(t *testing.T) {
	const throttle = 300 * time.Millisecond
	for _, off := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.private.noThrottleMute = off
		_, _, addr := startServer(t, cfg)
		dial := func() net.Conn {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			return nc
		}
		api := requestFrame(2, kmsg.NewPtrApiVersionsRequest())
		// Pipelined: the second request was read before the throttle.
		nc := dial()
		start := time.Now()
		nc.Write(append(metadataFrame(1, "throttle-300"), api...))
		if c, err := readCorr(t, nc); err != nil || c != 1 {
			t.Fatalf("first answer: %d %v", c, err)
		}
		first := time.Since(start)
		if c, err := readCorr(t, nc); err != nil || c != 2 {
			t.Fatalf("second answer: %d %v", c, err)
		}
		pipelined := time.Since(start)
		// Sent after the answer: the connection is not read meanwhile.
		nc2 := dial()
		start = time.Now()
		nc2.Write(metadataFrame(1, "throttle-300"))
		readCorr(t, nc2)
		nc2.Write(api)
		readCorr(t, nc2)
		after := time.Since(start)
		// Another connection is not muted.
		nc3 := dial()
		start = time.Now()
		nc3.Write(api)
		readCorr(t, nc3)
		other := time.Since(start)
		t.Logf("mute off=%v: throttled answer %v, pipelined next %v, next sent after %v, other connection %v", off, first, pipelined, after, other)
		if first > throttle/2 || other > throttle/2 {
			t.Fatalf("the throttled answer (%v) or another connection (%v) waited", first, other)
		}
		if off {
			if pipelined >= throttle || after >= throttle {
				t.Fatalf("negative control: unmuted requests waited %v, %v", pipelined, after)
			}
			continue
		}
		if pipelined < throttle-20*time.Millisecond || after < throttle-20*time.Millisecond {
			t.Fatalf("requests after a 300 ms throttle answered after %v and %v", pipelined, after)
		}
	}
}
