package mirror

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// The failover modes (mirror.failover.mode) on one scenario: at the
// source, two acknowledged records, then two transactions left open with
// an acknowledged non-transactional record after each:
//
//	0 plain-0  1 plain-1  2 t1-0 (T1, open)  3 late-0  4 t2-0 (T2, open)  5 late-1
//
// The source's LSO is 2, its high watermark 6.
//
// truncate-to-lso mirrors read_committed (0..1) and fails over with the
// barrier at 2: late-0 and late-1 are lost. abort-open-transactions
// mirrors read_uncommitted (0..5) and fails over with ABORT markers for
// T1 and T2 at 6 and 7 and the barrier at 8: late-0 and late-1 are kept,
// t1-0 and t2-0 are never read by a read_committed consumer.
type modeScenario struct {
	mode               mirror.FailoverMode
	mirroredEnd        int64    // the local log end once caught up
	barrier            int64    // the barrier's offset
	markers            []int64  // the ABORT markers' offsets
	kept               []string // what a read_committed consumer reads before the local writes
	lastMirrored, lost int64
	aborted            int64
}

var modeScenarios = []modeScenario{
	{mode: mirror.FailoverTruncateToLSO, mirroredEnd: 2, barrier: 2, kept: itest.Values("plain", 2), lastMirrored: 2},
	{mode: mirror.FailoverAbortOpenTxns, mirroredEnd: 6, barrier: 8, markers: []int64{6, 7},
		kept: itest.Concat(itest.Values("plain", 2), itest.Values("late", 2)), lastMirrored: 6, aborted: 2},
}

// openTxnSource fills a fresh source with the scenario; the returned
// function aborts its open transactions (at the end of the test).
func openTxnSource(t *testing.T, a itest.Node) (abort func()) {
	t.Helper()
	ctx := context.Background()
	plain := itest.IdempotentProducer(t, a.Addr())
	itest.ProduceSerially(t, plain, "ledger", 0, "plain", 2) // 0, 1
	t1 := itest.MirrorTxnProducer(t, a.Addr(), "t1")
	t2 := itest.MirrorTxnProducer(t, a.Addr(), "t2")
	open := func(cl *kgo.Client, v string) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	late := func(v string) {
		if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	open(t1, "t1-0") // 2
	late("late-0")   // 3
	open(t2, "t2-0") // 4
	late("late-1")   // 5
	if o := itest.MustPartition(t, a, "ledger", 0).Offsets(); o.LastStable != 2 || o.HighWatermark != 6 {
		t.Fatalf("source offsets %+v, want LSO 2 and high watermark 6", o)
	}
	return func() {
		t1.EndTransaction(ctx, kgo.TryAbort)
		t2.EndTransaction(ctx, kgo.TryAbort)
	}
}

// startModeMirror creates and starts mirror from-a on b in mode and waits
// until it holds what the mode fetches.
func startModeMirror(t *testing.T, a, b itest.Node, sc modeScenario) {
	t.Helper()
	if err := itest.MirrorOn(b).Create("from-a", []string{a.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := itest.MirrorOn(b).AlterSettings("from-a", map[string]string{mirror.SettingFailoverMode: string(sc.mode)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := itest.MirrorOn(b).Start(t.Context(), "from-a", []string{"ledger"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if p, ok := b.Broker().Partition("ledger", 0); ok && p.Offsets().LogEnd >= sc.mirroredEnd {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never mirrored up to %d", sc.mode, sc.mirroredEnd)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The fetch isolation holds: read_committed never passes the LSO.
	time.Sleep(200 * time.Millisecond)
	if end := itest.LogEnd(b, "ledger", 0); end != sc.mirroredEnd {
		t.Fatalf("%s: mirrored up to %d, want %d", sc.mode, end, sc.mirroredEnd)
	}
}

// abortMarkers lists the offsets and producer ids of the ABORT markers in
// [from, log end).
func abortMarkers(t *testing.T, n itest.Node, topic string, p int32, from int64) (offs []int64, pids []int64) {
	t.Helper()
	hs, bs := itest.BatchesOf(t, n, topic, p, from, itest.LogEnd(n, topic, p))
	for i := range hs {
		if !hs[i].IsControl() || !hs[i].IsTransactional() {
			continue
		}
		if c, err := batch.ReadControl(bs[i]); err == nil && c.Type == batch.ControlAbort {
			offs, pids = append(offs, hs[i].BaseOffset), append(pids, hs[i].ProducerID)
		}
	}
	return offs, pids
}

// checkModeFailover checks b after the failover of sc: STOPPED at the
// offsets the mode says, one barrier, the mode's markers, no transaction
// open, and what a read_committed consumer reads.
func checkModeFailover(t *testing.T, a, b itest.Node, sc modeScenario) {
	t.Helper()
	st, err := itest.MirrorOn(b).Describe("from-a")
	if err != nil {
		t.Fatal(err)
	}
	ps := st.Partitions[0]
	if ps.State != mirror.Stopped || ps.LastMirroredOffset != sc.lastMirrored || ps.BarrierOffset != sc.barrier ||
		ps.LostAtFailover != sc.lost || ps.AbortedAtFailover != sc.aborted {
		t.Fatalf("%s: after the failover %+v, want last mirrored %d, barrier %d, lost %d, aborted %d",
			sc.mode, ps, sc.lastMirrored, sc.barrier, sc.lost, sc.aborted)
	}
	if got := itest.Barriers(t, b, "ledger", 0); fmt.Sprint(got) != fmt.Sprint([]int64{sc.barrier}) {
		t.Fatalf("%s: barriers %v, want exactly one at %d", sc.mode, got, sc.barrier)
	}
	offs, pids := abortMarkers(t, b, "ledger", 0, 0)
	if !slices.Equal(offs, sc.markers) {
		t.Fatalf("%s: ABORT markers at %v, want %v", sc.mode, offs, sc.markers)
	}
	if len(pids) == 2 {
		// One marker per open transaction: T1's producer, then T2's.
		hs, _ := itest.BatchesOf(t, a, "ledger", 0, 2, 5)
		if pids[0] != hs[0].ProducerID || pids[1] != hs[2].ProducerID {
			t.Fatalf("%s: markers for producers %v, want T1's %d then T2's %d", sc.mode, pids, hs[0].ProducerID, hs[2].ProducerID)
		}
	}
	if len(offs) > 0 {
		// The markers are this node's history: a leader epoch above every
		// mirrored one (a failback's divergence search cuts them), the
		// barrier above theirs.
		hs, _ := itest.BatchesOf(t, b, "ledger", 0, 0, sc.barrier+1)
		var mirrored, markers int32
		for _, h := range hs {
			switch {
			case h.BaseOffset < sc.mirroredEnd:
				mirrored = max(mirrored, h.PartitionLeaderEpoch)
			case h.BaseOffset < sc.barrier:
				if markers != 0 && h.PartitionLeaderEpoch != markers {
					t.Fatalf("%s: markers in epochs %d and %d", sc.mode, markers, h.PartitionLeaderEpoch)
				}
				markers = h.PartitionLeaderEpoch
			case h.PartitionLeaderEpoch <= markers:
				t.Fatalf("%s: barrier in epoch %d, the markers' %d", sc.mode, h.PartitionLeaderEpoch, markers)
			}
		}
		if markers <= mirrored {
			t.Fatalf("%s: markers in epoch %d, mirrored batches up to %d", sc.mode, markers, mirrored)
		}
	}
	if o := itest.MustPartition(t, b, "ledger", 0).Offsets(); o.LastStable != o.HighWatermark {
		t.Fatalf("%s: a transaction still open after the failover: %+v", sc.mode, o)
	}
	// Below the markers the log is the source's, byte for byte.
	itest.AssertIdentical(t, a, b, "ledger", 0, sc.mirroredEnd)
	itest.AssertValues(t, b, "ledger", 0, sc.kept)
}

// TestMirrorFailoverModes: the same open-transaction scenario failed over
// in each mode; then a local producer (its id collides with the source's
// plain producer) writes after the barrier, and its records survive a
// kill of the broker.
func TestMirrorFailoverModes(t *testing.T) {
	t.Parallel()
	for _, sc := range modeScenarios {
		t.Run(string(sc.mode), func(t *testing.T) {
			a := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1))
			defer openTxnSource(t, a)()
			b := itest.StartBroker(t, itest.BrokerOptions{})
			startModeMirror(t, a, b, sc)
			if err := itest.MirrorOn(b).Stop("from-a", nil); err != nil {
				t.Fatal(err)
			}
			checkModeFailover(t, a, b, sc)
			itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "ledger", 0, "b", 3)
			b.CrashAndRestart(mirror.Options{})
			itest.AssertValues(t, b, "ledger", 0, itest.Concat(sc.kept, itest.Values("b", 3)))
		})
	}
}

// TestMirrorFailoverModesCrashAtEachStep is the crash matrix of STOPPING
// in both modes: a crash before every step (in abort-open-transactions
// before the first marker, between the two, and after both before the
// barrier) is resumed on restart and ends with exactly one barrier, the
// mode's markers written once, nothing kept lost, and the records a
// local producer had acknowledged after the failover still there after a
// second kill.
func TestMirrorFailoverModesCrashAtEachStep(t *testing.T) {
	t.Parallel()
	type point struct {
		step mirror.StopStep
		nth  int // crash at the nth call of the step (1-based)
	}
	common := []point{{mirror.StepStopFetcher, 1}, {mirror.StepTruncate, 1}, {mirror.StepClamp, 1},
		{mirror.StepBarrier, 1}, {mirror.StepStopped, 1}}
	for _, sc := range modeScenarios {
		points := common
		if sc.mode == mirror.FailoverAbortOpenTxns {
			points = append(slices.Clone(common), point{mirror.StepAbort, 1}, point{mirror.StepAbort, 2})
		}
		for _, pt := range points {
			t.Run(fmt.Sprintf("%s/%s-%d", sc.mode, pt.step, pt.nth), func(t *testing.T) {
				a := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1))
				defer openTxnSource(t, a)()
				calls := 0
				crashAt := mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{StopStep: func(s mirror.StopStep, _ string, _ int32) error {
					if s == pt.step {
						if calls++; calls == pt.nth {
							return itest.ErrCrash
						}
					}
					return nil
				}})
				b := itest.StartBroker(t, itest.BrokerOptions{Mirror: crashAt})
				startModeMirror(t, a, b, sc)
				if err := itest.MirrorOn(b).Stop("from-a", nil); err == nil {
					t.Fatal("stop: no simulated crash")
				}
				if pt.step == mirror.StepAbort && pt.nth == 2 {
					// The crash came between the markers: one is written.
					if offs, _ := abortMarkers(t, b, "ledger", 0, 0); len(offs) != 1 {
						t.Fatalf("markers before the crash: %v, want one", offs)
					}
				}
				b.CrashAndRestart(mirror.Options{})
				checkModeFailover(t, a, b, sc)
				itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "ledger", 0, "b", 3)
				b.CrashAndRestart(mirror.Options{})
				itest.AssertValues(t, b, "ledger", 0, itest.Concat(sc.kept, itest.Values("b", 3)))
			})
		}
	}
}

// skipAbortHooks switches off the ABORT markers of abort-open-transactions.
type skipAbortHooks struct{ itest.MirrorHooks }

func (skipAbortHooks) SkipAbortMarkers() bool { return true }

// TestMirrorAbortModeWithoutMarkers is the negative control: without the
// ABORT markers the barrier forgets the open transactions' producer
// state, and a read_committed consumer reads their records (t1-0, t2-0)
// as if they had committed.
func TestMirrorAbortModeWithoutMarkers(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1))
	defer openTxnSource(t, a)()
	b := itest.StartBroker(t, itest.BrokerOptions{Mirror: mirror.WithTestHooks(mirror.Options{}, skipAbortHooks{})})
	sc := modeScenarios[1]
	startModeMirror(t, a, b, sc)
	if err := itest.MirrorOn(b).Stop("from-a", nil); err != nil {
		t.Fatal(err)
	}
	if offs, _ := abortMarkers(t, b, "ledger", 0, 0); len(offs) != 0 {
		t.Fatalf("markers %v written with the rule off", offs)
	}
	got := itest.ReadValues(t, b.Addr(), "ledger", 0, 0)
	want := []string{"plain-0", "plain-1", "t1-0", "late-0", "t2-0", "late-1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed without the markers read %v, want the open transactions' records too: %v", got, want)
	}
}
