package psm

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestClientSequenceAndDedup(t *testing.T) {
	m := NewManager(Config{}, nil, nil)
	apply(t, m, OriginClient, dataBatch(5, 0, 0, 5, 0, false))
	apply(t, m, OriginClient, dataBatch(5, 0, 5, 5, 5, false))

	// Retry of the first batch: duplicate with its original offsets.
	_, err := m.Prepare(OriginClient, []PreparedBatch{dataBatch(5, 0, 0, 5, 10, false)}, testTS)
	var dup *DuplicateError
	if !errors.As(err, &dup) || dup.FirstOffset != 0 || dup.LastOffset != 4 {
		t.Fatalf("want duplicate of 0-4, got %v", err)
	}
	// Gap.
	if _, err := m.Prepare(OriginClient, []PreparedBatch{dataBatch(5, 0, 11, 1, 10, false)}, testTS); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	// Lower epoch, after bumping to 1.
	apply(t, m, OriginClient, dataBatch(5, 1, 0, 1, 10, false))
	if _, err := m.Prepare(OriginClient, []PreparedBatch{dataBatch(5, 0, 10, 1, 11, false)}, testTS); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("lower epoch: %v", err)
	}
	// New epoch must start at 0.
	if _, err := m.Prepare(OriginClient, []PreparedBatch{dataBatch(5, 2, 3, 1, 11, false)}, testTS); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch at 3: %v", err)
	}
	// Unknown producer: any sequence.
	apply(t, m, OriginClient, dataBatch(6, 3, 42, 1, 11, false))
	e, _ := m.Entry(5)
	if e.Epoch != 1 || len(e.Batches) != 1 || e.Batches[0].LastOffset != 10 {
		t.Fatalf("entry 5: %+v", e)
	}
	if m.LastOffset() != 12 || m.Len() != 2 {
		t.Fatalf("LastOffset %d Len %d", m.LastOffset(), m.Len())
	}
}

func TestPrepareDoesNotMutate(t *testing.T) {
	m := NewManager(Config{}, nil, nil)
	apply(t, m, OriginClient, dataBatch(5, 0, 0, 1, 0, false))
	before := m.Entries()
	if _, err := m.Prepare(OriginClient, []PreparedBatch{dataBatch(5, 0, 1, 1, 1, true), dataBatch(7, 0, 0, 1, 2, false)}, testTS); err != nil {
		t.Fatal(err)
	}
	// dropped: the log write failed
	after := m.Entries()
	if len(after) != len(before) || after[0].Batches[0] != before[0].Batches[0] || after[0].CurrentTxnFirstOffset != -1 {
		t.Fatalf("Prepare mutated: %+v", after)
	}
	if _, ok := m.FirstUnstableOffset(); ok {
		t.Fatal("txn opened by an unapplied Prepare")
	}
}

func TestSameRequestJudgedInOrder(t *testing.T) {
	m := NewManager(Config{}, nil, nil)
	apply(t, m, OriginClient, dataBatch(5, 0, 0, 1, 0, false))
	// Second batch continues the first within one request.
	apply(t, m, OriginClient, dataBatch(5, 0, 1, 2, 1, false), dataBatch(5, 0, 3, 2, 3, false))
	// Second batch out of order against the first: whole append refused.
	_, err := m.Prepare(OriginClient, []PreparedBatch{dataBatch(5, 0, 5, 1, 5, false), dataBatch(5, 0, 7, 1, 6, false)}, testTS)
	if !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("got %v", err)
	}
	if e, _ := m.Entry(5); e.Batches[len(e.Batches)-1].LastSeq != 4 {
		t.Fatalf("state changed: %+v", e)
	}
}

func TestSequenceWraparound(t *testing.T) {
	m := NewManager(Config{}, nil, nil)
	apply(t, m, OriginClient, dataBatch(5, 0, math.MaxInt32-1, 2, 0, false))
	apply(t, m, OriginClient, dataBatch(5, 0, 0, 3, 2, false))
	// A batch that itself wraps.
	apply(t, m, OriginClient, dataBatch(9, 0, math.MaxInt32-1, 4, 5, false))
	e, _ := m.Entry(9)
	if e.Batches[0].LastSeq != 1 {
		t.Fatalf("last seq of wrapping batch: %d", e.Batches[0].LastSeq)
	}
	apply(t, m, OriginClient, dataBatch(9, 0, 2, 1, 9, false))
}

func TestDedupWindowIsFiveBatches(t *testing.T) {
	m := NewManager(Config{}, nil, nil)
	for i := int32(0); i < 6; i++ {
		apply(t, m, OriginClient, dataBatch(5, 0, i, 1, int64(i), false))
	}
	// seq 0 fell out of the window: no longer a duplicate, and out of order.
	if _, err := m.Prepare(OriginClient, []PreparedBatch{dataBatch(5, 0, 0, 1, 6, false)}, testTS); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("seq 0: %v", err)
	}
	var dup *DuplicateError
	if _, err := m.Prepare(OriginClient, []PreparedBatch{dataBatch(5, 0, 1, 1, 6, false)}, testTS); !errors.As(err, &dup) || dup.FirstOffset != 1 {
		t.Fatalf("seq 1: %v", err)
	}
}

func TestTransactions(t *testing.T) {
	m := NewManager(Config{}, nil, nil)
	apply(t, m, OriginClient, dataBatch(5, 0, 0, 2, 0, true))
	apply(t, m, OriginClient, dataBatch(6, 0, 0, 1, 2, true))
	if lso, ok := m.FirstUnstableOffset(); !ok || lso != 0 {
		t.Fatalf("FUO %d %v", lso, ok)
	}
	if _, err := m.Prepare(OriginClient, []PreparedBatch{dataBatch(5, 0, 2, 1, 3, false)}, testTS); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-txn in txn: %v", err)
	}
	if _, err := m.Prepare(OriginClient, []PreparedBatch{marker(true, 5, 0, 0, 3)}, testTS); !errors.Is(err, ErrControlBatchFromClient) {
		t.Fatalf("client marker: %v", err)
	}
	done := apply(t, m, OriginCoordinator, marker(true, 5, 0, 3, 3))
	if len(done) != 1 || done[0] != (CompletedTxn{ProducerID: 5, FirstOffset: 0, LastOffset: 3, LastStableOffset: 2}) {
		t.Fatalf("completed %+v", done)
	}
	if lso, _ := m.FirstUnstableOffset(); lso != 2 {
		t.Fatalf("FUO %d", lso)
	}
	// Older coordinator epoch is fenced.
	apply(t, m, OriginClient, dataBatch(5, 0, 2, 1, 4, true))
	if _, err := m.Prepare(OriginCoordinator, []PreparedBatch{marker(false, 5, 0, 2, 5)}, testTS); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("fenced: %v", err)
	}
	done = apply(t, m, OriginCoordinator, marker(false, 5, 0, 3, 5))
	if len(done) != 1 || !done[0].Aborted || done[0].FirstOffset != 4 {
		t.Fatalf("abort %+v", done)
	}
	txns := m.OngoingTxns()
	if len(txns) != 1 || txns[0] != (TxnInfo{ProducerID: 6, FirstOffset: 2}) {
		t.Fatalf("ongoing %+v", txns)
	}
}

func TestBarrierClearsWithinOneAppend(t *testing.T) {
	reg := prometheus.NewRegistry()
	met := NewMetrics(reg)
	m := NewManager(Config{}, nil, met)
	apply(t, m, OriginReplication, dataBatch(1, 0, 0, 1, 0, true))
	done := apply(t, m, OriginReplication,
		dataBatch(2, 0, 0, 1, 1, false), barrier(2), dataBatch(3, 0, 7, 1, 3, false))
	if len(done) != 0 {
		t.Fatalf("completed %+v", done)
	}
	es := m.Entries()
	if len(es) != 1 || es[0].ProducerID != 3 {
		t.Fatalf("entries %+v", es)
	}
	if _, ok := m.FirstUnstableOffset(); ok {
		t.Fatal("txn survived the barrier")
	}
	if got := counterValue(t, reg, "minibroker_psm_barriers_applied_total", ""); got != 1 {
		t.Fatalf("barriers %v", got)
	}
	// A second NewMetrics on the same registry reuses the collectors.
	if NewMetrics(reg).BarriersApplied != met.BarriersApplied {
		t.Fatal("collectors not reused")
	}
}

func TestNoProducerIDNotTracked(t *testing.T) {
	m := NewManager(Config{}, nil, nil)
	apply(t, m, OriginClient, dataBatch(-1, -1, -1, 3, 0, false))
	if m.Len() != 0 || m.LastOffset() != 3 {
		t.Fatalf("len %d end %d", m.Len(), m.LastOffset())
	}
}

func TestExpirationSparesOpenTxn(t *testing.T) {
	m := NewManager(Config{ProducerIDExpirationMs: 1000}, nil, nil)
	apply(t, m, OriginClient, dataBatch(1, 0, 0, 1, 0, false))
	apply(t, m, OriginClient, dataBatch(2, 0, 0, 1, 1, true))
	if n := m.RemoveExpired(testTS + 999); n != 0 {
		t.Fatalf("expired %d early", n)
	}
	if n := m.RemoveExpired(testTS + 1000); n != 1 {
		t.Fatalf("expired %d", n)
	}
	if _, ok := m.Entry(2); !ok {
		t.Fatal("producer with open txn expired")
	}
}

func TestStaleApplyPanics(t *testing.T) {
	m := NewManager(Config{}, nil, nil)
	p, err := m.Prepare(OriginClient, []PreparedBatch{dataBatch(1, 0, 0, 1, 0, false)}, testTS)
	if err != nil {
		t.Fatal(err)
	}
	m.Clear()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	p.Apply()
}

// A mirrored chunk with many producers (past the small linear-scan set)
// gives the same state as the same batches appended one by one.
func TestManyProducersInOneAppend(t *testing.T) {
	var bs []PreparedBatch
	seqs := map[int64]int32{}
	for i := int64(0); i < 300; i++ {
		if i == 170 {
			bs = append(bs, barrier(i))
			continue
		}
		if i%10 == 9 { // commit one of the transactional producers
			bs = append(bs, marker(true, (i/10%8)*5, 0, 0, i))
			continue
		}
		pid := (i * 7) % 41
		txn := pid%5 == 0
		bs = append(bs, dataBatch(pid, 0, seqs[pid], 1, i, txn))
		seqs[pid]++
	}
	whole := NewManager(Config{}, nil, nil)
	wholeDone := apply(t, whole, OriginReplication, bs...)
	single := NewManager(Config{}, nil, nil)
	var singleDone []CompletedTxn
	for _, b := range bs {
		singleDone = append(singleDone, apply(t, single, OriginReplication, b)...)
	}
	if !reflect.DeepEqual(stateOf(whole), stateOf(single)) {
		t.Fatalf("one append:\n%+v\none by one:\n%+v", stateOf(whole), stateOf(single))
	}
	if len(wholeDone) == 0 || !reflect.DeepEqual(wholeDone, singleDone) {
		t.Fatalf("completed differ:\n%+v\n%+v", wholeDone, singleDone)
	}
	if whole.Len() < 20 {
		t.Fatalf("only %d producers", whole.Len())
	}
}

func TestHasLateTransaction(t *testing.T) {
	m := NewManager(Config{}, nil, nil)
	if m.HasLateTransaction(testTS*10, 1000) {
		t.Fatal("late with no transaction")
	}
	apply(t, m, OriginClient, dataBatch(1, 0, 0, 1, 0, true)) // ts testTS, oldest
	b := dataBatch(2, 0, 0, 1, 1, true)
	b.Header.MaxTimestamp = testTS + 10_000_000
	apply(t, m, OriginClient, b)
	limit := int64(testTS + 1000 + LateTransactionBufferMs)
	if m.HasLateTransaction(limit, 1000) || !m.HasLateTransaction(limit+1, 1000) {
		t.Fatal("late threshold of the oldest transaction")
	}
	apply(t, m, OriginCoordinator, marker(true, 1, 0, 0, 2))
	if m.HasLateTransaction(limit+1, 1000) {
		t.Fatal("the younger producer's transaction is not late")
	}
}
