package log

import (
	"container/heap"

	"github.com/minibroker/minibroker/internal/batch"
)

// cleanedTxns is Kafka's CleanedTransactionMetadata: it follows the
// transactions of the batches the cleaner walks, in offset order, so that
// the records of aborted transactions are removed and a COMMIT or ABORT
// marker is kept until no batch of its transaction is left.
//
// It also keeps minibroker's rule for the MIRROR_PID_RESET barrier (see
// barrierDiscardable).
type cleanedTxns struct {
	aborted        abortedHeap             // by first offset, not yet reached
	ongoingAborted map[int64]*abortedState // producer → its aborted transaction in progress
	ongoingCommit  map[int64]bool          // producers with a transaction in progress, not aborted
	// kept collects the aborted transactions whose ABORT marker the
	// cleaner keeps, for the cleaned segment's .txnindex.
	kept []AbortedTxn
}

type abortedState struct {
	txn      AbortedTxn
	observed bool // a batch of it was read in this pass
}

func newCleanedTxns(aborted []AbortedTxn) *cleanedTxns {
	c := &cleanedTxns{ongoingAborted: map[int64]*abortedState{}, ongoingCommit: map[int64]bool{}}
	c.aborted = append(c.aborted, aborted...)
	heap.Init(&c.aborted)
	return c
}

func (c *cleanedTxns) consumeUpTo(offset int64) {
	for len(c.aborted) > 0 && c.aborted[0].FirstOffset <= offset {
		t := heap.Pop(&c.aborted).(AbortedTxn)
		if _, ok := c.ongoingAborted[t.ProducerID]; !ok {
			c.ongoingAborted[t.ProducerID] = &abortedState{txn: t}
		}
	}
}

// onData reports whether a data batch's records are discarded: it belongs
// to an aborted transaction (Kafka's onBatchRead).
func (c *cleanedTxns) onData(h *batch.Header) bool {
	c.consumeUpTo(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	if a, ok := c.ongoingAborted[h.ProducerID]; ok {
		a.observed = true
		return true
	}
	c.ongoingCommit[h.ProducerID] = true
	return false
}

// onControl reports whether a COMMIT or ABORT marker may be discarded
// (once its delete horizon has passed): no batch of its transaction was
// read in this pass. An ABORT marker kept for batches still present keeps
// its .txnindex entry. Other control types are never discarded here, as
// in Kafka (which knows no type 7); the barrier has its own rule.
func (c *cleanedTxns) onControl(h *batch.Header, typ batch.ControlType, known bool) bool {
	c.consumeUpTo(h.LastOffset())
	if !known {
		return true // an empty control batch was already cleaned
	}
	switch typ {
	case batch.ControlAbort:
		a, ok := c.ongoingAborted[h.ProducerID]
		delete(c.ongoingAborted, h.ProducerID)
		if ok && a.observed {
			c.kept = append(c.kept, a.txn)
			return false
		}
		return true
	case batch.ControlCommit:
		if c.ongoingCommit[h.ProducerID] {
			delete(c.ongoingCommit, h.ProducerID)
			return false
		}
		return true
	}
	return false
}

type abortedHeap []AbortedTxn

func (h abortedHeap) Len() int           { return len(h) }
func (h abortedHeap) Less(i, j int) bool { return h[i].FirstOffset < h[j].FirstOffset }
func (h abortedHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *abortedHeap) Push(x any)        { *h = append(*h, x.(AbortedTxn)) }
func (h *abortedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
