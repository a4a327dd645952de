package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/mirror"
)

// TestEndTxnCommitWithMirroredPartition is the scenario of the
// integration test TestTxnCommitRefusedWhenPartitionBecameMirrored (issue
// 27, item 3) with its negative control: B fails over from A; a kgo
// transactional producer on A has a record of an open transaction in
// ledger-0 when A starts mirroring ledger back from B (failback), so the
// partition becomes read-only and the mirror cuts the record. With the
// rule (CheckTxnMarker refuses a mirrored partition) the commit is
// answered TRANSACTION_ABORTABLE. With it removed (skipCommitMarkerCheck)
// the same commit is answered success while the COMMIT marker is not
// written: the broker logs that it skipped it and ledger-0 on A holds
// nothing of the transaction.
func TestEndTxnCommitWithMirroredPartition(t *testing.T) {
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skipCommitMarkerCheck=%v", skip), func(t *testing.T) {
			logs, observed := observer.New(zap.InfoLevel)
			a := startMirrorBroker(t, zap.New(logs), func(b *Broker) { b.knobs.skipCommitMarkerCheck = skip })
			b := startMirrorBroker(t, zap.NewNop(), nil)
			if _, err := a.CreateTopic("ledger", 1, nil, [16]byte{}, false); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			pa := newTxnTestClient(t, a.Addr())
			for i := range 3 {
				if err := pa.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: fmt.Appendf(nil, "a-%d", i)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			mustMirror(t, b, "from-a", a.Addr(), 3)
			if err := b.Mirrors().Stop("from-a", nil); err != nil { // B: barrier at 3
				t.Fatal(err)
			}
			pb := newTxnTestClient(t, b.Addr())
			for i := range 2 {
				if err := pb.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: fmt.Appendf(nil, "b-%d", i)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			bEnd := logEndOf(t, b, "ledger")

			tx := newTxnTestClient(t, a.Addr(), kgo.TransactionalID("ledger-writer"), kgo.TransactionTimeout(30*time.Second))
			if err := tx.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "ledger", Value: []byte("lost-0")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			mustMirror(t, a, "from-b", b.Addr(), bEnd) // failback: ledger-0 on A is mirrored

			err := tx.EndTransaction(ctx, kgo.TryCommit)
			skipped := observed.FilterMessage("transaction marker not written: partition is mirrored").Len()
			t.Logf("commit answered %v; 'marker not written' logged %d times; A's ledger ends at %d (B's at %d)",
				err, skipped, logEndOf(t, a, "ledger"), bEnd)
			if !skip {
				if !errors.Is(err, kerr.TransactionAbortable) {
					t.Fatalf("commit answered %v, want TRANSACTION_ABORTABLE", err)
				}
				return
			}
			// The rule removed: the failure it prevents.
			if err != nil {
				t.Fatalf("without the check the commit answered %v, want success (the failure the rule prevents)", err)
			}
			if md, _ := a.txns.Describe("ledger-writer"); md.State != coordinator.TxnCompleteCommit {
				t.Fatalf("without the check the transaction is %s, want CompleteCommit", md.State)
			}
			for deadline := time.Now().Add(10 * time.Second); skipped == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) { // the marker may be left to the coordinator's retry goroutine
					t.Fatal("without the check the commit succeeded but no skipped marker was logged")
				}
				skipped = observed.FilterMessage("transaction marker not written: partition is mirrored").Len()
			}
			if end := logEndOf(t, a, "ledger"); end != bEnd {
				t.Fatalf("A's ledger ends at %d, B's at %d: a COMMIT marker was written to the mirrored partition", end, bEnd)
			}
		})
	}
}

func startMirrorBroker(t *testing.T, logger *zap.Logger, seams func(*Broker)) *Broker {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", ""
	b, err := newBroker(Options{Config: cfg, Logger: logger}, seams)
	if err != nil {
		t.Fatal(err)
	}
	b.Serve()
	t.Cleanup(func() { b.Close(context.Background()) })
	return b
}

func newTxnTestClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// mustMirror makes dst mirror ledger from src and waits until it is
// MIRRORING with its log ending at end.
func mustMirror(t *testing.T, dst *Broker, name, src string, end int64) {
	t.Helper()
	if err := dst.Mirrors().Create(name, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	// The failback start cuts A's open transaction's record: allowed.
	if _, err := dst.Mirrors().StartWith(t.Context(), name, []string{"ledger"}, mirror.StartOptions{AllowTruncate: true}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := dst.Mirrors().Describe(name)
		if err == nil && len(st.Partitions) == 1 && st.Partitions[0].State == mirror.Mirroring && logEndOf(t, dst, "ledger") == end {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirror %s never reached MIRRORING at end %d: %+v %v", name, end, st, err)
		}
	}
}

func logEndOf(t *testing.T, b *Broker, topic string) int64 {
	t.Helper()
	p, ok := b.partitionOf(topic, 0)
	if !ok {
		return -1
	}
	return p.Offsets().LogEnd
}
