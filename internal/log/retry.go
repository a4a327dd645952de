package log

import (
	"errors"
	"io/fs"
	"syscall"

	"go.uber.org/zap"
)

// Which storage failures take a log offline for writes, and which leave
// it writable (the Append fails, KAFKA_STORAGE_ERROR, and the client's
// retry is tried again):
//
//   - a failed fsync: offline. The kernel may have dropped the dirty pages
//     it could not write and report success to the next fsync, so what the
//     page cache holds can no longer be trusted to reach the disk.
//   - a failed write of records refused for lack of space (ENOSPC,
//     EDQUOT): writable, once the segment is cut back to its size before
//     the write. Nothing of the failed write remains, and what was
//     written before it is untouched: the next write after space is freed
//     appends where the log ends. If the cut fails, offline.
//   - a failed creation of a new segment in a roll (EACCES, ENOSPC,
//     EMFILE, ...): writable, once whatever the attempt created is
//     removed. Nothing was written to the log; the next Append retries
//     the roll. If what was created cannot be removed, offline.
//   - a failed opening or creation, in a roll, of the old segment's index
//     files (created lazily, so a roll may be the first to write one: a
//     read-only directory refuses it as it refuses the new segment):
//     writable. Nothing was written; the sealing entries stay pending in
//     memory and the next Append's roll writes them.
//   - anything else (a write failing with EIO, an index that cannot be
//     written): offline, since the files may no longer match memory.
//
// While a log is offline it serves reads below its flushed offset only
// (see firstView) and refuses writes with ErrStorage until a restart,
// whose recovery checks the files.

// retryableWrite reports whether a failed segment write may leave the
// log writable (after cutting the segment back).
func retryableWrite(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// undoWriteLocked cuts seg back to saved after a write that failed with a
// retryable error, restoring its indexes and counters; the log stays
// writable. It returns the failure that took the log offline instead if
// the cut fails.
func (l *Log) undoWriteLocked(seg *segment, saved *segment, offN, timeN int64, cause error) error {
	if terr := seg.log.Truncate(saved.size); terr != nil {
		l.logger.Error("cannot cut a failed write", zap.String("segment", seg.logPath), zap.Error(terr))
		return l.failLocked(storageErr("write", seg.logPath, cause))
	}
	seg.offIdx.truncateEntries(offN)
	seg.timeIdx.truncateEntries(timeN)
	seg.nextOffset, seg.maxTs, seg.maxTsOffset = saved.nextOffset, saved.maxTs, saved.maxTsOffset
	seg.rollTs, seg.bytesSinceIndex = saved.rollTs, saved.bytesSinceIndex
	l.retryableFailures++
	l.logger.Warn("segment write refused for lack of space: cut back, the log stays writable",
		zap.String("segment", seg.logPath), zap.Error(cause))
	return nil
}

// failedRollLocked handles a roll whose new segment could not be created:
// the files the attempt may have left are removed and the log stays
// writable (the next Append retries the roll); if they cannot be removed,
// the log goes offline.
func (l *Log) failedRollLocked(base int64, cause error) error {
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		path := segmentFileName(l.dir, base, suffix)
		if err := l.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.logger.Error("cannot remove what a failed roll created", zap.String("file", path), zap.Error(err))
			return l.failLocked(cause)
		}
	}
	l.retryableFailures++
	l.logger.Warn("segment roll failed before anything was written: the log stays writable and retries it",
		zap.Int64("base", base), zap.Error(cause))
	return cause
}

// failedSealLocked handles a roll that could not write the old segment's
// index entries: when the index file could not be opened or created
// (errIndexOpen) the entries stay pending and the log stays writable (the
// next Append retries the roll); any other failure takes it offline.
func (l *Log) failedSealLocked(old *segment, cause error) error {
	if !errors.Is(cause, errIndexOpen) || l.opts.private.storageFailuresFatal {
		return l.failLocked(cause)
	}
	l.retryableFailures++
	l.logger.Warn("segment roll could not open the old segment's index: the log stays writable and retries it",
		zap.String("segment", old.logPath), zap.Error(cause))
	return cause
}

// Offline returns the storage failure that took the log offline for
// writes, or nil.
func (l *Log) Offline() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// RetryableFailures counts the storage failures that left the log
// writable (a failed roll or a write refused for lack of space).
func (l *Log) RetryableFailures() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.retryableFailures
}
