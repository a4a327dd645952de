package psm

import (
	"fmt"
	"math"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/batch"
)

// PreparedBatch is one batch of an append, its offsets already assigned.
type PreparedBatch struct {
	Header batch.Header
	// Raw is the whole batch; only control batches need it (to read the
	// control record).
	Raw []byte
}

// Pending is the validated effect of one append, to Apply once the log
// write has succeeded (or to drop if it failed). It is owned by the Manager
// and valid until the next Prepare; any other mutation of the Manager
// (Clear, RemoveExpired, …) in between makes Apply panic.
type Pending struct {
	m       *Manager
	gen     uint64
	origin  Origin
	applied bool
	// barriers counts MIRROR_PID_RESET batches met; after the first, the
	// manager's state is ignored and work holds only producers seen after
	// the last barrier.
	barriers int
	work     []workEntry
	// index finds a producer in work once an append holds more than
	// smallWork producers (mirrored chunks and replays can hold many).
	index     map[int64]int
	completed []CompletedTxn
	anomalies []anomaly
	endOffset int64
	hasEnd    bool
}

// workEntry is a producer's state as this append leaves it.
type workEntry struct {
	state entryState
	// committed is the manager's entry the state was copied from; nil for
	// a producer the manager does not know (or after a barrier).
	committed     *entryState
	prevTxnOffset int64
}

type anomaly struct {
	kind   string
	pid    int64
	offset int64
	detail string
}

const smallWork = 8

func (p *Pending) reset(m *Manager, origin Origin) {
	m.gen++
	p.m, p.gen, p.origin, p.applied = m, m.gen, origin, false
	p.barriers = 0
	p.clearWork()
	p.completed = nil
	p.anomalies = nil
	p.endOffset, p.hasEnd = 0, false
}

func (p *Pending) clearWork() {
	p.work = p.work[:0]
	if p.index != nil {
		clear(p.index)
	}
}

// find returns pid's position in work, or -1.
func (p *Pending) find(pid int64) int {
	if len(p.work) > smallWork {
		if i, ok := p.index[pid]; ok {
			return i
		}
		return -1
	}
	for i := range p.work {
		if p.work[i].state.producerID == pid {
			return i
		}
	}
	return -1
}

// lookup returns the working state of pid, copying it from the manager on
// first use. The pointer is valid until the next lookup.
func (p *Pending) lookup(pid int64) *workEntry {
	if i := p.find(pid); i >= 0 {
		return &p.work[i]
	}
	p.work = append(p.work, workEntry{})
	switch n := len(p.work); {
	case n == smallWork+1:
		if p.index == nil {
			p.index = make(map[int64]int)
		}
		for i := range p.work[:n-1] {
			p.index[p.work[i].state.producerID] = i
		}
		p.index[pid] = n - 1
	case n > smallWork+1:
		p.index[pid] = n - 1
	}
	w := &p.work[len(p.work)-1]
	if p.barriers == 0 {
		w.committed = p.m.producers[pid]
	}
	if w.committed != nil {
		w.state = *w.committed
		w.prevTxnOffset = w.committed.txnFirstOffset
	} else {
		w.state = emptyEntry(pid)
		w.prevTxnOffset = -1
	}
	return w
}

func (p *Pending) anomaly(kind string, pid, offset int64, format string, args ...any) {
	p.anomalies = append(p.anomalies, anomaly{kind: kind, pid: pid, offset: offset,
		detail: fmt.Sprintf(format, args...)})
}

// Prepare validates the batches of one append (one produce request's data
// for the partition, one mirrored chunk, one marker or barrier) without
// changing the manager, and returns what Apply will do.
//
// For a CLIENT append, a batch that repeats one of its producer's retained
// batches makes the whole append a duplicate: Prepare returns (nil,
// *DuplicateError) and nothing must be written. As in Kafka, each batch is
// checked against the manager's state before this append (not against
// earlier batches of the same append), and the first duplicate found wins
// even if batches before it were new.
//
// nowMs stands in for a batch's timestamp when the batch carries none (-1),
// so such a producer does not expire at once.
func (m *Manager) Prepare(origin Origin, batches []PreparedBatch, nowMs int64) (*Pending, error) {
	p := &m.pending
	p.reset(m, origin)
	for i := range batches {
		b := &batches[i]
		h := &b.Header
		p.endOffset, p.hasEnd = h.LastOffset()+1, true
		var err error
		switch {
		case h.IsControl():
			err = p.control(h, b.Raw, nowMs)
		case h.ProducerID < 0:
			continue // NO_PRODUCER_ID: never tracked
		default:
			err = p.data(h, nowMs)
		}
		if err != nil {
			p.applied = true
			if m.metrics != nil {
				if _, dup := err.(*DuplicateError); dup {
					m.metrics.Duplicates.Inc()
				} else {
					m.metrics.ClientRejections.WithLabelValues(rejectionReason(err)).Inc()
				}
			}
			return nil, err
		}
	}
	return p, nil
}

func inSequence(lastSeq, nextSeq int32) bool {
	return int64(nextSeq) == int64(lastSeq)+1 || (nextSeq == 0 && lastSeq == math.MaxInt32)
}

// data handles one data batch of a producer (Kafka's
// ProducerAppendInfo.appendDataBatch, preceded for CLIENT appends by the
// duplicate lookup of UnifiedLog.analyzeAndValidateProducerState).
func (p *Pending) data(h *batch.Header, nowMs int64) error {
	pid, epoch := h.ProducerID, h.ProducerEpoch
	firstSeq, lastSeq := h.BaseSequence, h.LastSequence()
	w := p.lookup(pid)
	if p.origin == OriginClient && w.committed != nil {
		if d, ok := w.committed.findDuplicate(epoch, firstSeq, lastSeq); ok {
			return &DuplicateError{ProducerID: pid, FirstOffset: d.FirstOffset,
				LastOffset: d.LastOffset, Timestamp: d.Timestamp}
		}
	}
	s := &w.state
	if err := p.checkEpoch(s, epoch, h.BaseOffset); err != nil {
		return err
	}
	switch p.origin {
	case OriginClient:
		if err := checkSequence(w, epoch, firstSeq, h.BaseOffset); err != nil {
			return err
		}
	case OriginReplication:
		p.observeSequence(s, epoch, firstSeq, h.BaseOffset)
	}
	ts := h.MaxTimestamp
	if ts < 0 {
		ts = nowMs
	}
	s.addBatch(epoch, BatchMeta{FirstSeq: firstSeq, LastSeq: lastSeq, FirstOffset: h.BaseOffset,
		LastOffset: h.LastOffset(), Timestamp: ts}, p.m.cfg.MaxBatchesPerProducer)

	switch txn := h.IsTransactional(); {
	case s.txnFirstOffset >= 0 && !txn:
		if p.origin != OriginReplication {
			return fmt.Errorf("%w: non-transactional batch of producer %d at offset %d while its transaction from offset %d is open",
				ErrInvalidTxnState, pid, h.BaseOffset, s.txnFirstOffset)
		}
		// Kafka's follower fails here; a mirror keeps the transaction
		// open and the batch in the log, and says so.
		p.anomaly(AnomalyNonTxnDuringTxn, pid, h.BaseOffset,
			"non-transactional batch while the transaction from offset %d is open", s.txnFirstOffset)
	case s.txnFirstOffset < 0 && txn:
		s.txnFirstOffset = h.BaseOffset
	}
	return nil
}

// checkEpoch is Kafka's checkProducerEpoch: a lower epoch is fenced,
// except in replication where it is only reported.
func (p *Pending) checkEpoch(s *entryState, epoch int16, offset int64) error {
	if epoch >= s.epoch {
		return nil
	}
	if p.origin == OriginReplication {
		p.anomaly(AnomalyEpochRegression, s.producerID, offset,
			"epoch %d is smaller than the last seen epoch %d", epoch, s.epoch)
		return nil
	}
	return fmt.Errorf("%w: producer %d at offset %d has epoch %d, smaller than the last seen epoch %d",
		ErrInvalidProducerEpoch, s.producerID, offset, epoch, s.epoch)
}

// checkSequence is Kafka's ProducerAppendInfo.checkSequence for CLIENT
// appends.
func checkSequence(w *workEntry, epoch int16, firstSeq int32, offset int64) error {
	s := &w.state
	if epoch != s.epoch {
		// A new epoch starts at 0, unless the producer has no epoch at
		// all (unknown, expired, or its data retained away).
		if firstSeq != 0 && s.epoch != noEpoch {
			return fmt.Errorf("%w: producer %d at offset %d: new epoch %d (current %d) must start at sequence 0, got %d",
				ErrOutOfOrderSequence, s.producerID, offset, epoch, s.epoch, firstSeq)
		}
		return nil
	}
	// The working state holds the batches of this epoch added so far in
	// the append, else the manager's (an epoch change empties them), which
	// is exactly the "current last sequence" Kafka computes.
	lastSeq := s.lastSeq()
	committedEpoch := noEpoch
	if w.committed != nil {
		committedEpoch = w.committed.epoch
	}
	// Kafka lets a producer whose entry has no epoch write any sequence.
	if committedEpoch == noEpoch || inSequence(lastSeq, firstSeq) {
		return nil
	}
	return fmt.Errorf("%w: producer %d epoch %d at offset %d: sequence %d does not follow %d",
		ErrOutOfOrderSequence, s.producerID, epoch, offset, firstSeq, lastSeq)
}

// observeSequence reports, for REPLICATION appends, the sequence breaks
// that CLIENT validation would have refused. Kafka checks nothing here.
func (p *Pending) observeSequence(s *entryState, epoch int16, firstSeq int32, offset int64) {
	switch {
	case s.epoch == noEpoch || epoch < s.epoch || firstSeq < 0:
		// unknown producer; already reported as an epoch regression; or
		// data without sequences (written by a group coordinator)
	case epoch > s.epoch:
		if firstSeq != 0 {
			p.anomaly(AnomalyNewEpochSequence, s.producerID, offset,
				"new epoch %d (previous %d) starts at sequence %d", epoch, s.epoch, firstSeq)
		}
	case s.numBatches > 0 && !inSequence(s.lastSeq(), firstSeq):
		p.anomaly(AnomalySequenceGap, s.producerID, offset,
			"epoch %d: sequence %d does not follow %d", epoch, firstSeq, s.lastSeq())
	}
}

// control handles a control batch: COMMIT/ABORT markers end a transaction,
// MIRROR_PID_RESET clears every producer, other types are ignored.
func (p *Pending) control(h *batch.Header, raw []byte, nowMs int64) error {
	if p.origin == OriginClient {
		return fmt.Errorf("%w: at offset %d", ErrControlBatchFromClient, h.BaseOffset)
	}
	if h.NumRecords == 0 {
		return nil // Kafka: a control batch emptied by compaction does nothing
	}
	c, err := batch.ReadControl(raw)
	if err != nil {
		return p.malformed(h, err)
	}
	switch c.Type {
	case batch.ControlMirrorPidReset:
		if h.IsTransactional() {
			// Not a barrier by batch.IsBarrier's definition; ignored, as
			// the partition and dump-log also ignore it.
			if p.origin == OriginReplication {
				p.anomaly(AnomalyTransactionalBarrier, h.ProducerID, h.BaseOffset,
					"MIRROR_PID_RESET record in a transactional batch, ignored")
			}
			return nil
		}
		p.barriers++
		p.clearWork()
		return nil
	case batch.ControlCommit, batch.ControlAbort:
		if h.ProducerID < 0 {
			return nil
		}
		marker, err := c.EndTxnMarker()
		if err != nil {
			return p.malformed(h, err)
		}
		ts := h.MaxTimestamp
		if ts < 0 {
			ts = nowMs
		}
		return p.endTxn(h, marker.CoordinatorEpoch, c.Type == batch.ControlAbort, ts)
	}
	return nil
}

func (p *Pending) malformed(h *batch.Header, err error) error {
	if p.origin == OriginReplication {
		p.anomaly(AnomalyMalformedControl, h.ProducerID, h.BaseOffset, "undecodable control batch ignored: %v", err)
		return nil
	}
	return fmt.Errorf("%w at offset %d: %v", ErrMalformedControl, h.BaseOffset, err)
}

// endTxn is Kafka's ProducerAppendInfo.appendEndTxnMarker.
func (p *Pending) endTxn(h *batch.Header, coordinatorEpoch int32, aborted bool, ts int64) error {
	pid, offset := h.ProducerID, h.BaseOffset
	w := p.lookup(pid)
	s := &w.state
	if err := p.checkEpoch(s, h.ProducerEpoch, offset); err != nil {
		return err
	}
	if s.coordinatorEpoch > coordinatorEpoch {
		if p.origin != OriginReplication {
			return fmt.Errorf("%w: marker for producer %d at offset %d has coordinator epoch %d, older than %d",
				ErrTransactionCoordinatorFenced, pid, offset, coordinatorEpoch, s.coordinatorEpoch)
		}
		p.anomaly(AnomalyCoordinatorEpoch, pid, offset,
			"marker coordinator epoch %d is older than %d", coordinatorEpoch, s.coordinatorEpoch)
	}
	if s.txnFirstOffset >= 0 {
		// Kafka emits a CompletedTxn only for a transaction with data here.
		p.completed = append(p.completed, CompletedTxn{ProducerID: pid, FirstOffset: s.txnFirstOffset,
			LastOffset: offset, Aborted: aborted, LastStableOffset: p.stableOffsetAfter(pid, offset)})
	} else if p.origin == OriginReplication {
		p.anomaly(AnomalyMarkerWithoutTxn, pid, offset, "marker for a producer without an open transaction")
	}
	s.maybeUpdateEpoch(h.ProducerEpoch)
	s.coordinatorEpoch = coordinatorEpoch
	s.txnFirstOffset = -1
	s.lastTimestamp = ts
	return nil
}

// stableOffsetAfter is the LSO once pid's transaction ends at marker: the
// oldest other ongoing transaction as of this point of the append.
func (p *Pending) stableOffsetAfter(pid, marker int64) int64 {
	lso, found := int64(0), false
	consider := func(off int64) {
		if !found || off < lso {
			lso, found = off, true
		}
	}
	for i := range p.work {
		if s := &p.work[i].state; s.producerID != pid && s.txnFirstOffset >= 0 {
			consider(s.txnFirstOffset)
		}
	}
	if p.barriers == 0 {
		for other, off := range p.m.ongoing {
			if other != pid && p.find(other) < 0 {
				consider(off)
			}
		}
	}
	if !found {
		return marker + 1
	}
	return lso
}

// Apply makes the prepared append part of the manager's state and returns
// the transactions it completed, in log order. Call it once, after the log
// write succeeded.
func (p *Pending) Apply() []CompletedTxn {
	m := p.m
	if m == nil || p.applied || p.gen != m.gen {
		panic("psm: Apply of a stale or already applied Pending")
	}
	p.applied = true
	m.gen++
	if p.barriers > 0 {
		clear(m.producers)
		clear(m.ongoing)
		if m.metrics != nil {
			m.metrics.BarriersApplied.Add(float64(p.barriers))
		}
		m.logger.Info("psm: MIRROR_PID_RESET barrier applied, producer state cleared",
			zap.Stringer("origin", p.origin), zap.Int64("end_offset", p.endOffset))
	}
	for i := range p.work {
		w := &p.work[i]
		pid := w.state.producerID
		if w.committed != nil {
			*w.committed = w.state
		} else {
			s := w.state
			m.producers[pid] = &s
		}
		if txn := w.state.txnFirstOffset; txn != w.prevTxnOffset {
			if txn >= 0 {
				m.ongoing[pid] = txn
			} else {
				delete(m.ongoing, pid)
			}
		}
	}
	if p.hasEnd {
		m.mapEnd = p.endOffset
	}
	for _, a := range p.anomalies {
		if m.metrics != nil {
			m.metrics.ReplicationAnomalies.WithLabelValues(a.kind).Inc()
		}
		m.logger.Warn("psm: replication anomaly (possible producer id collision)",
			zap.String("kind", a.kind), zap.Int64("producer_id", a.pid),
			zap.Int64("offset", a.offset), zap.String("detail", a.detail))
	}
	return p.completed
}
