package psm

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/minibroker/minibroker/internal/batch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testTS = 1_000_000

// dataBatch is a data batch of n records at offset with sequences from
// firstSeq on.
func dataBatch(pid int64, epoch int16, firstSeq int32, n int32, offset int64, txn bool) PreparedBatch {
	h := batch.Header{
		BaseOffset: offset, Magic: 2, LastOffsetDelta: n - 1,
		BaseTimestamp: testTS, MaxTimestamp: testTS,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: firstSeq, NumRecords: n,
	}
	if txn {
		h.Attributes |= batch.AttrTransactional
	}
	return PreparedBatch{Header: h}
}

func controlAt(raw []byte, offset int64) PreparedBatch {
	batch.SetBaseOffset(raw, offset)
	h, err := batch.ParseHeader(raw)
	if err != nil {
		panic(err)
	}
	return PreparedBatch{Header: h, Raw: raw}
}

func marker(commit bool, pid int64, epoch int16, coordinatorEpoch int32, offset int64) PreparedBatch {
	return controlAt(batch.EndTxnBatch(commit, pid, epoch, coordinatorEpoch, testTS), offset)
}

func barrier(offset int64) PreparedBatch {
	return controlAt(batch.BarrierBatch("cluster-a", testTS), offset)
}

// apply prepares and applies, failing the test on an error.
func apply(t testing.TB, m *Manager, origin Origin, batches ...PreparedBatch) []CompletedTxn {
	t.Helper()
	p, err := m.Prepare(origin, batches, testTS)
	if err != nil {
		t.Fatalf("Prepare(%v): %v", origin, err)
	}
	return p.Apply()
}

// counterValue reads a counter from reg; label is the value of its only
// label, or "" for an unlabelled counter.
func counterValue(t testing.TB, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			if label == "" || (len(mt.GetLabel()) == 1 && mt.GetLabel()[0].GetValue() == label) {
				return mt.GetCounter().GetValue()
			}
		}
	}
	return 0
}
