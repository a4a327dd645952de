package share

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/share"
	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A crash (the broker's Kill: no flush, no clean shutdown) right after
// acknowledgements were answered: after the restart no acknowledged
// record is delivered again, and every record acquired but not
// acknowledged is delivered again (nothing lost), at a raised delivery
// count. Negative control (the share hook NoStore: acknowledgements
// answered but not written): the acknowledged records come back.
func TestShareGroupCrashKeepsAcks(t *testing.T) {
	t.Run("durable", func(t *testing.T) { shareCrash(t, true) })
	t.Run("no-store", func(t *testing.T) { shareCrash(t, false) })
}

func shareCrash(t *testing.T, durable bool) {
	const n = 100
	c := itest.ShareBroker(t, "sc", share.TestHooks{NoStore: !durable}, nil)
	itest.SetShareEarliest(t, c.Addr(), "scg")
	itest.GroupsProduce(t, c.Addr(), "sc", "v", n)
	tp, _ := c.Broker().Topic("sc")

	a := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, c.Addr()), Group: "scg", Member: "member-a", Topic: tp.ID}
	a.Join()
	got := a.Fetch(60) // 0..59 acquired
	if len(got) != 60 {
		t.Fatalf("acquired %d, want 60", len(got))
	}
	a.Ack(0, 29, 1)  // accepted
	a.Ack(30, 39, 3) // rejected
	// 40..59 stay acquired, unacknowledged.
	a.Cl.Close()
	c.CrashAndRestart(mirror.Options{})

	b := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, c.Addr()), Group: "scg", Member: "member-b", Topic: tp.ID}
	b.Join()
	seen := map[int64]int16{}
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < n-40 && time.Now().Before(deadline) || !durable && len(seen) < n && time.Now().Before(deadline) {
		for o, dc := range b.Fetch(500) {
			seen[o] = dc
			b.Ack(o, o, 1)
		}
	}
	again := 0
	for o := int64(0); o < 40; o++ {
		if _, ok := seen[o]; ok {
			again++
		}
	}
	t.Logf("acknowledged before the crash and delivered again: %d of 40", again)
	if !durable {
		if again == 0 {
			t.Fatal("no store: no acknowledged record came back (the control shows nothing)")
		}
		return
	}
	if again > 0 {
		t.Errorf("%d acknowledged records delivered again after the crash", again)
	}
	for o := int64(40); o < n; o++ {
		dc, ok := seen[o]
		switch {
		case !ok:
			t.Errorf("offset %d lost after the crash", o)
		case o < 60 && dc != 2:
			t.Errorf("offset %d (acquired before the crash) delivered at count %d, want 2", o, dc)
		}
	}
	if start := itest.DescribeShareStart(t, c.Addr(), "scg", "sc"); start != n {
		t.Errorf("share partition start offset %d, want %d", start, n)
	}
}

// kill -9 of the built binary mid-run under three kgo share consumers
// that accept every record and confirm it (FlushAcks): after the restart
// no record confirmed before the kill is delivered again, and every
// record is delivered (nothing acquired but unacknowledged is lost) and
// the share partition's start offset reaches the log end (every record
// acknowledged).
func TestShareGroupBinaryKill9(t *testing.T) {
	const topic, group, n = "sk", "skg", 3000
	dir := t.TempDir()
	listen := fmt.Sprintf("127.0.0.1:%d", itest.FreePort(t))
	args := []string{"--listen", listen, "--set", "group.share.heartbeat.interval.ms=500",
		"--set", "group.share.record.lock.duration.ms=3000"}
	p := itest.StartBinary(t, dir, args...)
	adm := itest.NewClient(t, p.Addr)
	cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
	itest.CreateTopic(t, cctx, adm, topic, 1)
	ccancel()
	adm.Close()
	itest.SetShareEarliest(t, p.Addr, group)
	itest.GroupsProduce(t, p.Addr, topic, "v", n)

	var (
		mu        sync.Mutex
		killing   bool
		restarted bool
		confirmed = map[int]bool{} // confirmed before the kill
		after     = map[int]int{}  // deliveries after the restart
		delivered = map[int]bool{}
		finished  = map[int]bool{} // confirmed at any time
	)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		cl := newShareConsumer(t, listen, group, topic, kgo.ShareMaxRecords(50))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for {
				select {
				case <-done:
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				recs := cl.PollRecords(pctx, 100).Records()
				pcancel()
				var vs []int
				for _, r := range recs {
					v, _ := strconv.Atoi(strings.TrimPrefix(string(r.Value), "v-"))
					vs = append(vs, v)
					r.Ack(kgo.AckAccept)
				}
				mu.Lock()
				for _, v := range vs {
					delivered[v] = true
					if restarted {
						after[v]++
					}
				}
				mu.Unlock()
				if len(vs) == 0 {
					continue
				}
				fctx, fcancel := context.WithTimeout(ctx, 3*time.Second)
				err := cl.FlushAcks(fctx)
				fcancel()
				if err != nil {
					continue
				}
				mu.Lock()
				for _, v := range vs {
					if !killing {
						confirmed[v] = true
					}
					if restarted {
						finished[v] = true
					}
				}
				mu.Unlock()
			}
		}()
	}
	itest.WaitFor(t, "a third of the records confirmed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(confirmed) >= n/3
	})
	mu.Lock()
	killing = true
	mu.Unlock()
	p.Cmd.Process.Kill() // SIGKILL
	<-p.Exited
	mu.Lock()
	before := len(confirmed)
	restarted = true
	mu.Unlock()
	itest.StartBinary(t, dir, args...)
	// Done when the broker has every record finished (acknowledged: an
	// acknowledgement in flight at the kill may or may not have been
	// stored, so the clients cannot tell) and every record was delivered.
	for {
		mu.Lock()
		all := len(delivered) == n
		mu.Unlock()
		if all && itest.DescribeShareStart(t, listen, group, topic) == n {
			break
		}
		if ctx.Err() != nil {
			mu.Lock()
			t.Fatalf("delivered %d of %d, confirmed %d before and %d after the kill", len(delivered), n, len(confirmed), len(finished))
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	again := 0
	for v := range after {
		if confirmed[v] {
			again++
			if again <= 5 {
				t.Errorf("record %d confirmed before the kill delivered again after it", v)
			}
		}
	}
	t.Logf("confirmed before the kill %d, delivered after the restart %d, confirmed ones again %d", before, len(after), again)
}
