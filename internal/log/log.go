package log

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Log is one partition's segmented log.
//
// Locking: truncMu is held for reading by everything that does file IO
// outside mu (Read, Flush) and for writing by everything that truncates,
// closes or removes files (TruncateTo, retention, DeleteRecordsBefore,
// Close), so a reader never sees freed or reused bytes. mu guards the
// fields below it and is held for short critical sections, never across
// Append's write(2) or an fsync of segment data. appendMu serializes
// everything that changes files (Append writes outside mu under it).
// Order: appendMu, flushMu, truncMu, mu.
type Log struct {
	dir    string
	cfg    Config
	opts   Options
	fs     vfs.FS
	logger *zap.Logger

	appendMu sync.Mutex // serializes writers: Append, truncation, retention, Close
	flushMu  sync.Mutex // serializes Flush
	truncMu  sync.RWMutex

	mu       sync.Mutex
	segments []*segment // sorted by base; the last is active
	logStart int64
	leo      int64
	flushed  int64 // everything below is fsynced
	// hold: how far behind the end recent reads started, which the
	// drop-behind keeps cached (readhold.go).
	hold readHold
	// recoveryPoint: everything below is fsynced, indexes included.
	recoveryPoint int64
	// persistedRP is the value in the recovery-point file (-1: none).
	persistedRP int64
	epochs      epochCache
	// epochFileStale: leader-epoch-checkpoint differs from epochs; the
	// next full flush (or a truncation) rewrites it. epochsUnsavedFrom is
	// the lowest start offset of an entry the file may lack (math.MaxInt64:
	// none). The recovery point never passes it, so an unclean open
	// rescans, and reassigns, every entry the file may lack.
	epochFileStale    bool
	epochsUnsavedFrom int64
	failed            error // first write/fsync failure; appends refused after it
	retryableFailures int64 // storage failures that left the log writable (retry.go)
	closed            bool
	closing           bool // Close is flushing: writes refused, reads served
	dirDirty          bool // files were created or removed since the last dir fsync
	// Group commit: one WaitFlushed caller at a time runs the fsync
	// (committing); the others wait on commitDone (a sync.Cond on mu).
	committing bool
	commitDone *sync.Cond
	// spansOut counts the Spans handed out and not yet closed; TruncateTo
	// waits for them (span.go) on spansDrained, made by the waiter and
	// closed by the Span.Close that brings spansOut to 0.
	spansOut     int
	spansDrained chan struct{}

	flusher *flusher

	cleanState // the cleaner's (clean.go)
}

// Open opens the log in dir, creating dir if needed, and recovers it: a
// clean shutdown opens without scanning, otherwise every batch from the
// segment holding opts.RecoveryPoint onwards is validated and the log is
// cut at the first damaged byte.
func Open(dir string, cfg Config, opts Options) (*Log, error) {
	cfg = cfg.normalized()
	opts = opts.normalized()
	l := &Log{dir: dir, cfg: cfg, opts: opts, fs: opts.FS,
		logger: opts.Logger.WithLazy(zap.String("log", dir)), epochsUnsavedFrom: math.MaxInt64}
	l.commitDone = sync.NewCond(&l.mu)
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, storageErr("mkdir", dir, err)
	}
	if err := l.load(); err != nil {
		for _, s := range l.segments {
			s.close()
		}
		return nil, err
	}
	l.flusher = startFlusher(l, cfg.flushInterval())
	return l, nil
}

// listSegments finds the segment bases in dir and removes leftovers:
// temp files and indexes whose log file is gone.
func (l *Log) listSegments() ([]int64, error) {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, storageErr("readdir", l.dir, err)
	}
	logs := map[int64]bool{}
	var others []string
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		base, perr := strconv.ParseInt(strings.TrimSuffix(name, ext), 10, 64)
		isSeg := perr == nil && len(name)-len(ext) == 20 && base >= 0
		switch {
		case ext == ".tmp" || ext == ".deleted":
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, storageErr("remove", name, err)
			}
		case isSeg && ext == logSuffix:
			logs[base] = true
		case isSeg && (ext == indexSuffix || ext == timeIndexSuffix || ext == txnIndexSuffix):
			others = append(others, name)
		}
	}
	for _, name := range others {
		ext := filepath.Ext(name)
		base, _ := strconv.ParseInt(strings.TrimSuffix(name, ext), 10, 64)
		if !logs[base] {
			l.logger.Info("removing orphan index", zap.String("file", name))
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, storageErr("remove", name, err)
			}
		}
	}
	bases := make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	return bases, nil
}

func (l *Log) load() error {
	if err := l.completeSwaps(); err != nil {
		return err
	}
	bases, err := l.listSegments()
	if err != nil {
		return err
	}
	cleanLEO, clean, err := readCleanShutdown(l.fs, l.dir)
	if err != nil {
		return err
	}
	logStart, err := readLogStartOffset(l.fs, l.dir)
	if err != nil {
		return err
	}
	now := l.opts.Now()
	for _, b := range bases {
		s, err := openSegment(l.fs, l.dir, b, false, now)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, s)
	}
	// A new partition (or one whose segments were all deleted) has no
	// data to recover or fsync. Its new files are not fsynced here, as in
	// Kafka, whose LogManager.getOrCreateLog creates the directory
	// (Files.createDirectories) and whose LogLoader opens the first
	// segment without a flush: dirDirty makes the first flush (group
	// commit included) fsync the directory before any data in it counts
	// as durable. A crash before that leaves no segment, i.e. a new
	// partition again.
	fresh := len(l.segments) == 0
	if fresh {
		s, err := openSegment(l.fs, l.dir, max(logStart, 0), true, now)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, s)
		l.dirDirty = true
	}
	for i, s := range l.segments[:len(l.segments)-1] {
		s.nextOffset = l.segments[i+1].base
	}

	entries, haveEpochs, err := readEpochCheckpoint(l.fs, filepath.Join(l.dir, epochCheckpointName))
	if err != nil {
		return err
	}
	l.epochs.entries = slices.Clone(entries)

	persistedRP, havePersisted, err := readOffsetFile(l.fs, l.dir, recoveryPointName)
	if err != nil {
		return err
	}
	l.persistedRP = -1
	if havePersisted {
		l.persistedRP = persistedRP
	}
	var recoverFrom int
	var rp int64 // the recovery point an unclean open recovers from
	afterCrash := !clean
	switch {
	case clean:
		recoverFrom = l.openClean(cleanLEO)
	case fresh:
		recoverFrom = -1
		l.epochs.truncateFromEnd(l.segments[0].base) // no batches, no epochs
	default:
		// The lower of the broker's and our own recovery point: both only
		// ever name offsets whose data and indexes were fsynced.
		rp = l.opts.RecoveryPoint
		if havePersisted && (rp <= 0 || persistedRP < rp) {
			rp = persistedRP
		}
		recoverFrom = l.segmentIndex(rp)
		if bad := l.checkIndexes(recoverFrom); bad >= 0 {
			recoverFrom = bad
		}
		l.logger.Info("unclean shutdown: recovering", zap.Int64("recoveryPoint", rp),
			zap.Int64("fromSegment", l.segments[recoverFrom].base))
	}
	if recoverFrom >= 0 {
		// The checkpoint is trusted only below the segment recovery
		// starts from (at or below the recovery point, which never passes
		// an entry the file lacks); recovery reassigns the rest from the
		// batches it scans.
		l.epochs.truncateFromEnd(l.segments[recoverFrom].base)
		if err := l.recover(recoverFrom, afterCrash, rp); err != nil {
			return err
		}
		// What recovery kept may still be only in the page cache (after a
		// process crash): fsync it before calling it flushed. The rebuilt
		// indexes wait for the next full flush (the recovery point stays
		// below them until then).
		var targets []syncTarget
		for _, s := range l.segments {
			if targets, _, err = s.syncTargets(targets, false); err != nil {
				return err
			}
		}
		if err := syncAll(targets); err != nil {
			return err
		}
		// The files' directory entries too: a new log's open left them
		// to the first flush, which a crash may have preempted.
		l.dirDirty = true
	}
	active := l.segments[len(l.segments)-1]
	l.leo = active.nextOffset
	l.logStart = max(logStart, l.segments[0].base)
	if l.logStart > l.leo {
		l.logStart = l.leo
	}
	l.flushed, l.recoveryPoint = l.leo, l.leo
	for _, s := range l.segments {
		if s.idxDirty {
			l.recoveryPoint = min(l.leo, s.base)
			break
		}
	}

	if !haveEpochs && recoverFrom != 0 && l.leo > l.segments[0].base {
		// (Recovery from the first segment has just scanned every batch.)
		l.logger.Info("rebuilding leader-epoch cache from the log")
		l.rebuildEpochs()
	}
	l.epochs.truncateFromEnd(l.leo)
	l.epochs.truncateFromStart(l.logStart)
	if !slices.Equal(l.epochs.entries, entries) {
		// Rewritten by the next full flush. Until then a crash leaves the
		// same files, and the next open derives the same cache again.
		l.epochFileStale = true
		for i, e := range l.epochs.entries {
			if i >= len(entries) || e != entries[i] {
				l.epochsChangedLocked(e.StartOffset)
				break
			}
		}
		l.recoveryPoint = min(l.recoveryPoint, l.epochsUnsavedFrom)
	}
	for _, s := range l.segments {
		if err := s.txn.truncateTo(l.leo); err != nil {
			return err
		}
	}
	// The checks above may have opened index files to read entries; a
	// lookup reopens them when it needs them.
	for _, s := range l.segments {
		if err := errors.Join(s.offIdx.release(), s.timeIdx.release()); err != nil {
			return storageErr("close", s.logPath, err)
		}
	}
	if clean {
		// From now on a crash must be treated as unclean.
		if err := removeCleanShutdown(l.fs, l.dir); err != nil {
			return err
		}
		l.dirDirty = true
	}
	if l.dirDirty && !(fresh && !clean) {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return storageErr("fsync", l.dir, err)
		}
		l.dirDirty = false
	}
	return nil
}

// openClean trusts the files after a clean shutdown: it checks the indexes
// cheaply and reads only the tail of the active segment. It returns the
// index of the first segment that must be recovered after all, or -1.
func (l *Log) openClean(cleanLEO int64) int {
	if bad := l.checkIndexes(len(l.segments)); bad >= 0 {
		return bad
	}
	last := len(l.segments) - 1
	if err := l.segments[last].loadTail(); err != nil {
		l.logger.Warn("active segment damaged despite clean shutdown", zap.Error(err))
		return last
	}
	if a := l.segments[last]; a.offIdx.n == 0 && a.lastBatchPos > int64(l.cfg.IndexIntervalBytes) {
		// Appends would have given the batch at lastBatchPos an entry:
		// the offset index file was lost (or log.index.interval.bytes was
		// lowered). Rebuild it rather than scan this segment on every read.
		l.logger.Warn("active segment's offset index lacks entries: rebuilding it",
			zap.String("segment", a.logPath), zap.Int64("lastBatchPosition", a.lastBatchPos))
		return last
	}
	if got := l.segments[last].nextOffset; got != cleanLEO {
		l.logger.Warn("log end differs from the clean-shutdown marker",
			zap.Int64("marker", cleanLEO), zap.Int64("found", got))
		return last
	}
	return -1
}

// checkIndexes sanity-checks the indexes of segments[:n] (Kafka's
// sanityCheck: missing files, torn entries, last entry outside the
// segment) and loads their max timestamps. It returns the first segment
// whose indexes must be rebuilt, or -1.
func (l *Log) checkIndexes(n int) int {
	for i, s := range l.segments[:n] {
		sealed := i < len(l.segments)-1
		next := int64(-1) // unknown for the active segment until loadTail
		if sealed {
			next = s.nextOffset
		}
		err := s.checkIndexFiles(sealed)
		if err == nil {
			err = s.offIdx.sanityCheck(s.size)
		}
		if err == nil {
			err = s.timeIdx.sanityCheck(next)
		}
		if err == nil {
			err = s.verifyLastEntries()
		}
		if err != nil {
			l.logger.Warn("index damaged: rebuilding from the segment", zap.Error(err))
			return i
		}
		if e, ok := s.timeIdx.lastEntry(); ok {
			s.maxTs, s.maxTsOffset = e.Timestamp, e.Offset
		}
	}
	return -1
}

// RecoveryPoint is the offset below which the log data and its indexes
// are fsynced (Kafka's recovery point). The Log persists it itself (the
// recovery-point file, rewritten on full flushes and lowered by
// truncation) so that an unclean open scans only from there; a broker
// that keeps Kafka's per-data-dir checkpoint may pass its value back in
// Options.RecoveryPoint, and the lower of the two is used.
// Group commit fsyncs only the data, so it can lag FlushedOffset by the
// active segment until the next full flush (roll, log.flush.interval.ms,
// Flush, Close).
func (l *Log) RecoveryPoint() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recoveryPoint
}

// segmentIndex returns the index of the segment holding offset (the last
// segment whose base is <= offset), or 0.
func (l *Log) segmentIndex(offset int64) int {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].base > offset })
	return max(i-1, 0)
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// epochsChangedLocked records that the leader-epoch cache changed and
// that its entries from offset on may be missing from the checkpoint
// file. The file is rewritten by the next full flush, before the recovery
// point moves past offset (flush), rather than on the append path: until
// then an unclean open scans the batches from below offset and reassigns
// their epochs (recover), as Kafka's LogSegment.recover does. Kafka
// itself fsyncs the checkpoint in LeaderEpochFileCache.assign, i.e. when
// a partition becomes leader; minibroker has no leader election, so the
// first append to each partition would pay it (1,000 partitions: 1,000
// fsyncs on the produce path).
func (l *Log) epochsChangedLocked(offset int64) {
	l.epochFileStale = true
	l.epochsUnsavedFrom = min(l.epochsUnsavedFrom, offset)
}

// writeEpochsLocked rewrites the checkpoint now (truncation, retention,
// reset: rare, and they must not leave entries behind the data).
func (l *Log) writeEpochsLocked() error {
	if err := l.writeEpochFile(encodeEpochCheckpoint(l.epochs.entries)); err != nil {
		return err
	}
	l.epochFileStale, l.epochsUnsavedFrom = false, math.MaxInt64
	return nil
}

// writeEpochFile replaces leader-epoch-checkpoint with data, atomically.
func (l *Log) writeEpochFile(data []byte) error {
	path := filepath.Join(l.dir, epochCheckpointName)
	if err := vfs.WriteFileAtomic(l.fs, l.dir, path, data); err != nil {
		return storageErr("write", path, err)
	}
	return nil
}

// failLocked records the first storage failure and takes the log offline
// for writes.
func (l *Log) failLocked(err error) error {
	if l.failed == nil {
		l.failed = err
		l.logger.Error("storage failure: log is offline for writes", zap.Error(err))
		l.releaseWaitersLocked()
	}
	return l.failed
}

// writableLocked reports why the log cannot be written, if it cannot.
func (l *Log) writableLocked() error {
	if l.closed || l.closing {
		return ErrClosed
	}
	return l.failed
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset is the first offset a reader may ask for.
func (l *Log) LogStartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.logStart
}

// LogEndOffset is the offset the next appended record will have.
func (l *Log) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leo
}

// FlushedOffset is the offset below which everything is fsynced.
func (l *Log) FlushedOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushed
}

// Size is the total size of the segment files in bytes.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// SegmentBaseOffsets lists the segments' base offsets, oldest first.
func (l *Log) SegmentBaseOffsets() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]int64, len(l.segments))
	for i, s := range l.segments {
		out[i] = s.base
	}
	return out
}

// SegmentStat is one segment's base offset, committed size and last
// modification (its file's mtime).
type SegmentStat struct {
	Base, Size   int64
	LastModified time.Time
}

// SegmentStats lists the segments, oldest first: what Kafka's legacy
// ListOffsets v0 (UnifiedLog.legacyFetchOffsetsBefore) reads. A segment
// whose file cannot be stat'ed reports its creation time.
func (l *Log) SegmentStats() []SegmentStat {
	l.mu.Lock()
	segs := slices.Clone(l.segments)
	out := make([]SegmentStat, len(segs))
	for i, s := range segs {
		out[i] = SegmentStat{Base: s.base, Size: s.size, LastModified: s.created}
	}
	l.mu.Unlock()
	// fstat outside mu; a segment closed meanwhile (retention) keeps its
	// creation time.
	for i, s := range segs {
		if st, err := s.log.Stat(); err == nil {
			out[i].LastModified = st.ModTime()
		}
	}
	return out
}

// LatestEpoch is the newest leader epoch in the log.
func (l *Log) LatestEpoch() (int32, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch <=
// epoch and the start offset of the next higher epoch (the log end offset
// when it is the latest); (-1, -1) when unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.leo)
}

// EpochEntries returns a copy of the leader-epoch cache.
func (l *Log) EpochEntries() []EpochEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.epochs.entries)
}

// Close flushes, writes the clean-shutdown marker (unless a storage
// failure happened) and closes every file. It waits for the background
// flusher to stop.
func (l *Log) Close() error {
	l.appendMu.Lock() // waits for an Append in flight; later ones see closing
	defer l.appendMu.Unlock()
	l.mu.Lock()
	if l.closed || l.closing {
		l.mu.Unlock()
		return nil
	}
	l.closing = true // no more writes; reads go on until closed
	// The final time-index entry makes the segment's max timestamp
	// readable after a clean open (Kafka: onBecomeInactiveSegment).
	var err error
	if l.failed == nil {
		if err = l.active().maybeAppendTimeEntry(); err != nil {
			l.failLocked(err)
		}
		l.active().idxDirty = true
	}
	l.mu.Unlock()

	l.flusher.stop()
	if ferr := l.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	l.mu.Lock()
	var act *segment
	if len(l.segments) > 0 {
		act = l.active()
	}
	l.mu.Unlock()
	if act != nil { // appendMu held
		if terr := act.trimPrealloc(); terr != nil {
			l.logger.Warn("cannot give back the active segment's preallocated blocks", zap.String("segment", act.logPath), zap.Error(terr))
		}
	}

	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.releaseWaitersLocked()
	if l.failed == nil {
		if werr := writeCleanShutdown(l.fs, l.dir, l.leo); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	for _, s := range l.segments {
		if cerr := s.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", s.logPath, cerr))
		}
	}
	return err
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	cerr := l.Close()
	if err := l.fs.RemoveAll(l.dir); err != nil {
		return storageErr("remove", l.dir, err)
	}
	if cerr != nil && !errors.Is(cerr, ErrStorage) {
		return cerr
	}
	return nil
}
