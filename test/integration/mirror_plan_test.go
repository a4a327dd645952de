package integration

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
	p2 := mirrorTxnProducer(t, a.Addr(), "t2")
	p1 := mirrorTxnProducer(t, a.Addr(), "t1")
	ctx := context.Background()
	produceSerially(t, idempotentProducer(t, a.Addr()), "ledger", 0, "plain", 2) // 0,1
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
	m.WaitCaughtUp(timeout)
	m.Pause() // no fetch may change the files between the two digests
	part := mustPartition(t, b, "ledger", 0)
	beforeOffsets := part.Offsets()
	beforeFiles := dirDigest(t, part.Dir())
	beforeState := dirDigest(t, filepath.Join(b.DataDir(), "mirrors.json"))

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
	if got := part.Offsets(); got != beforeOffsets {
		t.Fatalf("plan changed offsets: %+v → %+v", beforeOffsets, got)
	}
	if dirDigest(t, part.Dir()) != beforeFiles || dirDigest(t, filepath.Join(b.DataDir(), "mirrors.json")) != beforeState {
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
	if after := httpPlan(t, b, "from-a", "ledger"); after.AtRisk || after.WouldTruncate != 0 {
		t.Fatalf("plan after the failover: %+v", after)
	}
}
