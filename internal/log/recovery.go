package log

import (
	"errors"
	"fmt"
	"io"

	"go.uber.org/zap"
)

// recoveryReadahead is the window recovery reads through.
const recoveryReadahead = 1 << 20

// recover validates every batch of segments[from:] (length, magic, CRC32C,
// offsets increasing), rebuilds their indexes, feeds the epoch cache, and
// cuts the log at the first invalid byte: the damaged segment is
// truncated there and every later segment is deleted. Kafka's
// LogLoader.recoverLog.
//
// After an unclean shutdown (afterCrash) the log is also cut where a power
// loss took a segment's tail while a later segment's data survived (the
// OS writes pages back in any order across files, and a roll fsyncs
// nothing before the new segment is written): above the recovery point rp
// a segment must start where the one before it ends, or it and every
// later segment are dropped. A gap in the offsets between segments is
// legitimate only below rp: a roll past the log end moves rp to the new
// segment first, and the cleaner keeps the last batch of every group of
// segments it cleans, so a cleaned segment still ends where the next one
// starts. A segment that
// was rolled away from must also hold the batch its sealing index entry
// names, if that entry reached the disk. After a clean shutdown nothing
// can be lost that way, and an index naming a missing batch is merely
// damaged.
func (l *Log) recover(from int, afterCrash bool, rp int64) error {
	expected := l.segments[from].base
	if from > 0 {
		expected = max(expected, l.segments[from-1].nextOffset)
	}
	for i := from; i < len(l.segments); i++ {
		s := l.segments[i]
		// A segment that was rolled away from names its last batch in its
		// offset index (sealIndex at roll, fsynced by the roll's
		// background flush).
		sealed, isSealed := s.offIdx.lastEntry()
		isSealed = isSealed && afterCrash && i < len(l.segments)-1 &&
			sealed.Offset >= s.base && sealed.Offset < l.segments[i+1].base
		var cut error
		// dropWhole: s holds nothing the log can keep, not even its
		// first byte, so the log ends where the segment before it does.
		dropWhole := false
		switch {
		case s.base < expected:
			cut = &CorruptionError{Segment: s.logPath, Offset: 0,
				Err: fmt.Errorf("segment base %d below previous segment's end %d", s.base, expected)}
			dropWhole = true
		case afterCrash && i > from && s.base > expected && s.base > rp && !l.opts.private.recoverKeepsGaps:
			cut = &CorruptionError{Segment: s.logPath, Offset: 0,
				Err: fmt.Errorf("segment base %d past previous segment's end %d above the recovery point %d: that segment's tail was lost", s.base, expected, rp)}
			dropWhole = true
		default:
			var err error
			cut, err = l.recoverSegment(s, expected)
			if err != nil {
				return err
			}
		}
		if cut == nil && isSealed && s.nextOffset <= sealed.Offset && sealed.Position >= s.size && !l.opts.private.recoverKeepsGaps {
			// Its tail never reached the disk while a later segment's data
			// did: cut here rather than leave a hole in the log.
			cut = &CorruptionError{Segment: s.logPath, Offset: s.size,
				Err: fmt.Errorf("segment ends at offset %d, its index names a batch ending at %d: tail lost", s.nextOffset-1, sealed.Offset)}
		}
		if cut == nil {
			expected = s.nextOffset
			continue
		}
		var ce *CorruptionError
		if !errors.As(cut, &ce) {
			return cut
		}
		if i > from && dropWhole {
			i--
		} else if err := l.truncateSegmentFile(s, ce.Offset); err != nil {
			return err
		}
		var removed []int64
		for _, later := range l.segments[i+1:] {
			removed = append(removed, later.base)
			if err := later.remove(l.fs); err != nil {
				return err
			}
		}
		l.segments = l.segments[:i+1]
		l.dirDirty = true
		l.logger.Warn("recovery cut the log at damaged data",
			zap.String("segment", ce.Segment), zap.Int64("position", ce.Offset),
			zap.Int64("newLogEndOffset", l.segments[i].nextOffset),
			zap.Int64s("deletedSegments", removed), zap.Error(ce.Err))
		break
	}
	// Trailing segments left empty: their data never reached the disk, so
	// the log ends in the segment before them.
	dropped := false
	for len(l.segments) > 1 && l.segments[len(l.segments)-1].size == 0 {
		last := l.segments[len(l.segments)-1]
		l.logger.Info("removing empty trailing segment", zap.Int64("base", last.base))
		if err := last.remove(l.fs); err != nil {
			return err
		}
		l.segments = l.segments[:len(l.segments)-1]
		l.dirDirty, dropped = true, true
	}
	if dropped {
		return l.active().loadTail()
	}
	return nil
}

// recoverSegment rescans s from the start, rebuilding its state and
// indexes. It returns the corruption that stops the scan (nil if the whole
// file is valid) and, separately, IO errors.
func (l *Log) recoverSegment(s *segment, expected int64) (cut error, err error) {
	s.nextOffset, s.maxTs, s.maxTsOffset, s.rollTs, s.bytesSinceIndex = s.base, -1, -1, -1, 0
	if err := s.offIdx.startRebuild(); err != nil {
		return nil, err
	}
	if err := s.timeIdx.startRebuild(); err != nil {
		return nil, err
	}
	sc := newScanner(s.log, s.logPath, 0, s.size, recoveryReadahead)
	interval := int64(l.cfg.IndexIntervalBytes)
	for {
		h, _, pos, serr := sc.next(true)
		if serr == io.EOF {
			break
		}
		var ce *CorruptionError
		if errors.As(serr, &ce) {
			cut = serr
			break
		}
		if serr != nil {
			return nil, storageErr("read", s.logPath, serr)
		}
		if h.BaseOffset < expected || h.LastOffset()-s.base > int64(^uint32(0)>>1) {
			cut = &CorruptionError{Segment: s.logPath, Offset: pos,
				Err: fmt.Errorf("batch offsets %d..%d do not follow %d", h.BaseOffset, h.LastOffset(), expected-1)}
			break
		}
		if err := s.indexBatch(&h, pos, interval); err != nil {
			return nil, err
		}
		l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		expected = h.LastOffset() + 1
	}
	// As a roll or Close does (and Kafka's LogSegment.recover): the last
	// time-index entry is the segment's max timestamp, which a later clean
	// open takes from it.
	if err := s.maybeAppendTimeEntry(); err != nil {
		return nil, err
	}
	if err := s.offIdx.flushPending(); err != nil {
		return nil, err
	}
	if err := s.timeIdx.flushPending(); err != nil {
		return nil, err
	}
	s.markDirty()
	// Every batch below the cut (the whole file without one) had its CRC
	// checked just now; the caller truncates the file at the cut.
	checkedTo := s.size
	if ce := (*CorruptionError)(nil); errors.As(cut, &ce) {
		checkedTo = min(checkedTo, ce.Offset)
	}
	s.verified = verification{prefixEnd: checkedTo, suffixStart: s.size}
	return cut, nil
}

// truncateSegmentFile cuts s's log file at pos (whose indexes were
// rebuilt only up to pos already) and fsyncs it.
func (l *Log) truncateSegmentFile(s *segment, pos int64) error {
	if err := s.truncateFile(pos); err != nil {
		return err
	}
	if err := s.log.Sync(); err != nil {
		return storageErr("fsync", s.logPath, err)
	}
	return nil
}

// rebuildEpochs rebuilds the leader-epoch cache from the batch headers of
// the whole log (used when the checkpoint is missing or unreadable).
func (l *Log) rebuildEpochs() {
	l.epochs.entries = nil
	for _, s := range l.segments {
		sc := newScanner(s.log, s.logPath, 0, s.size, 64<<10)
		for {
			h, _, _, err := sc.next(false)
			if err == io.EOF {
				break
			}
			if err != nil {
				l.logger.Warn("rebuilding leader epochs: unreadable batch", zap.Error(err))
				break
			}
			l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		}
	}
}
