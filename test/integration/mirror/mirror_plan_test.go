package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// dirDigest hashes every file under dir (name and bytes), so a test can
// show that a read-only operation wrote nothing.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// httpPlan asks a broker's admin API for the plan, as `mirror plan --json`
// does.
func httpPlan(t *testing.T, c *minibrokertest.Cluster, name, topics string) mirror.Plan {
	t.Helper()
	resp, err := http.Get("http://" + c.HTTPAddr() + "/v1/mirrors/" + name + "/plan?topics=" + topics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("plan: HTTP %d", resp.StatusCode)
	}
	var pl mirror.Plan
	if err := json.NewDecoder(resp.Body).Decode(&pl); err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestMirrorPlanPredictsStop: a transaction open on the mirror at failover
// (its commit marker lies past the source's LSO) is what STOPPING cuts.
// The plan, asked first through the admin API, predicts exactly that cut
// and the open transaction, says data is at risk, and changes nothing (the
// state, the log end and every file of the partition and the mirror state
// are the same after it); `mirror stop` then cuts what it predicted.
func TestMirrorPlanPredictsStop(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1))
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	p2 := itest.MirrorTxnProducer(t, a.Addr(), "t2")
	p1 := itest.MirrorTxnProducer(t, a.Addr(), "t1")
	ctx := context.Background()
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "ledger", 0, "plain", 2) // 0,1
	if err := p2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p2.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("t2-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p1.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("t1-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	defer p1.EndTransaction(ctx, kgo.TryAbort)
	m := b.Mirror("from-a", a.Addr()).Start("ledger")
	m.WaitCaughtUp(itest.Timeout)
	m.Pause() // no fetch may change the files between the two digests
	part := itest.MustPartition(t, b, "ledger", 0)
	beforeOffsets := part.Offsets()
	beforeFiles := dirDigest(t, part.Dir())
	beforeState := dirDigest(t, filepath.Join(b.DataDir(), "__mirror_state-0"))

	pl := httpPlan(t, b, "from-a", "ledger")
	if len(pl.Partitions) != 1 {
		t.Fatalf("plan: %+v", pl)
	}
	pp := pl.Partitions[0]
	t.Logf("plan: %+v", pp)
	if pp.WouldTruncate != 1 || pp.OpenTransactions != 1 || pp.LocalLogEndOffset != 3 || pp.LocalLastStable != 2 || !pl.AtRisk {
		t.Fatalf("plan predicts %+v (at risk %v), want truncate 1 (2..3), 1 open transaction, at risk", pp, pl.AtRisk)
	}
	// The source's HW (5: T1 open, T2's marker) is past what the mirror
	// may read (its LSO 3): the plan counts those 2 as missing.
	if pp.SourceHighWatermark != 5 || pp.SourceLastStable != 3 || pp.MissingRecords != 2 || pp.SourceSeenAt == 0 {
		t.Fatalf("plan's source view %+v, want HW 5, LSO 3, 2 missing, seen", pp)
	}
	// In records: the local 2 (t2-0, open here) and the source's 3 (t1-0,
	// still open there) and 4 (T2's COMMIT) are read back: t2-0 was
	// committed at the source, so it is the one acknowledged record the
	// failover loses; t1-0 is T1's, which the failover aborts; the marker
	// is not a record. The RPO is t2-0's age, from its batch timestamp.
	if pp.LostRecords != 1 || pp.UncommittedRecords != 1 || pp.UncommittedTransactions != 1 || !pp.ScanComplete ||
		pp.TimestampType != "CreateTime" || pp.OldestLostTimestamp <= 0 || pp.RPOMillis != pl.At-pp.OldestLostTimestamp {
		t.Fatalf("plan's loss in records %+v, want 1 lost (t2-0), 1 uncommitted in 1 transaction (t1-0), RPO from t2-0's timestamp", pp)
	}
	if got := part.Offsets(); got != beforeOffsets {
		t.Fatalf("plan changed offsets: %+v → %+v", beforeOffsets, got)
	}
	if dirDigest(t, part.Dir()) != beforeFiles || dirDigest(t, filepath.Join(b.DataDir(), "__mirror_state-0")) != beforeState {
		t.Fatal("plan changed files")
	}
	if st := m.Status().Partitions[0]; st.State != mirror.Paused {
		t.Fatalf("plan changed the state: %s", st.State)
	}

	m.Stop()
	ps := m.Status().Partitions[0]
	if ps.LostAtFailover != pp.WouldTruncate || ps.LastMirroredOffset != pp.LocalLastStable {
		t.Fatalf("stop cut %d at %d, the plan predicted %d at %d", ps.LostAtFailover, ps.LastMirroredOffset, pp.WouldTruncate, pp.LocalLastStable)
	}
	// After the failover: nothing at risk; a restart of the mirror from A
	// would cut the barrier at 2 (A's epoch ends at 5 there, B's at 2).
	if after := httpPlan(t, b, "from-a", "ledger"); after.AtRisk || after.WouldTruncate != 0 || after.LostRecords != 0 ||
		after.Partitions[0].DivergenceTruncate != 1 || after.Partitions[0].DivergenceCut != 2 {
		t.Fatalf("plan after the failover: %+v", after)
	}
}

// TestMirrorPlanFailbackDivergence: B mirrors A's 5 records and fails
// over (barrier at 5), then writes 2 records; A, cut off but still taking
// writes, acknowledges 3 late records (5..7). On A, a mirror from B is
// created but not started: the plan of its topic (not mirrored yet, state
// "") predicts that the start would cut A's log at 5, 3 offsets, and says
// data is at risk, without changing A's log. The start then does exactly
// that: A ends identical to B, its late records gone.
func TestMirrorPlanFailbackDivergence(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1), minibrokertest.HTTP())
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	pa := itest.IdempotentProducer(t, a.Addr())
	itest.ProduceSerially(t, pa, "ledger", 0, "a", 5) // 0..4
	m := b.Mirror("from-a", a.Addr()).Start("ledger")
	m.WaitCaughtUp(itest.Timeout)
	m.Stop()                                                                             // barrier at 5
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "ledger", 0, "b", 2) // 6, 7
	itest.ProduceSerially(t, pa, "ledger", 0, "late", 3)                                 // 5..7 on A

	back := a.Mirror("from-b", b.Addr())
	pl := httpPlan(t, a, "from-b", "ledger")
	if len(pl.Partitions) != 1 {
		t.Fatalf("plan: %+v", pl)
	}
	pp := pl.Partitions[0]
	t.Logf("failback plan: %+v", pp)
	if pp.State != mirror.NoState || pp.DivergenceTruncate != 3 || pp.DivergenceCut != 5 || pl.DivergenceTruncate != 3 || !pl.AtRisk {
		t.Fatalf("failback plan %+v (at risk %v), want a start to cut 3 at 5, at risk", pp, pl.AtRisk)
	}
	if end := itest.LogEnd(a, "ledger", 0); end != 8 {
		t.Fatalf("the plan changed A's log end to %d", end)
	}

	back.StartAllowTruncate("ledger")
	for deadline := time.Now().Add(itest.Timeout); ; time.Sleep(10 * time.Millisecond) {
		if st := back.Status().Partitions[0]; st.State == mirror.Mirroring && itest.LogEnd(a, "ledger", 0) == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failback mirror never caught up: %+v", back.Status().Partitions[0])
		}
	}
	itest.AssertIdentical(t, b, a, "ledger", 0, 8)
	if got := itest.Barriers(t, a, "ledger", 0); fmt.Sprint(got) != fmt.Sprint([]int64{pp.DivergenceCut}) {
		t.Fatalf("A's barriers %v: the start did not cut where the plan said (%d)", got, pp.DivergenceCut)
	}
}

// TestMirrorPlanSourceDown: the plan of a failover whose source is gone
// (the usual reason for one) does not hang and does not guess: it waits
// at most its source timeout, keeps the source offsets the mirror last
// saw (and says how old they are), reports the source's error, and leaves
// the loss in records unknown (-1) instead of counting from a guess.
func TestMirrorPlanSourceDown(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1))
	b := minibrokertest.Start(t, minibrokertest.HTTP())
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "ledger", 0, "a", 4)
	m := b.Mirror("from-a", a.Addr()).Start("ledger")
	m.WaitCaughtUp(itest.Timeout)
	a.Close()
	start := time.Now()
	pl := httpPlan(t, b, "from-a", "ledger")
	took := time.Since(start)
	pp := pl.Partitions[0]
	t.Logf("plan with the source down, in %v: %+v", took, pp)
	if took > 20*time.Second {
		t.Fatalf("the plan took %v with the source down", took)
	}
	if pp.SourceError == "" || pp.LostRecords != -1 || pp.SourceHighWatermark != 4 || pp.MissingRecords != 0 || pp.SourceSeenAt == 0 {
		t.Fatalf("plan with the source down: %+v, want the last seen HW 4, a source error, lost records unknown", pp)
	}
}
