package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/vfs"
)

// File name suffixes, as Kafka names them.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	txnIndexSuffix  = ".txnindex"
)

func segmentFileName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// segment is one <base>.log file with its indexes. All mutable fields are
// guarded by Log.mu; files are closed or truncated only with Log.truncMu
// held for writing.
type segment struct {
	base    int64
	logPath string
	log     vfs.File
	offIdx  offsetIndex
	timeIdx timeIndex
	txn     *txnIndex

	size       int64 // committed bytes; readers never look past it
	nextOffset int64 // last offset in the segment + 1 (base when empty)
	// verified: the bytes whose CRCs were checked in this process
	// lifetime; reads skip the CRC pass for them (verify.go).
	verified verification

	bytesSinceIndex int64
	maxTs           int64 // largest batch MaxTimestamp, -1 if none
	maxTsOffset     int64 // base offset of the batch holding maxTs
	rollTs          int64 // MaxTimestamp of the first batch, -1 if none
	lastBatchPos    int64 // position of the last batch, -1 if none
	lastBatchOffset int64 // last offset of the last batch
	created         time.Time
	// Written since the last fsync: the log file, the offset and time
	// indexes, the transaction index.
	dirty, idxDirty, txnDirty bool
	// allocated: the end of the blocks this process reserved for the
	// file with fallocate (prealloc.go), 0 if none; noPrealloc: that
	// failed. Changed only with appendMu held.
	allocated  int64
	noPrealloc bool
	// wbFrom: the end of the bytes handed to the kernel for writeback
	// (writeback.go); guarded by mu.
	wbFrom int64
	// cacheDropped: drop-behind has dropped this rolled segment's pages
	// from the page cache (writeback.go); guarded by mu.
	cacheDropped bool
	// droppedTo: drop-behind has dropped the pages before it
	// (writeback.go); guarded by mu.
	droppedTo int64
}

// openSegment opens (create=true: creates) the files of the segment at base.
func openSegment(fsys vfs.FS, dir string, base int64, create bool, now time.Time) (*segment, error) {
	s := &segment{base: base, logPath: segmentFileName(dir, base, logSuffix),
		nextOffset: base, maxTs: -1, maxTsOffset: -1, rollTs: -1, lastBatchPos: -1, created: now}
	flag := os.O_RDWR | os.O_APPEND
	if create {
		flag |= os.O_CREATE | os.O_EXCL
	}
	f, err := fsys.OpenFile(s.logPath, flag, 0o644)
	if err != nil {
		return nil, storageErr("open", s.logPath, err)
	}
	s.log = f
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, storageErr("stat", s.logPath, err)
	}
	s.size = st.Size()
	s.verified = unverified(s.size) // until recovery or a read checks it
	if !create && st.ModTime().Before(now) {
		s.created = st.ModTime()
	}
	oPath, tPath := segmentFileName(dir, base, indexSuffix), segmentFileName(dir, base, timeIndexSuffix)
	var oi, ti *indexFile
	if create {
		// Lazy indexes: no file until entries are written (see indexFile).
		oi, ti = newIndexFile(fsys, oPath, base, offsetEntrySize), newIndexFile(fsys, tPath, base, timeEntrySize)
	} else {
		if oi, err = loadIndexFile(fsys, oPath, base, offsetEntrySize); err != nil {
			f.Close()
			return nil, err
		}
		if ti, err = loadIndexFile(fsys, tPath, base, timeEntrySize); err != nil {
			f.Close()
			return nil, err
		}
	}
	s.offIdx, s.timeIdx = offsetIndex{oi}, timeIndex{ti}
	s.txn, err = openTxnIndex(fsys, segmentFileName(dir, base, txnIndexSuffix))
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *segment) close() error {
	err := s.log.Close()
	err = errors.Join(err, s.offIdx.close(), s.timeIdx.close(), s.txn.close())
	return err
}

// remove closes the segment and deletes its files, the log first: once
// it is gone the segment is gone, and indexes left behind (by a crash or a
// failed removal) are orphans that Open deletes, so only a failure to
// remove the log file is an error.
func (s *segment) remove(fsys vfs.FS) error {
	s.close()
	if err := fsys.Remove(s.logPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return storageErr("remove", s.logPath, err)
	}
	for _, p := range []string{s.offIdx.path, s.timeIdx.path, s.txn.path} {
		fsys.Remove(p)
	}
	return nil
}

// syncTarget is a file to fsync, captured under Log.mu and synced
// outside it.
type syncTarget struct {
	name string
	f    vfs.File
}

// syncTargets lists the segment's files written since their last fsync
// and marks them clean (called under Log.mu); created reports that an
// index file was created since the last call with withIndexes, so that
// the directory needs an fsync too. With withIndexes the pending index
// entries are written first, creating the index files that get entries
// (and, once the offset index has entries, the time index file even if
// it has none: see Log.checkIndexes); without, the offset and time
// indexes stay dirty: they are not needed for durability, since recovery
// rebuilds them (see Log.RecoveryPoint).
func (s *segment) syncTargets(dst []syncTarget, withIndexes bool) (_ []syncTarget, created bool, err error) {
	if s.dirty {
		dst = append(dst, syncTarget{s.logPath, s.log})
		s.dirty = false
	}
	if s.txnDirty && s.txn.f != nil {
		dst = append(dst, syncTarget{s.txn.path, s.txn.f})
		s.txnDirty = false
	}
	if s.idxDirty && withIndexes {
		if err := s.offIdx.flushPending(); err != nil {
			return dst, false, err
		}
		if err := s.timeIdx.flushPending(); err != nil {
			return dst, false, err
		}
		if s.offIdx.n > 0 {
			if err := s.timeIdx.materialize(); err != nil {
				return dst, false, err
			}
		}
		s.idxDirty = false
	}
	if withIndexes {
		for _, x := range []*indexFile{s.offIdx.indexFile, s.timeIdx.indexFile} {
			t, ok, c := x.syncTarget()
			if ok {
				dst = append(dst, t)
			}
			created = created || c
		}
	}
	return dst, created, nil
}

// markDirty records that every file of the segment may need an fsync.
func (s *segment) markDirty() { s.dirty, s.idxDirty, s.txnDirty = true, true, true }

func syncAll(targets []syncTarget) error {
	for _, t := range targets {
		if err := t.f.Sync(); err != nil {
			return storageErr("fsync", t.name, err)
		}
	}
	return nil
}

// indexBatch updates the in-memory state and the indexes for a batch
// just written at pos. Kafka's LogSegment.append: an offset index entry
// (last offset → position) and a time index entry (max timestamp so far)
// whenever more than IndexIntervalBytes were written since the last one.
func (s *segment) indexBatch(h *batch.Header, pos int64, interval int64) error {
	if s.rollTs < 0 {
		s.rollTs = h.MaxTimestamp
	}
	if h.MaxTimestamp > s.maxTs {
		s.maxTs, s.maxTsOffset = h.MaxTimestamp, h.BaseOffset
	}
	s.nextOffset = h.LastOffset() + 1
	s.lastBatchPos, s.lastBatchOffset = pos, h.LastOffset()
	if s.bytesSinceIndex > interval {
		var buf [timeEntrySize]byte
		if err := s.offIdx.appendRaw(appendOffsetEntry(buf[:0], offsetEntry{h.LastOffset(), pos}, s.base)); err != nil {
			return err
		}
		if err := s.maybeAppendTimeEntry(); err != nil {
			return err
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += int64(h.Size())
	return nil
}

// maybeAppendTimeEntry records the segment's max timestamp if it grew.
func (s *segment) maybeAppendTimeEntry() error {
	if s.maxTs < 0 {
		return nil
	}
	if last, ok := s.timeIdx.lastEntry(); ok && last.Timestamp >= s.maxTs {
		return nil
	}
	var buf [timeEntrySize]byte
	return s.timeIdx.appendRaw(appendTimeEntry(buf[:0], timeEntry{s.maxTs, s.maxTsOffset}, s.base))
}

// fits reports whether a batch of size bytes whose last offset is last can
// go into this segment, after pending bytes not yet written, without
// breaking log.segment.bytes or the limits of the formats.
func (s *segment) fits(pending, size int64, last int64, cfg *Config) bool {
	if s.size+pending == 0 {
		return last-s.base <= math.MaxInt32
	}
	return s.size+pending+size <= cfg.SegmentBytes &&
		last-s.base <= math.MaxInt32 &&
		(s.offIdx.n+1)*offsetEntrySize <= int64(cfg.SegmentIndexBytes) &&
		(s.timeIdx.n+1)*timeEntrySize <= int64(cfg.SegmentIndexBytes)
}

// timeToRoll is Kafka's log.roll.ms test: the batch's timestamp is more than
// SegmentMs past the segment's first batch (or, without one, the segment
// is older than SegmentMs by the wall clock).
func (s *segment) timeToRoll(h *batch.Header, now time.Time, cfg *Config) bool {
	if s.size == 0 {
		return false
	}
	if s.rollTs >= 0 {
		return h.MaxTimestamp-s.rollTs > cfg.SegmentMs
	}
	return now.Sub(s.created).Milliseconds() > cfg.SegmentMs
}

// loadTail scans the committed bytes from the last offset-index entry to
// the end (headers only) to learn nextOffset and the max timestamp after
// the last time-index entry. Used on a clean open.
func (s *segment) loadTail() error {
	s.maxTs, s.maxTsOffset, s.rollTs, s.lastBatchPos = -1, -1, -1, -1
	s.nextOffset, s.bytesSinceIndex = s.base, 0
	if e, ok := s.timeIdx.lastEntry(); ok {
		s.maxTs, s.maxTsOffset = e.Timestamp, e.Offset
	}
	pos := int64(0)
	if e, ok := s.offIdx.lastEntry(); ok {
		pos = e.Position
		s.nextOffset = e.Offset + 1
	}
	if pos > 0 {
		// The first batch's timestamp drives time-based rolling.
		first := newScanner(s.log, s.logPath, 0, s.size, batch.HeaderSize)
		if h, _, _, err := first.next(false); err == nil {
			s.rollTs = h.MaxTimestamp
		}
	}
	sc := newScanner(s.log, s.logPath, pos, s.size, 64<<10)
	for {
		h, _, p, err := sc.next(false)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if p == 0 {
			s.rollTs = h.MaxTimestamp
		}
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.maxTsOffset = h.MaxTimestamp, h.BaseOffset
		}
		s.nextOffset = h.LastOffset() + 1
		s.lastBatchPos, s.lastBatchOffset = p, h.LastOffset()
		s.bytesSinceIndex += int64(h.Size())
	}
}

// sealIndex gives the offset index an entry for the segment's last batch
// (Kafka indexes only every log.index.interval.bytes) and writes it,
// creating the file if the index had none in it. Done at roll, it records
// where the segment ends; the roll's background full flush fsyncs it
// (the written file stays marked for that flush), after which a sealed
// segment below the recovery point always has its offset index file
// (checkIndexFiles).
func (s *segment) sealIndex() error {
	if s.lastBatchPos < 0 {
		return nil
	}
	if e, ok := s.offIdx.lastEntry(); !ok || e.Offset < s.lastBatchOffset {
		var buf [offsetEntrySize]byte
		e := offsetEntry{Offset: s.lastBatchOffset, Position: s.lastBatchPos}
		if err := s.offIdx.appendRaw(appendOffsetEntry(buf[:0], e, s.base)); err != nil {
			return err
		}
	}
	return s.offIdx.flushPending()
}

// checkIndexFiles decides whether index files missing from a non-empty
// segment are damage (an index with no entries may have no file, see
// indexFile). At every full flush (roll, Flush, Close) a segment's index
// files are created once they have entries, and the time index file once
// the offset index has entries; so after a clean shutdown, and below the
// recovery point after a crash:
//   - a sealed segment has an offset index file: the roll wrote an entry
//     for its last batch (sealIndex);
//   - a segment whose offset index has entries has a time index file.
//
// The active segment may lack both when it holds less than
// log.index.interval.bytes before its last batch: loadTail then scans it
// from the start, which rebuilds its maximum timestamp, and openClean
// rejects an empty offset index that should have had entries.
func (s *segment) checkIndexFiles(sealed bool) error {
	if s.size == 0 {
		return nil
	}
	if sealed && !s.offIdx.onDisk {
		return &CorruptionError{Segment: s.offIdx.path, Err: errors.New("offset index file missing")}
	}
	if s.offIdx.n > 0 && !s.timeIdx.onDisk {
		return &CorruptionError{Segment: s.timeIdx.path, Err: errors.New("time index file missing")}
	}
	return nil
}

// verifyLastEntries checks that the last offset- and time-index entries
// describe the batches they point at (a header read each), so that a
// clean open does not trust an index that disagrees with the data.
func (s *segment) verifyLastEntries() error {
	v := s.view()
	mismatch := func(path string) error { return &CorruptionError{Segment: path, Err: errIndexMismatch} }
	var lastIndexed batch.Header // the batch the last offset entry names
	lastPos := int64(-1)
	if e, ok := s.offIdx.lastEntry(); ok {
		sc := newScanner(s.log, s.logPath, e.Position, s.size, batch.HeaderSize)
		h, _, _, err := sc.next(false)
		if err != nil || h.LastOffset() != e.Offset {
			return mismatch(s.offIdx.path)
		}
		lastIndexed, lastPos = h, e.Position
	}
	if e, ok := s.timeIdx.lastEntry(); ok {
		var h batch.Header
		var found bool
		var err error
		if lastPos >= 0 && e.Offset >= lastIndexed.BaseOffset {
			// At or after the last indexed batch (a sealed segment's max
			// timestamp is usually in its last batch): scan from there,
			// without reading, or opening, the offset index file.
			h, found, err = scanToBatch(s, lastPos, e.Offset)
		} else {
			h, _, found, err = findBatch(v, e.Offset, true)
		}
		if err != nil || !found || h.BaseOffset != e.Offset || h.MaxTimestamp != e.Timestamp {
			return mismatch(s.timeIdx.path)
		}
	}
	return nil
}

// scanToBatch scans s from pos (a batch boundary) to the first batch
// whose last offset is >= offset.
func scanToBatch(s *segment, pos, offset int64) (batch.Header, bool, error) {
	sc := newScanner(s.log, s.logPath, pos, s.size, headerReadahead)
	for {
		h, _, _, err := sc.next(false)
		if err == io.EOF {
			return h, false, nil
		}
		if err != nil {
			return h, false, err
		}
		if h.LastOffset() >= offset {
			return h, true, nil
		}
	}
}

// view is a reader's snapshot of a segment.
type segmentView struct {
	seg      *segment
	size     int64
	next     int64
	off      indexView
	times    indexView
	verified verification
}

func (s *segment) view() segmentView {
	return segmentView{seg: s, size: s.size, next: s.nextOffset, off: s.offIdx.view(), times: s.timeIdx.view(),
		verified: s.verified}
}

// truncateFile cuts the log file to pos (a batch boundary) and forgets
// that bytes past it were verified. Called with truncMu held for writing
// (or during Open) and mu held.
func (s *segment) truncateFile(pos int64) error {
	if err := s.log.Truncate(pos); err != nil {
		return storageErr("truncate", s.logPath, err)
	}
	s.size = pos
	s.verified.truncated(pos)
	return nil
}
