package log

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
)

// TruncateTo removes everything at and after offset: log data, index
// entries, leader epochs and aborted transactions. A batch that holds
// offset goes whole, and the log end offset afterwards is where the
// remaining data ends: offset itself when it is a batch boundary, the base
// of the batch that held it, or less when offset lay in a gap of a
// compacted log. Offset at or
// past the log end is a no-op; offset below the log start empties the log
// and restarts it at offset.
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	if err := l.waitSpans(offset); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if offset >= l.leo {
		return nil
	}
	if offset <= l.segments[0].base || offset < l.logStart {
		l.logger.Info("truncating the whole log", zap.Int64("restartAt", offset))
		keepStart := l.logStart
		if err := l.resetLocked(offset); err != nil {
			return err
		}
		if offset > keepStart {
			l.logStart = offset
		}
		return nil
	}
	i := l.segmentIndex(offset)
	// A failure part way must leave, on disk, a prefix of the log: later
	// segments go first, newest first, and their removal is made durable
	// before segment i is cut; then the cut is fsynced, older segments
	// first. After a failure the in-memory end is pulled back to what is
	// left, and the log is offline.
	fail := func(err error) error {
		l.leo = min(l.leo, l.active().nextOffset)
		l.flushed = min(l.flushed, l.leo)
		l.recoveryPoint = min(l.recoveryPoint, l.leo)
		return l.failLocked(err)
	}
	if len(l.segments) > i+1 {
		for len(l.segments) > i+1 {
			last := l.segments[len(l.segments)-1]
			l.segments = l.segments[:len(l.segments)-1]
			if err := last.remove(l.fs); err != nil {
				return fail(err)
			}
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fail(storageErr("fsync", l.dir, err))
		}
	}
	s := l.segments[i]
	if err := l.truncateSegmentLocked(s, offset); err != nil {
		return fail(err)
	}
	if s.size == 0 && i > 0 {
		// The segment lost all its batches: drop it, so that the log end
		// is where the data ends, in the previous segment.
		l.segments = l.segments[:i]
		if err := s.remove(l.fs); err != nil {
			return fail(err)
		}
		l.dirDirty = true
		s = l.segments[i-1]
		if err := s.loadTail(); err != nil {
			return fail(err)
		}
	}
	l.leo = s.nextOffset
	// Make the cut durable now: after a power loss the truncated batches
	// must not come back (a mirror truncates at a divergence point).
	var targets []syncTarget
	var err error
	for _, seg := range l.segments {
		var created bool
		targets, created, err = seg.syncTargets(targets, true)
		l.dirDirty = l.dirDirty || created
		if err != nil {
			return fail(err)
		}
	}
	if err := syncAll(targets); err != nil {
		return fail(err)
	}
	if l.dirDirty {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fail(storageErr("fsync", l.dir, err))
		}
		l.dirDirty = false
	}
	l.flushed = min(l.flushed, l.leo)
	if err := l.lowerRecoveryPointLocked(l.leo); err != nil {
		return fail(err)
	}
	l.releaseWaitersLocked()
	if l.epochs.truncateFromEnd(l.leo) {
		if err := l.writeEpochsLocked(); err != nil {
			return l.failLocked(err)
		}
	}
	l.logger.Info("truncated log", zap.Int64("offset", offset), zap.Int64("logEndOffset", l.leo))
	return nil
}

// truncateSegmentLocked cuts s before its first batch whose last offset
// is >= offset. Index entries are checked against the data before they
// are trusted, and indexes that disagree with it are rebuilt.
func (l *Log) truncateSegmentLocked(s *segment, offset int64) error {
	v := s.view()
	h, pos, found, err := findBatch(v, offset, true)
	if err != nil {
		h, pos, found, err = findBatch(v, offset, false)
	}
	if err != nil {
		return err
	}
	if err := s.txn.truncateTo(offset); err != nil {
		return err
	}
	if !found {
		return nil
	}
	if err := s.truncateFile(pos); err != nil {
		return err
	}
	s.markDirty()
	if err := s.offIdx.truncateToPosition(pos); err != nil {
		return err
	}
	if err := s.timeIdx.truncateToOffset(h.BaseOffset); err != nil {
		return err
	}
	s.nextOffset, s.rollTs, s.bytesSinceIndex = s.base, -1, 0
	err = s.loadTail()
	if err == nil {
		err = s.verifyLastEntries()
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		return err
	}
	l.logger.Warn("index disagrees with the segment after truncation: rebuilding", zap.Error(err))
	cut, err := l.recoverSegment(s, s.base)
	if err != nil {
		return err
	}
	if errors.As(cut, &ce) {
		l.logger.Warn("damaged data below the truncation point: cutting there", zap.Error(cut))
		return l.truncateSegmentFile(s, ce.Offset)
	}
	return nil
}

// DeleteRecordsBefore advances the log start offset to offset (Kafka's
// DeleteRecords) and deletes the segments wholly below it.
func (l *Log) DeleteRecordsBefore(offset int64) error {
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if offset > l.leo {
		return fmt.Errorf("%w: delete records before %d past log end %d", ErrOffsetOutOfRange, offset, l.leo)
	}
	if offset <= l.logStart {
		return nil
	}
	if err := writeOffsetFile(l.fs, l.dir, logStartOffsetName, offset); err != nil {
		return l.failLocked(err)
	}
	l.logStart = offset
	n := 0
	for n+1 < len(l.segments) && l.segments[n+1].base <= offset {
		n++
	}
	return l.deleteOldestLocked(n, "log start offset")
}

// ApplyRetention deletes the oldest segments that are past log.retention.ms
// or beyond log.retention.bytes (Kafka's deleteRetentionMsBreachedSegments
// and deleteRetentionSizeBreachedSegments), never the active segment.
func (l *Log) ApplyRetention() (int, error) {
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, err
	}
	now := l.opts.Now().UnixMilli()
	n, reason := 0, ""
	if l.cfg.RetentionMs >= 0 && !l.cfg.NoDelete {
		for n+1 < len(l.segments) {
			s := l.segments[n]
			ts := s.maxTs
			if ts < 0 {
				ts = s.created.UnixMilli()
			}
			if now-ts <= l.cfg.RetentionMs {
				break
			}
			n++
		}
		if n > 0 {
			reason = "retention.ms"
		}
	}
	if l.cfg.RetentionBytes >= 0 && !l.cfg.NoDelete {
		var total int64
		for _, s := range l.segments {
			total += s.size
		}
		diff := total - l.cfg.RetentionBytes
		k := 0
		for k+1 < len(l.segments) && diff-l.segments[k].size >= 0 {
			diff -= l.segments[k].size
			k++
		}
		if k > n {
			n, reason = k, "retention.bytes"
		}
	}
	for n+1 < len(l.segments) && l.segments[n+1].base <= l.logStart {
		n++
		if reason == "" {
			reason = "log start offset"
		}
	}
	if n == 0 {
		return 0, nil
	}
	return n, l.deleteOldestLocked(n, reason)
}

// deleteOldestLocked removes the n oldest segments (never the active one)
// and moves the log start offset and epoch cache along.
func (l *Log) deleteOldestLocked(n int, reason string) error {
	n = min(n, len(l.segments)-1)
	for _, s := range l.segments[:n] {
		l.logger.Info("deleting segment", zap.Int64("base", s.base), zap.Int64("bytes", s.size), zap.String("reason", reason))
		if err := s.remove(l.fs); err != nil {
			return l.failLocked(err)
		}
		l.dirDirty = true
	}
	l.segments = append(l.segments[:0:0], l.segments[n:]...)
	l.logStart = max(l.logStart, l.segments[0].base)
	if l.epochs.truncateFromStart(l.logStart) {
		if err := l.writeEpochsLocked(); err != nil {
			return l.failLocked(err)
		}
	}
	return nil
}
