package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/drill"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

func runDrill(t *testing.T, from, to, toAdmin string, d time.Duration, rate int) *drill.Report {
	t.Helper()
	return runDrillCfg(t, drill.Config{From: []string{from}, To: []string{to}, ToAdmin: toAdmin, Mirror: "from-a",
		Topics: []string{"canary"}, Duration: d, Rate: rate})
}

func runDrillCfg(t *testing.T, cfg drill.Config) *drill.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := drill.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rep.Plan)
	t.Logf("drill: acked A %d, B %d, A2 %d, lost at failover %v, lost on B %v, predicted %d, gaps %v, dups %d, ooo %d, RTO %d/%d ms, problems %v; plan %s",
		rep.AckedOnA, rep.AckedOnB, rep.AckedOnA2, rep.LostAtFailover, rep.LostOnB, rep.PredictedLoss, rep.Gaps, len(rep.Duplicates), len(rep.OutOfOrder),
		rep.RTOProduceMs, rep.RTOConsumeMs, rep.Problems, b)
	f, err := os.Create(filepath.Join(t.TempDir(), "drill.svg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := rep.WriteSVG(f); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestDrillActivePassive: a drill from A to its mirror B over the Kafka
// protocol and B's admin API. The plan, taken after the producer left A
// and the mirror caught up, predicts no loss; the failover then loses
// nothing, the group reads every record (on A, then on B), and produce
// and consume resume on B. The topic has 3 partitions: the canary writes
// to each in turn and the report has each one's measurement.
func TestDrillActivePassive(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("canary", 3))
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	b.Mirror("from-a", a.Addr()).Start("canary")
	rep := runDrill(t, a.Addr(), b.Addr(), b.HTTPAddr(), 3*time.Second, 20)
	if !rep.Passed || rep.PredictedLoss != 0 || len(rep.LostAtFailover) != 0 || len(rep.LostOnB) != 0 || len(rep.Gaps) != 0 {
		t.Fatalf("drill failed: %v", rep.Problems)
	}
	if rep.AckedOnA == 0 || rep.AckedOnB == 0 || rep.RTOProduceMs < 0 || rep.RTOConsumeMs < 0 {
		t.Fatalf("drill did not run both phases: %+v", rep)
	}
	if len(rep.Partitions) != 3 {
		t.Fatalf("per-partition report %+v, want 3 partitions", rep.Partitions)
	}
	for _, pr := range rep.Partitions {
		if pr.Acked < 2 || pr.LostAtFailover != 0 || pr.Gaps != 0 || pr.PredictedLost != 0 || pr.RPOMillis != 0 {
			t.Fatalf("partition %+v: want records on A and B, nothing lost, predicted or missed", pr)
		}
	}
	for _, st := range b.Mirror("from-a").Status().Partitions {
		if st.State != mirror.Stopped || st.BarrierOffset < 0 {
			t.Fatalf("B after the drill: %+v", st)
		}
	}
}

// TestDrillWithoutBarrierReportsSilentLoss is the negative control: the
// same drill against a B whose failover skips the MIRROR_PID_RESET
// barrier (the test seam). B's canary producer draws the producer id A's
// used, so B takes its first records for duplicates of A's, acknowledges
// them and stores none: a loss the plan did not predict. The drill sees
// acknowledged records missing from B's log and fails.
func TestDrillWithoutBarrierReportsSilentLoss(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("canary", 1))
	b := itest.StartBroker(t, itest.BrokerOptions{HTTP: true, Mirror: mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{NoBarrier: true})})
	if err := b.B.Mirrors().Create("from-a", []string{a.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := b.B.Mirrors().Start(context.Background(), "from-a", []string{"canary"}); err != nil {
		t.Fatal(err)
	}
	// 1 s at 4/s on A: A's producer id ends at sequence ≤ 4, all within the
	// five batches B's producer state remembers, so B's producer (same
	// id, sequences from 0) is answered DUPLICATE: acknowledged, not
	// stored. With more records on A, B answers OUT_OF_ORDER_SEQUENCE
	// instead and no produce succeeds; the drill fails either way.
	rep := runDrill(t, a.Addr(), b.B.Addr(), b.B.HTTPAddr(), 2*time.Second, 4)
	if rep.Passed || rep.PredictedLoss != 0 || len(rep.LostOnB) == 0 {
		t.Fatalf("the drill without the barrier passed or saw no loss on B: passed %v, lost on B %v, problems %v", rep.Passed, rep.LostOnB, rep.Problems)
	}
	if !strings.Contains(strings.Join(rep.Problems, ";"), "silent loss") {
		t.Fatalf("problems %v", rep.Problems)
	}
}

// TestDrillFailback: the drill with --failback. After the phase on B, A
// mirrors B (A's log is a prefix of B's: B's barrier and records follow
// A's records), the failback plan on A predicts no loss, A
// takes over again and the group reads every record: nothing acknowledged
// on A, B or A again is missing from A's log at the end.
func TestDrillFailback(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("canary", 1), minibrokertest.HTTP())
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	b.Mirror("from-a", a.Addr()).Start("canary")
	rep := runDrillCfg(t, drill.Config{From: []string{a.Addr()}, To: []string{b.Addr()}, ToAdmin: b.HTTPAddr(), Mirror: "from-a",
		Topics: []string{"canary"}, Duration: 3 * time.Second, Rate: 20, Failback: true, FromAdmin: a.HTTPAddr()})
	if !rep.Passed || rep.PredictedLoss != 0 || len(rep.LostAtFailover) != 0 || len(rep.LostOnB) != 0 || len(rep.Gaps) != 0 {
		t.Fatalf("failback drill failed: %v", rep.Problems)
	}
	if rep.AckedOnA == 0 || rep.AckedOnB == 0 || rep.AckedOnA2 == 0 || rep.FailbackPlan == nil || rep.FailbackPlan.AtRisk {
		t.Fatalf("failback drill did not run its three phases: A %d, B %d, A2 %d, plan %+v", rep.AckedOnA, rep.AckedOnB, rep.AckedOnA2, rep.FailbackPlan)
	}
	// Before the failback mirror started, its plan on A: A's log is a
	// prefix of B's, so the start cuts nothing.
	if sp := rep.FailbackStartPlan; sp == nil || sp.AtRisk || sp.DivergenceTruncate != 0 || sp.Partitions[0].DivergenceCut != int64(rep.AckedOnA) {
		t.Fatalf("failback start plan %+v, want nothing cut (at A's end, %d)", sp, rep.AckedOnA)
	}
	if st := a.Mirror("drill-failback").Status().Partitions[0]; st.State != mirror.Stopped || st.BarrierOffset < 0 {
		t.Fatalf("A after the failback: %+v", st)
	}
}

// TestDrillTransactional: the active-passive drill with a transactional
// canary (one committed transaction per record, read_committed group):
// the plan predicts no loss, nothing is lost, the group sees every record,
// and B's transactional producer (the same transactional id, on a
// cluster whose producer ids also start at 0) commits after the barrier.
func TestDrillTransactional(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("canary", 1))
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	b.Mirror("from-a", a.Addr()).Start("canary")
	rep := runDrillCfg(t, drill.Config{From: []string{a.Addr()}, To: []string{b.Addr()}, ToAdmin: b.HTTPAddr(), Mirror: "from-a",
		Topics: []string{"canary"}, Duration: 3 * time.Second, Rate: 20, Transactional: true})
	if !rep.Passed || rep.PredictedLoss != 0 || len(rep.LostAtFailover) != 0 || len(rep.LostOnB) != 0 || len(rep.Gaps) != 0 {
		t.Fatalf("transactional drill failed: %v", rep.Problems)
	}
	if rep.AckedOnA == 0 || rep.AckedOnB == 0 || rep.ProduceErrors != 0 {
		t.Fatalf("transactional drill: A %d, B %d, errors %d", rep.AckedOnA, rep.AckedOnB, rep.ProduceErrors)
	}
}

// TestDrillFanOut: B and C both mirror A; the drill fails A over to B.
// The plan on B predicts no loss and the drill loses nothing, while C,
// untouched by B's failover, still mirrors A and holds every record the
// drill acknowledged on A.
func TestDrillFanOut(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("canary", 1))
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	c := minibrokertest.Start(t)
	b.Mirror("from-a", a.Addr()).Start("canary")
	mc := c.Mirror("from-a", a.Addr()).Start("canary")
	rep := runDrill(t, a.Addr(), b.Addr(), b.HTTPAddr(), 3*time.Second, 20)
	if !rep.Passed || rep.PredictedLoss != 0 || len(rep.LostAtFailover) != 0 || len(rep.LostOnB) != 0 || len(rep.Gaps) != 0 {
		t.Fatalf("fan-out drill failed: %v", rep.Problems)
	}
	mc.WaitCaughtUp(itest.Timeout)
	if st := mc.Status().Partitions[0]; st.State != mirror.Mirroring {
		t.Fatalf("C after B's failover: %+v", st)
	}
	end := itest.LogEnd(a, "canary", 0)
	if end < int64(rep.AckedOnA) {
		t.Fatalf("A's log end %d below the %d records acknowledged on it", end, rep.AckedOnA)
	}
	itest.AssertIdentical(t, a, c, "canary", 0, end)
}

// TestDrillChain: A → B → C (C mirrors B). The drill fails A over to B
// with nothing lost; C, mirroring B, then holds B's log byte for byte:
// A's records, B's barrier and the records the drill wrote on B.
func TestDrillChain(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("canary", 1))
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	c := minibrokertest.Start(t)
	b.Mirror("from-a", a.Addr()).Start("canary")
	b.Mirror("from-a").WaitCaughtUp(itest.Timeout)
	mc := c.Mirror("from-b", b.Addr()).Start("canary")
	rep := runDrill(t, a.Addr(), b.Addr(), b.HTTPAddr(), 3*time.Second, 20)
	if !rep.Passed || rep.PredictedLoss != 0 || len(rep.LostAtFailover) != 0 || len(rep.LostOnB) != 0 || len(rep.Gaps) != 0 {
		t.Fatalf("chain drill failed: %v", rep.Problems)
	}
	mc.WaitCaughtUp(itest.Timeout)
	end := itest.LogEnd(b, "canary", 0)
	if end < int64(rep.AckedOnA+rep.AckedOnB+1) {
		t.Fatalf("B's log end %d below A's %d + barrier + B's %d records", end, rep.AckedOnA, rep.AckedOnB)
	}
	itest.AssertIdentical(t, b, c, "canary", 0, end)
	if got := itest.Barriers(t, c, "canary", 0); len(got) != 1 {
		t.Fatalf("C holds barriers at %v, want B's one", got)
	}
}

// TestDrillPredictsLossPastHeldLSO: a drill whose failover loses records,
// and whose plan says exactly which. While the canary writes to A (both
// partitions of the topic, in turn), another producer opens a transaction
// on A with one record in each partition and leaves it open through the
// failover. A's LSO is held there, and B mirrors read_committed: every
// canary record A acknowledges after it stays behind the LSO, never
// reaches B, and is lost when B takes over. The plan on B reads A's
// batches past B's end: it counts those canary records as lost (acknowledged
// at A), the open transaction's two as uncommitted, and takes the RPO from
// the oldest lost record's timestamp. The drill measures the same loss, in
// total and per partition, so it passes (the loss was predicted). In
// offsets the plan's missing count is two more (the open transaction's
// records): a prediction in offsets would not match.
func TestDrillPredictsLossPastHeldLSO(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("canary", 2))
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	b.Mirror("from-a", a.Addr()).Start("canary")
	done := holdLSOAfter(t, a, 10)
	rep := runDrillCfg(t, drill.Config{From: []string{a.Addr()}, To: []string{b.Addr()}, ToAdmin: b.HTTPAddr(), Mirror: "from-a",
		Topics: []string{"canary"}, Duration: 4 * time.Second, Rate: 20, Settle: time.Second})
	defer done()
	lost := int64(len(rep.LostAtFailover))
	pl := rep.Plan
	t.Logf("held LSO: lost %d, plan lost %d, uncommitted %d in %d, missing offsets %d, RPO plan %d ms measured %d ms; partitions %+v",
		lost, pl.LostRecords, pl.UncommittedRecords, pl.UncommittedTransactions, pl.MissingRecords, pl.RPOMillis, rep.RPOMillis, rep.Partitions)
	if lost == 0 || rep.PredictedUnit != "records" || rep.PredictedLoss != lost || pl.LostRecords != lost || !rep.Passed {
		t.Fatalf("lost %d, predicted %d %s (plan %d), passed %v %v", lost, rep.PredictedLoss, rep.PredictedUnit, pl.LostRecords, rep.Passed, rep.Problems)
	}
	if pl.UncommittedRecords != 2 || pl.UncommittedTransactions != 2 || pl.MissingRecords != lost+2 || pl.WouldTruncate != 0 {
		t.Fatalf("plan: uncommitted %d in %d, missing %d offsets, truncate %d; want 2 in 2 (one per partition), %d, 0",
			pl.UncommittedRecords, pl.UncommittedTransactions, pl.MissingRecords, pl.WouldTruncate, lost+2)
	}
	if len(rep.Partitions) != 2 {
		t.Fatalf("partitions %+v", rep.Partitions)
	}
	for _, pr := range rep.Partitions {
		if pr.LostAtFailover == 0 || int64(pr.LostAtFailover) != pr.PredictedLost || pr.RPOMillis <= 0 || pr.PlanRPOMillis <= 0 {
			t.Fatalf("partition %d: lost %d, predicted %d, RPO %d ms (plan %d ms)", pr.Partition, pr.LostAtFailover, pr.PredictedLost, pr.RPOMillis, pr.PlanRPOMillis)
		}
	}
	// The plan's oldest lost record is the first canary record acknowledged
	// after the transaction opened: its timestamp (set by the producer) is
	// at most its acknowledgement.
	firstLost := rep.LostAtFailover[0]
	for _, e := range rep.Timeline {
		if e.Kind == "acked" && e.Seq == firstLost {
			if d := e.AtMs - oldestLost(pl); d < 0 || d > 5000 {
				t.Fatalf("oldest lost timestamp %d vs the first lost record's acknowledgement %d", oldestLost(pl), e.AtMs)
			}
		}
	}
}

// holdLSOAfter opens a transaction on A's canary partitions 0 and 1 once
// they hold n records (the drill's canary writes them), which holds A's
// LSO there: what the canary writes after it is past the LSO, never
// mirrored. done waits for the transaction to be open and aborts it.
func holdLSOAfter(t *testing.T, a *minibrokertest.Cluster, n int64) (done func()) {
	txn := itest.MirrorTxnProducer(t, a.Addr(), "held")
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		for deadline := time.Now().Add(itest.Timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if itest.LogEnd(a, "canary", 0)+itest.LogEnd(a, "canary", 1) >= n {
				break
			}
		}
		if err := txn.BeginTransaction(); err != nil {
			t.Error(err)
			return
		}
		for p := int32(0); p < 2; p++ {
			if err := txn.ProduceSync(context.Background(), &kgo.Record{Topic: "canary", Partition: p, Value: []byte("held")}).FirstErr(); err != nil {
				t.Error(err)
			}
		}
	}()
	return func() {
		<-opened
		txn.EndTransaction(context.Background(), kgo.TryAbort)
	}
}

// TestDrillFailbackCutNeedsAllowTruncate: the held-LSO drill with
// --failback. A keeps the canary records B never got, so the failback's
// start would cut them from A: without AllowTruncate the drill stops
// before the start, saying how many and how to allow it, and A's logs are
// as they were; with it, the start cuts them (the failback start plan
// predicted them) and A ends holding B's log.
func TestDrillFailbackCutNeedsAllowTruncate(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow=%v", allow), func(t *testing.T) {
			t.Parallel()
			a := minibrokertest.Start(t, minibrokertest.Topic("canary", 2), minibrokertest.HTTP())
			b := minibrokertest.Start(t, minibrokertest.HTTP())
			b.Mirror("from-a", a.Addr()).Start("canary")
			done := holdLSOAfter(t, a, 10)
			cfg := drill.Config{From: []string{a.Addr()}, To: []string{b.Addr()}, ToAdmin: b.HTTPAddr(), Mirror: "from-a",
				Topics: []string{"canary"}, Duration: 4 * time.Second, Rate: 20, Settle: time.Second,
				Failback: true, FromAdmin: a.HTTPAddr(), AllowTruncate: allow}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if !allow {
				ends := []int64{itest.LogEnd(a, "canary", 0), itest.LogEnd(a, "canary", 1)}
				_, err := drill.Run(ctx, cfg)
				done()
				if err == nil || !strings.Contains(err.Error(), "--allow-truncate") || !strings.Contains(err.Error(), "would cut") {
					t.Fatalf("failback drill without --allow-truncate: %v, want a refusal before the start", err)
				}
				if after := []int64{itest.LogEnd(a, "canary", 0), itest.LogEnd(a, "canary", 1)}; after[0] < ends[0] || after[1] < ends[1] {
					t.Fatalf("A's logs were cut: %v → %v", ends, after)
				}
				t.Logf("refused: %v", err)
				return
			}
			rep := runDrillCfg(t, cfg)
			done()
			sp := rep.FailbackStartPlan
			if sp == nil || sp.DivergenceTruncate == 0 || rep.AckedOnA2 == 0 {
				t.Fatalf("failback start plan %+v, acked on A again %d: want a predicted cut and a third phase", sp, rep.AckedOnA2)
			}
		})
	}
}

func oldestLost(pl mirror.Plan) int64 {
	o := int64(-1)
	for _, p := range pl.Partitions {
		if p.OldestLostTimestamp >= 0 && (o < 0 || p.OldestLostTimestamp < o) {
			o = p.OldestLostTimestamp
		}
	}
	return o
}
