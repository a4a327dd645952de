package tools

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/internal/drill"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestDrillFailoverModesSideBySide runs the held-LSO drill (a transaction
// opened at A on both canary partitions after 10 canary records and left
// open through the failover) once per failover mode, and checks that the
// plan predicts both modes' loss and the drill measures the mirror's:
//
//   - truncate-to-lso: B mirrors read_committed, so every canary record A
//     acknowledges after the transaction opened stays behind A's LSO and
//     is lost; the plan predicted exactly that many, and that
//     abort-open-transactions (on the log read_uncommitted would hold)
//     would lose none and abort the 2 open transactions.
//   - abort-open-transactions: B mirrors read_uncommitted, has every
//     canary record, aborts the 2 transactions at the failover and loses
//     nothing; the plan predicted that, and that truncate-to-lso would cut
//     and lose the canary records past the LSO.
func TestDrillFailoverModesSideBySide(t *testing.T) {
	t.Parallel()
	reports := map[mirror.FailoverMode]*drill.Report{}
	for _, mode := range []mirror.FailoverMode{mirror.FailoverTruncateToLSO, mirror.FailoverAbortOpenTxns} {
		a := minibrokertest.Start(t, minibrokertest.Topic("canary", 2))
		b := minibrokertest.Start(t, minibrokertest.HTTP())
		m := b.Mirror("from-a", a.Addr())
		if err := itest.MirrorOn(b).AlterSettings("from-a", map[string]string{mirror.SettingFailoverMode: string(mode)}, nil); err != nil {
			t.Fatal(err)
		}
		m.Start("canary")
		done := holdLSOAfter(t, a, 10)
		rep := runDrillCfg(t, drill.Config{From: []string{a.Addr()}, To: []string{b.Addr()}, ToAdmin: b.HTTPAddr(), Mirror: "from-a",
			Topics: []string{"canary"}, Duration: 4 * time.Second, Rate: 20, Settle: 2 * time.Second})
		done()
		reports[mode] = rep
		var aborted int64
		for _, ps := range m.Status().Partitions {
			aborted += ps.AbortedAtFailover
		}
		if mode == mirror.FailoverAbortOpenTxns && aborted != 2 {
			t.Fatalf("%s: %d transactions aborted at the failover, want 2 (one a partition)", mode, aborted)
		}
		if mode == mirror.FailoverTruncateToLSO && aborted != 0 {
			t.Fatalf("%s: %d transactions aborted", mode, aborted)
		}
	}
	var side bytes.Buffer
	for _, mode := range []mirror.FailoverMode{mirror.FailoverTruncateToLSO, mirror.FailoverAbortOpenTxns} {
		rep := reports[mode]
		fmt.Fprintf(&side, "\n%s: measured lost %d, predicted %d %s", mode, len(rep.LostAtFailover), rep.PredictedLoss, rep.PredictedUnit)
		for _, ml := range rep.Plan.Modes {
			fmt.Fprintf(&side, "\n  plan %s (%s): truncate %d, abort %d txns, lost %d, uncommitted %d, RPO %d ms",
				ml.Mode, ml.Basis, ml.Truncate, ml.AbortTransactions, ml.LostRecords, ml.UncommittedRecords, ml.RPOMillis)
		}
	}
	t.Logf("the same held-LSO drill in each failover mode:%s", side.String())

	tr, ab := reports[mirror.FailoverTruncateToLSO], reports[mirror.FailoverAbortOpenTxns]
	modes := func(rep *drill.Report) (mirror.ModeLoss, mirror.ModeLoss) {
		if len(rep.Plan.Modes) != 2 {
			t.Fatalf("plan modes %+v", rep.Plan.Modes)
		}
		return rep.Plan.Modes[0], rep.Plan.Modes[1]
	}
	// truncate-to-lso: a loss, predicted exactly; the other mode predicted
	// to lose nothing and abort the two transactions.
	lost := int64(len(tr.LostAtFailover))
	if tr.Plan.FailoverMode != mirror.FailoverTruncateToLSO || lost == 0 || tr.PredictedLoss != lost || !tr.Passed {
		t.Fatalf("truncate-to-lso: mode %s, lost %d, predicted %d %s, passed %v %v", tr.Plan.FailoverMode, lost, tr.PredictedLoss, tr.PredictedUnit, tr.Passed, tr.Problems)
	}
	mt, ma := modes(tr)
	if mt.Mode != mirror.FailoverTruncateToLSO || mt.LostRecords != lost || mt.Basis != "now" ||
		ma.Mode != mirror.FailoverAbortOpenTxns || ma.LostRecords != 0 || ma.AbortTransactions != 2 || ma.Truncate != 0 || ma.Basis != "source-high-watermark" {
		t.Fatalf("truncate-to-lso's plan modes: %+v %+v", mt, ma)
	}
	// abort-open-transactions: nothing lost, as predicted; truncate-to-lso
	// predicted to cut and lose the canary records past the LSO.
	if ab.Plan.FailoverMode != mirror.FailoverAbortOpenTxns || len(ab.LostAtFailover) != 0 || ab.PredictedLoss != 0 || !ab.Passed {
		t.Fatalf("abort-open-transactions: mode %s, lost %v, predicted %d %s, passed %v %v", ab.Plan.FailoverMode, ab.LostAtFailover, ab.PredictedLoss, ab.PredictedUnit, ab.Passed, ab.Problems)
	}
	mt, ma = modes(ab)
	if ma.Mode != mirror.FailoverAbortOpenTxns || ma.Basis != "now" || ma.LostRecords != 0 || ma.AbortTransactions != 2 || ma.Truncate != 0 ||
		mt.Mode != mirror.FailoverTruncateToLSO || mt.LostRecords == 0 || mt.Truncate <= mt.LostRecords {
		t.Fatalf("abort-open-transactions' plan modes: %+v %+v", mt, ma)
	}
	if ab.Plan.LostRecords != 0 || ab.Plan.WouldTruncate != 0 {
		t.Fatalf("abort-open-transactions' plan: lost %d, truncate %d, want the mode's 0 and 0", ab.Plan.LostRecords, ab.Plan.WouldTruncate)
	}
}
