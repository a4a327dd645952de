package partition

import "github.com/minibroker/minibroker/internal/batch"

// WriteFailoverAbort appends an ABORT marker that a mirror's failover
// writes for a transaction left open in the mirrored log (KIP-1279's
// abort-open-transactions): origin COORDINATOR, the producer's epoch and
// coordinator epoch as its producer-state entry has them. The first
// marker of a failover (newEpoch) starts a leader epoch one above every
// epoch in the log, as the barrier does, and the markers after it stay in
// that epoch: they are this node's history, not the source's, and a
// failback's divergence search must cut them.
func (p *Partition) WriteFailoverAbort(producerID int64, epoch int16, coordinatorEpoch int32, newEpoch bool) (int64, error) {
	raw := batch.EndTxnBatch(false, producerID, epoch, coordinatorEpoch, p.now().UnixMilli())
	return p.appendControl(raw, newEpoch)
}

// AbortMarkerAt reports whether the batch at offset is an ABORT marker,
// and whose.
func (p *Partition) AbortMarkerAt(offset int64) (producerID int64, ok bool, err error) {
	if offset >= p.Offsets().LogEnd {
		return 0, false, nil
	}
	raw, err := p.log.Read(offset, 1, true)
	if err != nil {
		return 0, false, err
	}
	b, h, found := batch.NewIter(raw).Next()
	if !found || h.BaseOffset != offset || !h.IsControl() || !h.IsTransactional() {
		return 0, false, nil
	}
	c, err := batch.ReadControl(b)
	if err != nil || c.Type != batch.ControlAbort {
		return 0, false, nil
	}
	return h.ProducerID, true, nil
}
