package coordinator

import (
	"fmt"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs"
)

// produceAcrossDecision runs a Produce v12's AddAndVerifyProduce whose
// wait for the add's fsync (made without decideMu) sees the producer's
// EndTxn decide the transaction, and returns the markers the decision
// wrote and AddAndVerifyProduce's error.
func produceAcrossDecision(t *testing.T, skipCheck bool) (markers string, err error) {
	h, tx, decided := decidingDuringFsync(t, skipCheck, func(k *knobs) *func() { return &k.afterProduceAddDurable })
	defer tx.Close()
	release, err := tx.AddAndVerifyProduce("t", 0, 0, TopicPartition{"a", 0})
	release()
	if !*decided {
		t.Fatal("the hook did not run")
	}
	return fmt.Sprint(h.markers.take()), err
}

// decidingDuringFsync opens a harness (skipDecideGenCheck as skipCheck)
// whose hook, the knob hook picks, commits producer "t"'s transaction
// (EndTxn v2) the first time it runs, and gives the producer "t" its id
// (pid 0, epoch 0). decided reports whether the hook ran.
func decidingDuringFsync(t *testing.T, skipCheck bool, hook func(*knobs) *func()) (h *txnHarness, tx *Transactions, decided *bool) {
	decided = new(bool)
	h, tx = openWithFsyncHook(t, hook, func(k *knobs) { k.skipDecideGenCheck = skipCheck }, func(tx *Transactions) {
		if *decided {
			return
		}
		*decided = true
		if _, err := tx.EndTxnV2("t", 0, 0, true, false); err != nil {
			t.Errorf("EndTxn during the fsync: %v", err)
		}
	})
	return h, tx, decided
}

// openWithFsyncHook opens a harness whose knob hook (picked by hook) calls
// onFsync with the coordinator, after set has set any other knobs, and
// gives the producer "t" its id (pid 0, epoch 0).
func openWithFsyncHook(t *testing.T, hook func(*knobs) *func(), set func(*knobs), onFsync func(*Transactions)) (*txnHarness, *Transactions) {
	h := newTxnHarness(t, vfs.Default, t.TempDir())
	set(&h.knobs)
	var tx *Transactions
	*hook(&h.knobs) = func() { onFsync(tx) }
	tx = h.open()
	if _, err := tx.InitProducerID("t", 10_000, -1, -1); err != nil {
		t.Fatal(err)
	}
	return h, tx
}

// TestProduceAddRechecksAfterFsync: a Produce v12 that adds its partition
// waits for the add's fsync without decideMu, so an EndTxn can decide the
// transaction meanwhile (here it commits, writing the partition's marker);
// the Produce must then not append, since its data would follow the
// marker (a hanging transaction). Negative control: with the decideGen
// check skipped, the Produce is let through after the decision.
func TestProduceAddRechecksAfterFsync(t *testing.T) {
	markers, err := produceAcrossDecision(t, false)
	if markers != "[a-0 commit pid=0 epoch=1 coord=0]" {
		t.Fatalf("markers of the decision: %s", markers)
	}
	if err == nil {
		t.Fatal("the Produce was let through after its transaction was decided")
	}
	t.Logf("refused with: %v", err)

	_, err = produceAcrossDecision(t, true)
	if err != nil {
		t.Fatalf("negative control: without the decideGen check the Produce was refused anyway (%v): the scenario does not reach the rule", err)
	}
}

// TestProduceAddHoldsDecideMuAfterRounds: decideMu taken exclusively
// during every optimistic wait (the coordinator's tick, deciding nothing)
// sends AddAndVerifyProduce round again, and after maxOptimisticAdds
// rounds it waits holding decideMu and succeeds.
func TestProduceAddHoldsDecideMuAfterRounds(t *testing.T) {
	rounds := 0
	h, tx := openWithFsyncHook(t, func(k *knobs) *func() { return &k.afterProduceAddDurable }, func(*knobs) {},
		func(tx *Transactions) { rounds++; tx.tick() })
	defer tx.Close()
	release, err := tx.AddAndVerifyProduce("t", 0, 0, TopicPartition{"a", 0})
	must(t, err)
	release()
	if rounds != maxOptimisticAdds {
		t.Fatalf("%d optimistic rounds, want %d", rounds, maxOptimisticAdds)
	}
	release, err = tx.AddAndVerifyProduce("t", 0, 0, TopicPartition{"a", 1})
	must(t, err)
	release()
	must(t, tx.EndTxn("t", 0, 0, true))
	if got := fmt.Sprint(h.markers.take()); got != "[a-0 commit pid=0 epoch=0 coord=0 a-1 commit pid=0 epoch=0 coord=0]" {
		t.Fatalf("markers: %s", got)
	}
}
