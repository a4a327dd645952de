package mirror

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorRestartAfterFailoverKeepsCommonLog: B
// mirrors 2,000 records from A and fails over (barrier at 2000, then 5
// records of its own); A writes 3 more. Starting the mirror again from A,
// B asks A for the end of the barrier's epoch, which A never had
// ("unknown"), so it walks back to the largest epoch both know (A's only
// epoch) and cuts at 2000: the barrier and B's own records go, 0..1999
// stay. While the mirror restarts (B fetches in 16 KiB steps so a re-copy
// would take many fetches), ListOffsets on B never shows the log start
// leave 0 nor the end drop below 2000, and a slow consumer reading B from
// 0 never goes back. Before the fix B truncated its whole log to 0 and
// copied it again.
func TestMirrorRestartAfterFailoverKeepsCommonLog(t *testing.T) {
	t.Parallel()
	const n = restartRecords
	minEnd, maxStart, atRestart, consumed, cutTo := restartAfterFailover(t, nil)
	if cutTo != n {
		t.Fatalf("PREPARING cut B's log to %d, want %d (the end of the common log)", cutTo, n)
	}
	if maxStart != 0 || minEnd < n {
		t.Fatalf("during the restart B's log start reached %d and its end fell to %d (want 0 and ≥ %d)", maxStart, minEnd, n)
	}
	if atRestart >= n {
		t.Fatalf("the slow consumer was at %d, not inside 0..%d, when the mirror restarted", atRestart, n-1)
	}
	for i, r := range consumed {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("a-%d", i) {
			t.Fatalf("slow consumer's record %d is offset %d %q: it went back after the log shrank", i, r.Offset, r.Value)
		}
	}
}

// TestMirrorRestartWithoutEpochWalkBackCutsWholeLog is the negative
// control of TestMirrorRestartAfterFailoverKeepsCommonLog: the same
// scenario with PREPARING's walk back through earlier leader epochs
// switched off (mirror.TestHooks.SkipEpochWalkBack). A does not know B's barrier epoch, so B cuts its whole log:
// ListOffsets sees B's end fall to 0 during the restart. The end state is
// still identical to A (the log is copied again).
func TestMirrorRestartWithoutEpochWalkBackCutsWholeLog(t *testing.T) {
	t.Parallel()
	minEnd, maxStart, _, consumed, cutTo := restartAfterFailover(t, itest.MirrorHooks{NoEpochWalkBack: true})
	t.Logf("without the walk back: B's log cut to %d; its end fell to %d, its start reached %d; the slow consumer read %d records", cutTo, minEnd, maxStart, len(consumed))
	// The cut is read from the mirror's describe (what PREPARING last
	// cut), which cannot miss it: the copy again follows the cut at once,
	// so ListOffsets may never see B's end below the common log.
	if cutTo >= restartRecords {
		t.Fatalf("without the walk back PREPARING cut B's log to %d, want below %d (the whole log cut)", cutTo, restartRecords)
	}
}

const restartRecords = 2000

// restartAfterFailover runs the scenario above with the mirror's test
// hooks (nil: none) and returns, as watched on B while the mirror
// restarted, the smallest log end and largest log start ListOffsets
// answered and the records a slow consumer from 0 read, and where
// PREPARING cut B's log (the mirror's describe). It checks that B ends
// identical to A.
func restartAfterFailover(t *testing.T, hooks mirror.TestHooks) (minEnd, maxStart, atRestart int64, consumed []*kgo.Record, cutTo int64) {
	const n = restartRecords
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	b := itest.StartBroker(t, itest.BrokerOptions{Mirror: mirror.WithTestHooks(mirror.Options{FetchMaxBytes: 16 << 10}, hooks)})
	pa := itest.IdempotentProducer(t, a.Addr())
	for i := 0; i < n; i += 100 {
		var recs []*kgo.Record
		for j := i; j < i+100; j++ {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: 0, Value: fmt.Appendf(nil, "a-%d", j)})
		}
		if err := pa.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	m := itest.MirrorOn(b)
	if err := m.Create("from-a", []string{a.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context(), "from-a", []string{"orders"}); err != nil {
		t.Fatal(err)
	}
	itest.WaitMirrored(t, a, b, "orders", 1)
	if err := m.Stop("from-a", nil); err != nil {
		t.Fatal(err)
	}
	if got := itest.Barriers(t, b, "orders", 0); fmt.Sprint(got) != fmt.Sprint([]int64{n}) {
		t.Fatalf("barriers %v, want [%d]", got, n)
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "orders", 0, "b", 5) // n+1..n+5
	itest.ProduceSerially(t, pa, "orders", 0, "late", 3)                                 // n..n+2 on A

	// Watch B while the mirror restarts: ListOffsets, and a slow consumer
	// from 0 that would reset (go back) if the log shrank under it.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	minEnd, maxStart = int64(1<<62), 0
	adm := kadm.NewClient(itest.NewClient(t, b.Addr()))
	wg.Add(2)
	go func() {
		defer wg.Done()
		for watchCtx.Err() == nil {
			starts, err1 := adm.ListStartOffsets(watchCtx, "orders")
			ends, err2 := adm.ListEndOffsets(watchCtx, "orders")
			if err1 == nil && err2 == nil {
				s, _ := starts.Lookup("orders", 0)
				e, _ := ends.Lookup("orders", 0)
				if s.Err == nil && e.Err == nil {
					mu.Lock()
					maxStart, minEnd = max(maxStart, s.Offset), min(minEnd, e.Offset)
					mu.Unlock()
				}
			}
		}
	}()
	slow := itest.NewClient(t, b.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().At(0)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond),
		kgo.FetchMaxPartitionBytes(1024), kgo.FetchMaxBytes(1024))
	go func() {
		defer wg.Done()
		for watchCtx.Err() == nil {
			fs := slow.PollFetches(watchCtx)
			mu.Lock()
			consumed = append(consumed, fs.Records()...)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	// The watchers have seen B, and the slow consumer is inside the
	// common log, before the restart.
	for deadline := time.Now().Add(itest.Timeout); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		ready := len(consumed) > 0 && minEnd < 1<<62
		if ready {
			atRestart = consumed[len(consumed)-1].Offset
		}
		mu.Unlock()
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watchers never saw B before the restart")
		}
	}

	if _, err := m.StartWith(t.Context(), "from-a", []string{"orders"}, mirror.StartOptions{AllowTruncate: true}); err != nil {
		t.Fatal(err)
	}
	// B's end before the restart (n+6) is past A's (n+3): wait for the
	// cut and A's late records, not only for B's end to pass A's LSO.
	for deadline := time.Now().Add(itest.Timeout); ; time.Sleep(10 * time.Millisecond) {
		st, _ := m.Describe("from-a")
		if st.Partitions[0].State == mirror.Mirroring && itest.LogEnd(b, "orders", 0) == n+3 {
			if tr := st.Partitions[0].Truncated; tr != nil {
				cutTo = tr.TruncateTo
			} else {
				t.Fatalf("the restarted mirror cut nothing: %+v", st.Partitions[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted mirror never caught up: %+v", st.Partitions[0])
		}
	}
	stopWatch()
	wg.Wait()

	itest.AssertIdentical(t, a, b, "orders", 0, itest.LogEnd(a, "orders", 0))
	if got, want := itest.LogEnd(b, "orders", 0), int64(n+3); got != want {
		t.Fatalf("B ends at %d, want %d", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	return minEnd, maxStart, atRestart, consumed, cutTo
}
