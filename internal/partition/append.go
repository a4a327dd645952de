package partition

import (
	"errors"
	"fmt"
	"math"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/batch"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/psm"
)

// AppendResult is what a producer is told.
type AppendResult struct {
	BaseOffset     int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	Duplicate      bool // a retried batch answered with its original offsets
}

// AppendAsLeader appends a Produce request's records for one partition
// (origin CLIENT): the batches are validated, offsets and leader epoch
// assigned in place, producer state checked for the whole request before
// anything is written. records is modified (base offsets, epochs).
func (p *Partition) AppendAsLeader(records []byte) (AppendResult, error) {
	cfg := p.config() // one view of the topic's configs for the whole append
	batches, err := p.validateClientBatches(cfg, records)
	if err != nil {
		return AppendResult{}, err
	}

	res, err := p.appendClient(cfg, batches, records)
	p.writeRollSnapshots()
	if err != nil || res.Duplicate {
		return res, err
	}
	if err := p.advanceHighWatermark(res.LastOffset + 1); err != nil {
		return AppendResult{}, err
	}
	res.LogStartOffset = p.log.LogStartOffset()
	return res, nil
}

// appendClient assigns offsets and the leader epoch to a client's
// validated batches, checks producer state and writes them, holding
// appendMu (released by defer, so a panic recovered by the connection
// leaves the partition usable).
func (p *Partition) appendClient(cfg *Config, batches []psm.PreparedBatch, records []byte) (AppendResult, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	mode, mirror, epoch, closed := p.writeState()
	if closed {
		return AppendResult{}, ErrClosed
	}
	if mode == Mirrored {
		return AppendResult{}, &MirroredError{Mirror: mirror}
	}

	now := p.now().UnixMilli()
	next := p.log.LogEndOffset()
	base := next
	appendTime := int64(-1)
	for i := range batches {
		b := &batches[i]
		batch.SetBaseOffset(b.Raw, next)
		batch.SetPartitionLeaderEpoch(b.Raw, epoch)
		if cfg.LogAppendTime {
			setMaxTimestamp(b.Raw, now, true)
			appendTime = now
			b.Header.MaxTimestamp = now
		}
		b.Header.BaseOffset = next
		b.Header.PartitionLeaderEpoch = epoch
		next += int64(b.Header.LastOffsetDelta) + 1
	}
	pend, err := p.psm.Prepare(psm.OriginClient, batches, now)
	if err != nil {
		var dup *psm.DuplicateError
		if errors.As(err, &dup) {
			return AppendResult{BaseOffset: dup.FirstOffset, LastOffset: dup.LastOffset, LogAppendTime: appendTime,
				LogStartOffset: p.log.LogStartOffset(), Duplicate: true}, nil
		}
		return AppendResult{}, err
	}
	// Verified: validateClientBatches checked the CRC of every batch in
	// records, and since then only the base offset and leader epoch
	// (outside the CRC) changed, or setMaxTimestamp recomputed the CRC.
	res, err := p.log.AppendVerified(records)
	if err != nil {
		return AppendResult{}, fmt.Errorf("append: %w", err)
	}
	p.applyLocked(pend)
	return AppendResult{BaseOffset: base, LastOffset: res.LastOffset, LogAppendTime: appendTime}, nil
}

// writeState reads what an append needs to know under mu.
func (p *Partition) writeState() (mode Mode, mirror string, epoch int32, closed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.mirror, p.leaderEpoch, p.closed
}

// applyLocked applies producer-state changes after a successful log write
// and records aborted transactions in the transaction index. appendMu held.
func (p *Partition) applyLocked(pend *psm.Pending) {
	for _, t := range pend.Apply() {
		if !t.Aborted {
			continue
		}
		lso := p.log.LogEndOffset()
		if first, ok := p.psm.FirstUnstableOffset(); ok {
			lso = first
		}
		if err := p.log.AppendAbortedTxn(mlog.AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset,
			LastOffset: t.LastOffset, LastStableOffset: lso}); err != nil {
			p.logger.Error("transaction index append failed", zap.Error(err))
		}
	}
}

// advanceHighWatermark moves the high watermark to upTo once the bytes
// below it are as durable as the flush policy requires: with
// log.flush.interval.messages=1 consumers never see what a power loss
// could take back.
func (p *Partition) advanceHighWatermark(upTo int64) error {
	if p.config().Log.FlushIntervalMessages == 1 {
		// Concurrent producers share one fsync (group commit).
		if err := p.log.WaitFlushed(upTo); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if upTo > p.highWatermark {
		p.highWatermark = min(upTo, p.log.LogEndOffset())
	}
	p.updateLastStableLocked()
	p.signalLocked()
	return nil
}

// validateClientBatches checks a produce request's record set as Kafka
// does, with its error codes, before anything is assigned or written.
// First the request-level rules of ProduceRequest.validateRecords (v3+):
// exactly one batch, of magic 2 (INVALID_RECORD; bytes after the batch
// too short to be one are refused with it, where Kafka trims them).
// Then UnifiedLog.analyzeAndValidateRecords and LogValidator: the size
// limit (MESSAGE_TOO_LARGE), the CRC (CORRUPT_MESSAGE), then no control
// batch, a record count that matches the offset delta and is not zero, a
// sequence for a producer id, and every record (batch.CheckRecords), all
// INVALID_RECORD, but INVALID_TIMESTAMP when a record's timestamp is
// among the refusals.
func (p *Partition) validateClientBatches(cfg *Config, records []byte) ([]psm.PreparedBatch, error) {
	if len(records) < batch.LogOverhead {
		return nil, fmt.Errorf("%w: no record batch", ErrInvalidRecord)
	}
	size, _ := batch.SizeOf(records) // at least LogOverhead bytes
	switch {
	case size > int64(len(records)):
		return nil, fmt.Errorf("%w: no record batch (length %d with %d bytes)", ErrInvalidRecord, size, len(records))
	case size < batch.HeaderSize:
		return nil, fmt.Errorf("%w: a batch of %d bytes is smaller than its header", ErrCorrupt, size)
	case magic(records) != 2:
		return nil, fmt.Errorf("%w: magic %d (produce v3+ takes magic 2 only)", ErrInvalidRecord, magic(records))
	case size < int64(len(records)):
		return nil, fmt.Errorf("%w: more than one batch for the partition", ErrInvalidRecord)
	case cfg.MessageMaxBytes > 0 && size > int64(cfg.MessageMaxBytes):
		return nil, fmt.Errorf("%w: %d bytes > message.max.bytes %d", ErrTooLarge, size, cfg.MessageMaxBytes)
	}
	h, err := batch.Validate(records)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	switch {
	case h.IsControl():
		return nil, fmt.Errorf("%w: control batch from a client", ErrInvalidRecord)
	case h.NumRecords != h.LastOffsetDelta+1:
		return nil, fmt.Errorf("%w: %d records with last offset delta %d", ErrInvalidRecord, h.NumRecords, h.LastOffsetDelta)
	case h.NumRecords <= 0:
		return nil, fmt.Errorf("%w: %d records", ErrInvalidRecord, h.NumRecords)
	case h.HasProducer() && h.BaseSequence < 0:
		return nil, fmt.Errorf("%w: sequence %d for producer %d", ErrInvalidRecord, h.BaseSequence, h.ProducerID)
	}
	rules := batch.Rules{NeedKey: cfg.Compacted, CreateTime: !cfg.LogAppendTime,
		MinTimestamp: math.MinInt64, MaxTimestamp: math.MaxInt64}
	if rules.CreateTime && cfg.BoundTimestamps {
		rules.MinTimestamp, rules.MaxTimestamp = batch.TimestampBounds(p.now().UnixMilli(),
			cfg.TimestampBeforeMaxMs, cfg.TimestampAfterMaxMs)
	}
	maxTs, err := batch.CheckRecords(records, &h, rules)
	if err != nil {
		var refused *batch.RecordErrors
		if errors.As(err, &refused) && refused.Timestamp {
			return nil, fmt.Errorf("%w: %w", ErrInvalidTimestamp, err)
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
	if !cfg.LogAppendTime && (maxTs != h.MaxTimestamp || h.LogAppendTimeType()) {
		// LogValidator sets a CreateTime batch's max timestamp to its
		// records' largest, whatever the producer wrote, so that the time
		// index, ListOffsets by time and time retention read the truth.
		setMaxTimestamp(records, maxTs, false)
		crc, _ := batch.CRCOf(records) // validated: a whole batch
		h.MaxTimestamp, h.Attributes, h.CRC = maxTs, h.Attributes&^batch.AttrTimestampType, crc
	}
	return []psm.PreparedBatch{{Header: h, Raw: records}}, nil
}

// setMaxTimestamp writes a batch's max timestamp and timestamp type
// (LogAppendTime or CreateTime), recomputing the CRC, as Kafka's
// RecordBatch.setMaxTimestamp: for topics with
// message.timestamp.type=LogAppendTime it stamps the broker's time.
func setMaxTimestamp(raw []byte, ts int64, logAppendTime bool) {
	batch.SetMaxTimestamp(raw, ts, logAppendTime)
}

// magic is the magic byte of the batch at records (long enough: checked
// by the caller).
func magic(records []byte) int8 {
	m, _ := batch.MagicOf(records)
	return m
}

// AppendAsMirror appends batches fetched from a source cluster (origin
// REPLICATION): bytes and offsets kept exactly, producer state updated as a
// Kafka follower updates it, no validation beyond framing and CRC.
// Batches wholly below the log end (a refetch) are skipped.
func (p *Partition) AppendAsMirror(records []byte) (appended int, err error) {
	res, n, err := p.appendMirrored(records)
	p.writeRollSnapshots()
	if err != nil || n == 0 {
		return 0, err
	}
	// As for client appends: with log.flush.interval.messages=1 the high
	// watermark waits for the fsync.
	if err := p.advanceHighWatermark(res.LogEndOffset); err != nil {
		return 0, err
	}
	return n, nil
}

// appendMirrored appends the batches past the log end, holding appendMu.
func (p *Partition) appendMirrored(records []byte) (mlog.AppendResult, int, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	leo := p.log.LogEndOffset()
	var batches []psm.PreparedBatch
	start, end := -1, 0
	it := batch.NewIter(records)
	for raw, h, ok := it.Next(); ok; raw, h, ok = it.Next() {
		if h.LastOffset() < leo {
			continue
		}
		if _, err := batch.Validate(raw); err != nil {
			return mlog.AppendResult{}, 0, fmt.Errorf("%w: mirrored batch at %d: %v", ErrCorrupt, h.BaseOffset, err)
		}
		if start < 0 {
			if h.BaseOffset < leo {
				return mlog.AppendResult{}, 0, fmt.Errorf("%w: batch %d..%d straddles log end %d", ErrOffsetMismatch, h.BaseOffset, h.LastOffset(), leo)
			}
			start = it.Pos() - len(raw)
		}
		end = it.Pos()
		batches = append(batches, psm.PreparedBatch{Header: h, Raw: raw})
	}
	if it.Err() != nil {
		return mlog.AppendResult{}, 0, fmt.Errorf("%w: %v", ErrCorrupt, it.Err())
	}
	if len(batches) == 0 {
		return mlog.AppendResult{}, 0, nil
	}
	pend, err := p.psm.Prepare(psm.OriginReplication, batches, p.now().UnixMilli())
	if err != nil {
		return mlog.AppendResult{}, 0, err
	}
	// Verified: every batch in records[start:end] passed batch.Validate
	// above. (A batch skipped there as below the log end cannot lie in
	// the range: it would break the offset order, which Append rejects.)
	res, err := p.log.AppendVerified(records[start:end])
	if err != nil {
		return mlog.AppendResult{}, 0, fmt.Errorf("mirror append: %w", err)
	}
	p.applyLocked(pend)
	if e, ok := p.log.LatestEpoch(); ok {
		p.raiseLeaderEpoch(e)
	}
	return res, len(batches), nil
}

// WriteMarker appends a COMMIT or ABORT marker for a producer (origin
// COORDINATOR) and returns its offset.
func (p *Partition) WriteMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32) (int64, error) {
	raw := batch.EndTxnBatch(commit, producerID, epoch, coordinatorEpoch, p.now().UnixMilli())
	return p.appendControl(raw, false)
}

// AppendAsCoordinator appends one batch a coordinator built (origin
// COORDINATOR: the coordinators' records in their internal topics, plain
// or transactional with NO_SEQUENCE, as Kafka's coordinators write them)
// and returns its last offset. raw's CRC must be set; only its base
// offset and leader epoch are changed. The broker built the batch, so
// what AppendAsLeader checks of a client's (framing, CRC, record count,
// keys, timestamps) is not checked again; the size is, against the
// topic's max.message.bytes (MESSAGE_TOO_LARGE, nothing written), as
// Kafka's log checks every origin's batches.
func (p *Partition) AppendAsCoordinator(raw []byte) (int64, error) {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return 0, err
	}
	if limit := p.config().MessageMaxBytes; limit > 0 && len(raw) > int(limit) {
		return 0, fmt.Errorf("%w: %d bytes > max.message.bytes %d", ErrTooLarge, len(raw), limit)
	}
	off, err := p.appendControl(raw, false)
	if err != nil {
		return 0, err
	}
	return off + int64(h.LastOffsetDelta), nil
}

// WriteBarrier appends the MIRROR_PID_RESET barrier at a leader epoch one
// above every epoch in the log; later local writes use that epoch. Its
// append clears every producer entry. Returns the barrier's offset.
func (p *Partition) WriteBarrier(sourceClusterID string) (int64, error) {
	raw := batch.BarrierBatch(sourceClusterID, p.now().UnixMilli())
	return p.appendControl(raw, true)
}

func (p *Partition) appendControl(raw []byte, newEpoch bool) (int64, error) {
	off, err := p.appendControlBatch(raw, newEpoch)
	p.writeRollSnapshots()
	if err != nil {
		return 0, err
	}
	if err := p.advanceHighWatermark(off + 1); err != nil {
		return 0, err
	}
	return off, nil
}

// appendControlBatch writes a batch the broker built (a control batch,
// or a coordinator's records), holding appendMu, and returns its base
// offset.
func (p *Partition) appendControlBatch(raw []byte, newEpoch bool) (int64, error) {
	h, _ := batch.ParseHeader(raw)
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	_, _, epoch, closed := p.writeState()
	if closed {
		return 0, ErrClosed
	}
	if newEpoch {
		if e, ok := p.log.LatestEpoch(); ok && e >= epoch {
			epoch = e
		}
		epoch++
	}
	off := p.log.LogEndOffset()
	batch.SetBaseOffset(raw, off)
	batch.SetPartitionLeaderEpoch(raw, epoch)
	h.BaseOffset, h.PartitionLeaderEpoch = off, epoch
	pend, err := p.psm.Prepare(psm.OriginCoordinator, []psm.PreparedBatch{{Header: h, Raw: raw}}, p.now().UnixMilli())
	if err != nil {
		return 0, err
	}
	// Verified: the broker built raw (EndTxnBatch, BarrierBatch compute
	// its CRC) and changed only base offset and leader epoch since.
	if _, err := p.log.AppendVerified(raw); err != nil {
		return 0, fmt.Errorf("append control batch: %w", err)
	}
	p.applyLocked(pend)
	p.setLeaderEpoch(epoch)
	return off, nil
}

// RaiseLeaderEpoch makes e the partition's leader epoch if it is above
// the current one, with no batch: a mirror keeps a mirrored partition's
// epoch at or above its source's (KIP-1279's leader-epoch invariant) when
// the source's rose with no record. In memory only: the mirror's state
// keeps it and raises it again when the broker starts. The next batch
// this node writes itself (the barrier) takes an epoch above it.
func (p *Partition) RaiseLeaderEpoch(e int32) { p.raiseLeaderEpoch(e) }

// raiseLeaderEpoch makes e the leader epoch if it is above the current.
func (p *Partition) raiseLeaderEpoch(e int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leaderEpoch = max(p.leaderEpoch, e)
}

func (p *Partition) setLeaderEpoch(e int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leaderEpoch = e
}

// TruncateTo removes every record at and after offset and rebuilds producer
// state to that point (snapshot at or below it plus replay).
func (p *Partition) TruncateTo(offset int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if offset >= p.log.LogEndOffset() {
		return nil
	}
	p.snapshotWriteMu.Lock()
	defer p.snapshotWriteMu.Unlock()
	p.dropRollSnapshotsAfter(offset)
	if err := p.log.TruncateTo(offset); err != nil {
		return fmt.Errorf("truncate to %d: %w", offset, err)
	}
	if err := psm.DeleteSnapshotsAfter(p.fs, p.dir, offset); err != nil {
		return fmt.Errorf("truncate snapshots: %w", err)
	}
	if err := p.rebuildProducerStateLocked(p.log.LogEndOffset(), nil); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.highWatermark = min(p.highWatermark, p.log.LogEndOffset())
	if e, ok := p.log.LatestEpoch(); ok {
		p.leaderEpoch = max(p.leaderEpoch, e)
	}
	p.updateLastStableLocked()
	p.signalLocked()
	return nil
}

// DeleteRecordsBefore advances the log start offset (Kafka DeleteRecords).
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	mode, mirror, _, _ := p.writeState()
	hw := p.Offsets().HighWatermark
	if mode == Mirrored {
		return 0, &MirroredError{Mirror: mirror}
	}
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, mlog.ErrOffsetOutOfRange
	}
	if err := p.log.DeleteRecordsBefore(offset); err != nil {
		return 0, err
	}
	return p.log.LogStartOffset(), nil
}
