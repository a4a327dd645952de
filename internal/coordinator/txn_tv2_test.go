package coordinator

import (
	"errors"
	"math"
	"testing"
)

func tv2Machine(t *testing.T) (*TxnMachine, *int64) {
	t.Helper()
	next := int64(100)
	m := NewTxnMachine(TxnConfig{MaxTimeoutMs: 60_000, IDExpirationMs: 1 << 40}, func() (int64, error) { next++; return next - 1, nil }, nil)
	if _, _, err := m.InitProducerID("t", 1000, -1, -1, 0); err != nil {
		t.Fatal(err)
	}
	return m, &next
}

// endV2 runs EndTxnV2 and, on a decision, completes its markers.
func endV2(t *testing.T, m *TxnMachine, pid int64, epoch int16, commit bool) (EndResult, error) {
	t.Helper()
	res, job, err := m.EndTxnV2("t", pid, epoch, commit, false, 1)
	if job != nil {
		if job.ProducerEpoch != epoch+1 && !(job.ProducerEpoch == math.MaxInt16 && epoch == math.MaxInt16-1) {
			t.Fatalf("markers at epoch %d for a request at %d, want the bumped epoch", job.ProducerEpoch, epoch)
		}
		if err := m.CompleteMarkers(job, 2); err != nil {
			t.Fatal(err)
		}
	}
	return res, err
}

// TestEndTxnV2RetryTable pins Kafka 4's EndTxn table for transaction
// version 2 (TransactionCoordinator.endTransaction): each commit and abort
// bumps the epoch; a retry at the previous epoch gets NONE for the same
// decision; an abort with nothing open bumps (an empty abort); the rest is
// PRODUCER_FENCED or INVALID_TXN_STATE.
func TestEndTxnV2RetryTable(t *testing.T) {
	m, _ := tv2Machine(t)
	md, _ := m.Get("t")
	pid, e := md.ProducerID, md.ProducerEpoch
	// Empty: commit at the current epoch is INVALID_TXN_STATE, at e-1 FENCED.
	if _, err := endV2(t, m, pid, e, true); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("Empty, commit current: %v", err)
	}
	if _, err := endV2(t, m, pid, e-1, false); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("Empty, abort retry: %v", err)
	}
	// Empty: abort at the current epoch bumps (empty abort).
	res, err := endV2(t, m, pid, e, false)
	if err != nil || res.ProducerEpoch != e+1 {
		t.Fatalf("Empty, abort current: %v %+v", err, res)
	}
	e++
	// A transaction, committed: the answer is the bumped epoch.
	if err := m.AddPartitionsImplicit("t", pid, e, []TopicPartition{{"a", 0}}, 3); err != nil {
		t.Fatal(err)
	}
	if res, err = endV2(t, m, pid, e, true); err != nil || res.ProducerEpoch != e+1 || res.ProducerID != pid {
		t.Fatalf("Ongoing commit: %v %+v", err, res)
	}
	if md, _ := m.Get("t"); md.State != TxnCompleteCommit || md.ClientTxnVersion != TxnVersion2 {
		t.Fatalf("after commit: %s tv %d", md.State, md.ClientTxnVersion)
	}
	// CompleteCommit: retried commit NONE with the current epoch; retried
	// abort INVALID_TXN_STATE; a commit at the current epoch
	// INVALID_TXN_STATE; an older epoch FENCED.
	if res, err = endV2(t, m, pid, e, true); err != nil || res.ProducerEpoch != e+1 {
		t.Fatalf("CompleteCommit, commit retry: %v %+v", err, res)
	}
	if _, err = endV2(t, m, pid, e, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("CompleteCommit, abort retry: %v", err)
	}
	if _, err = endV2(t, m, pid, e+1, true); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("CompleteCommit, commit current: %v", err)
	}
	if _, err = endV2(t, m, pid, e-1, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("CompleteCommit, older epoch: %v", err)
	}
	e++
	// An abort of an open transaction, then CompleteAbort's rules.
	if err := m.AddPartitionsImplicit("t", pid, e, []TopicPartition{{"a", 0}}, 3); err != nil {
		t.Fatal(err)
	}
	if _, err = endV2(t, m, pid, e-1, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("Ongoing, a late commit at the previous epoch: %v", err)
	}
	if res, err = endV2(t, m, pid, e, false); err != nil || res.ProducerEpoch != e+1 {
		t.Fatalf("Ongoing abort: %v %+v", err, res)
	}
	if _, err = endV2(t, m, pid, e, false); err != nil {
		t.Fatalf("CompleteAbort, abort retry: %v", err)
	}
	if _, err = endV2(t, m, pid, e, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("CompleteAbort, commit retry (KAFKA-20785): %v", err)
	}
	if _, err = endV2(t, m, pid, e+1, true); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("CompleteAbort, commit current: %v", err)
	}
	if res, err = endV2(t, m, pid, e+1, false); err != nil || res.ProducerEpoch != e+2 {
		t.Fatalf("CompleteAbort, abort current (empty abort): %v %+v", err, res)
	}
	if _, err = endV2(t, m, 999, e+2, false); !errors.Is(err, ErrInvalidProducerIDMapping) {
		t.Fatalf("another producer id: %v", err)
	}
}

// TestEndTxnV2EpochExhaustion: the commit at MaxInt16-1 writes its markers
// at MaxInt16 and moves the id to a new producer id at epoch 0, answered
// at once; a retry naming the previous id at MaxInt16-1 gets the same.
func TestEndTxnV2EpochExhaustion(t *testing.T) {
	m, _ := tv2Machine(t)
	md, _ := m.Get("t")
	md.ProducerEpoch = math.MaxInt16 - 1
	m.Load(md)
	pid := md.ProducerID
	if err := m.AddPartitionsImplicit("t", pid, math.MaxInt16-1, []TopicPartition{{"a", 0}}, 3); err != nil {
		t.Fatal(err)
	}
	res, job, err := m.EndTxnV2("t", pid, math.MaxInt16-1, true, false, 4)
	if err != nil || job == nil || job.ProducerID != pid || job.ProducerEpoch != math.MaxInt16 {
		t.Fatalf("commit: %v %+v", err, job)
	}
	if res.ProducerID == pid || res.ProducerEpoch != 0 {
		t.Fatalf("answered %+v, want a new producer id at epoch 0", res)
	}
	if err := m.CompleteMarkers(job, 5); err != nil {
		t.Fatal(err)
	}
	md, _ = m.Get("t")
	if md.ProducerID != res.ProducerID || md.ProducerEpoch != 0 || md.LastProducerID != pid || md.NextProducerID != -1 {
		t.Fatalf("after the markers: %+v", md)
	}
	again, _, err := m.EndTxnV2("t", pid, math.MaxInt16-1, true, false, 6)
	if err != nil || again != res {
		t.Fatalf("retry: %v %+v, want %+v", err, again, res)
	}
}
