package mirror

import (
	"context"
	"fmt"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorTransactionalCollision: transactional producers on A, a
// failover to B, and on B a transactional producer with the same
// transactional id, which draws the same producer id (both clusters start
// at 0). read_committed consumers on B see every committed record once and
// no aborted one.
func TestMirrorTransactionalCollision(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1))
	b := minibrokertest.Start(t)
	pa := itest.MirrorTxnProducer(t, a.Addr(), "ledger-writer")
	itest.MirrorTxn(t, pa, "ledger", 0, itest.Values("a1", 3), true)
	itest.MirrorTxn(t, pa, "ledger", 0, itest.Values("a-aborted", 2), false)
	itest.MirrorTxn(t, pa, "ledger", 0, itest.Values("a2", 3), true)

	m := b.Mirror("from-a", a.Addr()).Start("ledger")
	m.WaitCaughtUp(itest.Timeout)
	m.Stop()
	end := itest.LogEnd(a, "ledger", 0)
	itest.AssertIdentical(t, a, b, "ledger", 0, end)
	if got := itest.Barriers(t, b, "ledger", 0); fmt.Sprint(got) != fmt.Sprint([]int64{end}) {
		t.Fatalf("barriers %v, want [%d]", got, end)
	}

	pb := itest.MirrorTxnProducer(t, b.Addr(), "ledger-writer")
	itest.MirrorTxn(t, pb, "ledger", 0, itest.Values("b1", 3), true)
	itest.MirrorTxn(t, pb, "ledger", 0, itest.Values("b-aborted", 2), false)
	itest.MirrorTxn(t, pb, "ledger", 0, itest.Values("b2", 3), true)
	itest.AssertValues(t, b, "ledger", 0, itest.Concat(itest.Values("a1", 3), itest.Values("a2", 3), itest.Values("b1", 3), itest.Values("b2", 3)))
}

// TestMirrorFailoverTruncatesToLocalLSO: a transaction committed at the
// source whose marker lies past the source's LSO (another transaction was
// open there) is still open on the mirror at failover. STOPPING cuts it at
// the local LSO, reports what it cut, and leaves no open transaction.
func TestMirrorFailoverTruncatesToLocalLSO(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1))
	b := minibrokertest.Start(t)
	p2 := itest.MirrorTxnProducer(t, a.Addr(), "t2")
	p1 := itest.MirrorTxnProducer(t, a.Addr(), "t1")
	ctx := context.Background()
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "ledger", 0, "plain", 2) // 0,1

	if err := p2.BeginTransaction(); err != nil { // T2 from offset 2
		t.Fatal(err)
	}
	if err := p2.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("t2-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p1.BeginTransaction(); err != nil { // T1 from offset 3, left open
		t.Fatal(err)
	}
	if err := p1.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("t1-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil { // T2's marker at 4, past the LSO (3)
		t.Fatal(err)
	}
	m := b.Mirror("from-a", a.Addr()).Start("ledger")
	m.WaitCaughtUp(itest.Timeout) // mirrors up to the source LSO: offsets 0..2
	if end := itest.LogEnd(b, "ledger", 0); end != 3 {
		t.Fatalf("mirrored up to %d, want the source LSO 3", end)
	}
	if o := itest.MustPartition(t, b, "ledger", 0).Offsets(); o.LastStable != 2 {
		t.Fatalf("local LSO %d, want 2 (T2 open locally)", o.LastStable)
	}
	m.Stop()
	ps := m.Status().Partitions[0]
	if ps.State != mirror.Stopped || ps.LastMirroredOffset != 2 || ps.LostAtFailover != 1 || ps.BarrierOffset != 2 {
		t.Fatalf("after failover: %+v", ps)
	}
	if o := itest.MustPartition(t, b, "ledger", 0).Offsets(); o.LastStable != o.HighWatermark {
		t.Fatalf("an open transaction survived the failover: %+v", o)
	}
	itest.AssertValues(t, b, "ledger", 0, itest.Values("plain", 2))
	p1.EndTransaction(ctx, kgo.TryAbort)
}
