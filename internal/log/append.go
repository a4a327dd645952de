package log

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/batch"
)

// AppendResult describes a successful Append.
type AppendResult struct {
	FirstOffset, LastOffset, LogEndOffset int64
	MaxTimestamp                          int64
}

// framed is one batch of an Append: its header and byte range in the input.
type framed struct {
	h          batch.Header
	start, end int
}

// parseFraming checks that data is a whole number of v2 batches with
// increasing offsets. CRCs are the caller's business.
func parseFraming(data []byte, hs []framed) ([]framed, error) {
	p := 0
	next := int64(-1)
	for p < len(data) {
		rest := data[p:]
		if len(rest) < batch.HeaderSize {
			return nil, fmt.Errorf("%w: %d trailing bytes at %d", ErrInvalidBatch, len(rest), p)
		}
		size, _ := batch.SizeOf(rest) // rest holds a header
		if size < batch.HeaderSize || size > int64(len(rest)) {
			return nil, fmt.Errorf("%w: batch length %d at %d", ErrInvalidBatch, size-batch.LogOverhead, p)
		}
		h, err := batch.ParseHeader(rest[:size])
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
		}
		if h.NumRecords < 0 || !offsetsSane(&h) {
			return nil, fmt.Errorf("%w: negative offset, delta or count at %d", ErrInvalidBatch, p)
		}
		if h.BaseOffset < next {
			return nil, fmt.Errorf("%w: base offset %d after last offset %d", ErrInvalidBatch, h.BaseOffset, next-1)
		}
		next = h.LastOffset() + 1
		hs = append(hs, framed{h: h, start: p, end: p + int(size)})
		p += int(size)
	}
	if len(hs) == 0 {
		return nil, fmt.Errorf("%w: no batches", ErrInvalidBatch)
	}
	return hs, nil
}

// Append writes batches whose base offsets the caller has set: the first
// at or above LogEndOffset, each next above the previous one's last
// offset (gaps are allowed, as compacted mirrored data has them). It
// validates framing, not CRCs. It maintains the indexes, rolls segments
// and feeds the leader-epoch cache. It never waits for an fsync: when
// log.flush.interval.messages is reached it wakes the background flusher,
// and callers that must not acknowledge before the data is durable call
// WaitFlushed(res.LogEndOffset) outside their own locks.
//
// The bytes Append writes count as unverified: the first read that
// returns them checks their CRCs. Callers that have checked them use
// AppendVerified.
func (l *Log) Append(data []byte) (AppendResult, error) {
	return l.append(data, false)
}

// AppendVerified is Append for batches whose CRCs the caller has checked
// (batch.Validate), or computed itself, and not changed since in the
// bytes the CRC covers (base offset and partition leader epoch lie
// outside it). Their bytes count as verified: reads serve them without a
// CRC pass for the rest of the process lifetime (see doc.go, "Reads").
// Calling it with batches that were not checked lets damage in them reach
// consumers unreported.
func (l *Log) AppendVerified(data []byte) (AppendResult, error) {
	return l.append(data, true)
}

func (l *Log) append(data []byte, checked bool) (AppendResult, error) {
	var stack [8]framed
	hs, err := parseFraming(data, stack[:0])
	if err != nil {
		return AppendResult{}, err
	}
	res, rolled, needFlush, err := l.appendFramed(data, hs, checked)
	if err != nil {
		return res, err
	}
	// Callbacks and the flusher run with no Log lock held, so OnRoll may
	// call back into the Log.
	if l.opts.OnRoll != nil {
		for _, base := range rolled {
			l.opts.OnRoll(base)
		}
	}
	if len(rolled) > 0 || needFlush {
		l.flusher.kick(len(rolled) > 0)
	}
	return res, nil
}

// appendFramed writes the parsed batches under appendMu and returns the
// bases of the segments it rolled to and whether a flush is due. checked:
// the caller checked the batches' CRCs (AppendVerified).
func (l *Log) appendFramed(data []byte, hs []framed, checked bool) (res AppendResult, rolled []int64, needFlush bool, err error) {
	first, last := &hs[0].h, &hs[len(hs)-1].h
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	// mu is held from here to the return, released only inside outsideMu
	// (the writes, the roll's fsync, an empty log's restart), which takes
	// it back even when they panic: this one deferred Unlock then releases
	// it, so a panic recovered by the connection leaves no Log lock held.
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendResult{}, nil, false, err
	}
	if first.BaseOffset < l.leo {
		return AppendResult{}, nil, false, fmt.Errorf("%w: base offset %d below log end offset %d", ErrInvalidBatch, first.BaseOffset, l.leo)
	}
	if first.BaseOffset > l.leo && l.emptyLocked() {
		// An empty log adopts the first batch's offset as its start (a
		// mirror starting at the source's log start offset).
		l.outsideMu(func() { err = l.restartEmptyAt(first.BaseOffset) })
		if err != nil {
			return AppendResult{}, nil, false, err
		}
		if err := l.writableLocked(); err != nil {
			return AppendResult{}, nil, false, err
		}
		if first.BaseOffset < l.leo {
			return AppendResult{}, nil, false, fmt.Errorf("%w: base offset %d below log end offset", ErrInvalidBatch, first.BaseOffset)
		}
	}

	res = AppendResult{FirstOffset: first.BaseOffset, LastOffset: last.LastOffset(), MaxTimestamp: -1}
	now := l.opts.Now()
	seg := l.active()
	runFirst := 0
	for k := range hs {
		f := &hs[k]
		res.MaxTimestamp = max(res.MaxTimestamp, f.h.MaxTimestamp)
		runBytes := int64(f.start - hs[runFirst].start) // written before f in this run
		if seg.fits(runBytes, int64(f.end-f.start), f.h.LastOffset(), &l.cfg) && !seg.timeToRoll(&f.h, now, &l.cfg) {
			continue
		}
		// A failed run or roll ends the Append: runs already written stay
		// (the log end offset covers them) and their leader epochs stay in
		// the cache, pending for the next full flush like any other.
		if err := l.writeRunLocked(seg, data, hs[runFirst:k], checked); err != nil {
			return AppendResult{}, nil, false, err
		}
		seg, err = l.rollLocked(f.h.BaseOffset, now)
		if err != nil {
			return AppendResult{}, nil, false, err
		}
		rolled = append(rolled, f.h.BaseOffset)
		runFirst = k
	}
	if err := l.writeRunLocked(seg, data, hs[runFirst:], checked); err != nil {
		return AppendResult{}, nil, false, err
	}
	res.LogEndOffset = l.leo
	needFlush = l.leo-l.flushed >= l.cfg.FlushIntervalMessages
	// A new leader epoch is not written to leader-epoch-checkpoint here:
	// the next full flush writes it before the recovery point passes it
	// (see epochsChangedLocked).
	return res, rolled, needFlush, nil
}

// outsideMu runs fn with mu released and takes mu back when fn returns
// or panics, so that a caller holding mu by a deferred Unlock stays
// balanced either way. Called with appendMu and mu held.
func (l *Log) outsideMu(fn func()) {
	l.mu.Unlock()
	defer l.mu.Lock()
	fn()
}

// writeRunLocked writes hs (contiguous in data) to seg with one write and
// indexes them. Called with appendMu and mu held; mu is released during
// the write. On failure the segment is cut back to its committed size
// (best effort) and the log goes offline for writes. With checked the
// written bytes count as verified (AppendVerified).
func (l *Log) writeRunLocked(seg *segment, data []byte, hs []framed, checked bool) error {
	if len(hs) == 0 {
		return nil
	}
	chunk := data[hs[0].start:hs[len(hs)-1].end]
	offN, timeN := seg.offIdx.n, seg.timeIdx.n
	saved := *seg
	undo := func(cause error) error {
		err := l.failLocked(cause)
		if terr := seg.log.Truncate(saved.size); terr != nil {
			l.logger.Error("cannot cut a failed write", zap.String("segment", seg.logPath), zap.Error(terr))
		}
		seg.offIdx.truncateEntries(offN)
		seg.timeIdx.truncateEntries(timeN)
		seg.nextOffset, seg.maxTs, seg.maxTsOffset = saved.nextOffset, saved.maxTs, saved.maxTsOffset
		seg.rollTs, seg.bytesSinceIndex = saved.rollTs, saved.bytesSinceIndex
		return err
	}
	// The write runs without mu so that readers are not held up by it:
	// appendMu keeps every other writer out, and readers never look past
	// the committed size, which moves only below.
	var n int
	var err error
	segmentBytes, prealloc := l.cfg.SegmentBytes, l.cfg.Preallocate
	l.outsideMu(func() {
		if prealloc {
			seg.preallocate(int64(len(chunk)), segmentBytes)
		}
		n, err = seg.log.Write(chunk)
	})
	if err == nil && n != len(chunk) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(chunk))
	}
	if err != nil && l.failed == nil && retryableWrite(err) && !l.opts.private.storageFailuresFatal {
		if rerr := l.undoWriteLocked(seg, &saved, offN, timeN, err); rerr != nil {
			return rerr
		}
		return storageErr("write", seg.logPath, err) // retryable: the log stays writable (retry.go)
	}
	if err != nil {
		return undo(storageErr("write", seg.logPath, err))
	}
	if l.failed != nil { // an fsync failed meanwhile
		return undo(l.failed)
	}
	pos := seg.size
	interval := int64(l.cfg.IndexIntervalBytes)
	for k := range hs {
		if err := seg.indexBatch(&hs[k].h, pos, interval); err != nil {
			return undo(err)
		}
		pos += int64(hs[k].end - hs[k].start)
	}
	// Only now, once the write has succeeded: the undo above leaves the
	// verification untouched.
	seg.verified.appended(seg.size, pos, checked)
	seg.size = pos
	seg.dirty, seg.idxDirty = true, true
	if l.writebackDue(seg) && l.flusher != nil {
		l.flusher.kickWriteback()
	}
	// The run is in the log: it counts even if a later run of the same
	// Append fails.
	l.leo = hs[len(hs)-1].h.LastOffset() + 1
	for k := range hs {
		if l.epochs.assign(hs[k].h.PartitionLeaderEpoch, hs[k].h.BaseOffset) {
			l.epochsChangedLocked(hs[k].h.BaseOffset)
		}
	}
	return nil
}

// rollLocked makes a new active segment at base (Kafka's roll). The old
// segment gets its final time-index entry and an offset-index entry for
// its last batch, and its data and indexes are fsynced in the background,
// as Kafka does: a roll fsyncs nothing on the append path. If a power loss
// then keeps the new segment's data but not the old segment's tail,
// recovery sees that the new segment starts past the old one's end above
// the recovery point and cuts the log there instead of serving a hole
// (recover). A roll to a base past the old segment's end (a mirrored
// batch after a gap in the source's offsets) is the one gap recovery must
// keep: that roll first makes the log durable and moves the recovery point
// to base (syncForGapRollLocked), so the gap lies below it.
func (l *Log) rollLocked(base int64, now time.Time) (*segment, error) {
	old := l.active()
	if err := old.maybeAppendTimeEntry(); err != nil {
		return nil, l.failedSealLocked(old, err)
	}
	if base <= old.base {
		return nil, fmt.Errorf("%w: cannot roll to base %d below active segment %d", ErrInvalidBatch, base, old.base)
	}
	if err := old.sealIndex(); err != nil {
		return nil, l.failedSealLocked(old, err)
	}
	// The sealing entries and the time index file the sealed offset index
	// requires (checkIndexFiles) wait for the roll's background full
	// flush, which must find them even when one ran since the segment's
	// last append. The blocks reserved past the old segment's data are
	// given back there too (trimRolled): a truncation, like an fsync, can
	// wait on the file system's journal, behind the writeback of
	// everything written before it.
	old.idxDirty = true
	if base > old.nextOffset {
		if err := l.syncForGapRollLocked(base); err != nil {
			return nil, err
		}
	}
	s, err := openSegment(l.fs, l.dir, base, true, now)
	if err != nil && l.opts.private.storageFailuresFatal {
		return nil, l.failLocked(err)
	}
	if err != nil {
		return nil, l.failedRollLocked(base, err)
	}
	l.segments = append(l.segments, s)
	l.dirDirty = true
	l.logger.Debug("rolled segment", zap.Int64("base", base))
	return s, nil
}

// emptyLocked reports whether the log holds no data at all.
func (l *Log) emptyLocked() bool {
	return len(l.segments) == 1 && l.segments[0].size == 0
}

// restartEmptyAt replaces the (empty) log with one starting at offset.
func (l *Log) restartEmptyAt(offset int64) error {
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if !l.emptyLocked() || offset <= l.leo {
		return nil // someone appended meanwhile; Append rechecks
	}
	return l.resetLocked(offset)
}

// resetLocked deletes every segment and starts an empty log at offset.
// Caller holds truncMu for writing and mu.
func (l *Log) resetLocked(offset int64) error {
	for len(l.segments) > 0 { // newest first: a failure leaves a prefix
		last := l.segments[len(l.segments)-1]
		l.segments = l.segments[:len(l.segments)-1]
		if err := last.remove(l.fs); err != nil {
			l.segments = append(l.segments, last) // keep a valid list
			return l.failLocked(err)
		}
	}
	l.segments = nil
	l.dirDirty = true
	s, err := openSegment(l.fs, l.dir, offset, true, l.opts.Now())
	if err != nil {
		return l.failLocked(err)
	}
	l.segments = []*segment{s}
	l.leo, l.logStart = offset, offset
	l.flushed = min(l.flushed, offset)
	if err := l.lowerRecoveryPointLocked(offset); err != nil {
		return l.failLocked(err)
	}
	l.releaseWaitersLocked()
	if err := writeOffsetFile(l.fs, l.dir, logStartOffsetName, offset); err != nil {
		return l.failLocked(err)
	}
	l.epochs.entries = nil
	if err := l.writeEpochsLocked(); err != nil { // also syncs the directory
		return l.failLocked(err)
	}
	l.dirDirty = false
	return nil
}

// AppendAbortedTxn records an aborted transaction in the .txnindex of the
// segment holding its last offset (its ABORT marker). Re-adding an entry
// that is already there is a no-op. The entry is kept in memory even when
// the file write fails (the log goes offline, as Kafka takes the log
// directory offline on an IOException) or the log is offline already: the
// marker is in the log, and the offline log still serves reads below its
// flushed offset, which read_committed must filter.
func (l *Log) AppendAbortedTxn(t AbortedTxn) error {
	if t.FirstOffset > t.LastOffset || t.FirstOffset < 0 {
		return fmt.Errorf("%w: aborted txn range %d..%d", ErrInvalidBatch, t.FirstOffset, t.LastOffset)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.closing {
		return ErrClosed
	}
	s := l.segments[l.segmentIndex(t.LastOffset)]
	if err := s.txn.add(t, l.failed == nil); err != nil {
		if errors.Is(err, ErrStorage) {
			return l.failLocked(err)
		}
		return err
	}
	if l.failed != nil {
		return l.failed
	}
	s.txnDirty = true
	return nil
}

// syncForGapRollLocked prepares a roll to base past the active segment's
// end (a gap in the offsets: only a mirror appends past the log end).
// Recovery cuts the log where a segment above the recovery point starts
// past its predecessor's end, since that is what a power loss that kept a
// later segment's data but not an earlier one's tail leaves behind; a
// legitimate gap must therefore lie below the recovery point. So before
// the new segment exists, everything written is fsynced (a full flush,
// with mu released; appendMu keeps writers out) and the recovery point is
// moved to base: nothing lies between the old end and base. Rare (a gap
// that coincides with a roll), so it may stall appends as the old roll's
// seal did. Called with appendMu and mu held.
func (l *Log) syncForGapRollLocked(base int64) error {
	if l.opts.private.gapRollSkipsSync {
		return nil
	}
	leo := l.leo
	var err error
	l.outsideMu(func() {
		if err = l.flush(true); err != nil {
			return
		}
		l.flushMu.Lock()
		defer l.flushMu.Unlock()
		l.mu.Lock()
		rp := l.recoveryPoint
		l.mu.Unlock()
		if rp < leo {
			err = fmt.Errorf("%w: recovery point %d below the log end %d after a full flush", ErrStorage, rp, leo)
			return
		}
		err = writeOffsetFile(l.fs, l.dir, recoveryPointName, base)
	})
	if err != nil {
		return l.failLocked(err)
	}
	if l.failed != nil {
		return l.failed
	}
	l.recoveryPoint = max(l.recoveryPoint, base)
	l.persistedRP = max(l.persistedRP, base)
	return nil
}
