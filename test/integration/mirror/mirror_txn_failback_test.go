package mirror

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestTxnCommitRefusedWhenPartitionBecameMirrored: B
// failed over from A; A, still writable, has a kgo transactional producer
// with records of an open transaction in ledger-0 when A starts mirroring
// ledger back from B (failback): the partition becomes read-only and the
// mirror cuts A's records. The producer's commit is answered
// TRANSACTION_ABORTABLE, not success, and nothing is decided; the abort
// that follows (here by a new client with the same transactional id)
// completes, and the producer goes on with a new transaction on a
// writable topic. A read_committed consumer on A sees B's records only.
// Before the fix EndTxn answered success and the broker only logged that
// the marker was skipped.
func TestTxnCommitRefusedWhenPartitionBecameMirrored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := minibrokertest.Start(t, minibrokertest.Topic("ledger", 1), minibrokertest.Topic("other", 1))
	b := minibrokertest.Start(t)
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "ledger", 0, "a", 3)
	mb := b.Mirror("from-a", a.Addr()).Start("ledger")
	mb.WaitCaughtUp(itest.Timeout)
	mb.Stop() // B: barrier at 3
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "ledger", 0, "b", 2)

	pa := itest.MirrorTxnProducer(t, a.Addr(), "ledger-writer")
	if err := pa.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := pa.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Partition: 0, Value: []byte("lost-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ma := a.Mirror("from-b", b.Addr())
	ma.StartAllowTruncate("ledger") // failback: ledger-0 on A is mirrored, lost-0 cut
	for deadline := time.Now().Add(itest.Timeout); itest.LogEnd(a, "ledger", 0) != itest.LogEnd(b, "ledger", 0) ||
		ma.Status().Partitions[0].State != mirror.Mirroring; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("A never mirrored B: %+v", ma.Status().Partitions[0])
		}
	}

	err := pa.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.TransactionAbortable) {
		t.Fatalf("commit of a transaction whose partition became mirrored answered %v, want TRANSACTION_ABORTABLE", err)
	}
	// kgo (outside KIP-890 part 2) keeps TRANSACTION_ABORTABLE from
	// EndTxn as its producer's fatal error; a new client with the same
	// transactional id aborts the open transaction (InitProducerId) and
	// goes on.
	pa.Close()
	pa2 := itest.MirrorTxnProducer(t, a.Addr(), "ledger-writer")
	itest.MirrorTxn(t, pa2, "other", 0, itest.Values("next", 2), true)
	itest.AssertValues(t, a, "other", 0, itest.Values("next", 2))
	itest.AssertValues(t, a, "ledger", 0, itest.Concat(itest.Values("a", 3), itest.Values("b", 2)))
	itest.AssertIdentical(t, a, b, "ledger", 0, itest.LogEnd(b, "ledger", 0))
}
