package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/coordinator"
)

// TestPanicInProduceLeavesEndTxnWorking: a transactional Produce whose
// append panics (the unexported panicInProduce knob, once) is recovered
// by the connection, which closes; kgo retries the batch, it is appended,
// and the commit must then be decided. With the decide lock's release
// called after the append instead of deferred, the panic skips it and
// this EndTxn waits for the lock for ever: kgo's request times out, the
// transaction stays Ongoing.
func TestPanicInProduceLeavesEndTxnWorking(t *testing.T) {
	var panics atomic.Int32
	panics.Store(1)
	b, _ := startSeamed(t, func(b *Broker) {
		b.knobs.panicInProduce = func(topic string) bool { return topic == "tx" && panics.Add(-1) >= 0 }
	})
	if _, err := b.CreateTopic("tx", 1, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	tx := newTxnTestClient(t, b.Addr(), kgo.TransactionalID("panicky"), kgo.TransactionTimeout(time.Minute))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "tx", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if panics.Load() >= 0 {
		t.Fatal("the produce did not panic: the knob did not fire")
	}
	// Generous: on a loaded machine a commit takes well under a second;
	// the bug is a wait without end.
	ectx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := tx.EndTransaction(ectx, kgo.TryCommit); err != nil {
		md, _ := b.txns.Describe("panicky")
		t.Fatalf("commit after a recovered produce panic: %v (transaction %s)", err, md.State)
	}
	if md, _ := b.txns.Describe("panicky"); md.State != coordinator.TxnCompleteCommit {
		t.Fatalf("transaction %s, want CompleteCommit", md.State)
	}
}
