package log

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/minibroker/minibroker/internal/batch"
)

// maxReadBytes caps one read whatever maxBytes asks (a larger first batch
// is still returned whole with minOneBatch), so that a request cannot make
// the broker allocate a whole segment.
const maxReadBytes = 64 << 20

// headerReadahead is the read-ahead window for header-only scans between
// an index entry and the batch sought (one index interval, by default).
const headerReadahead = 8 << 10

// Read returns whole batches starting with the one holding offset, at most
// maxBytes of them (and at most 64 MiB); with minOneBatch the first batch
// is returned whole even when larger. Reading at the log end returns nothing; below the log
// start or past the end returns ErrOffsetOutOfRange. Every batch returned
// has had its framing checked, and its CRC checked once in this process
// lifetime (by recovery, the appender or an earlier read; otherwise by
// this read): damage not seen before yields a *CorruptionError instead of
// being served. The result is a fresh slice owned by the caller.
func (l *Log) Read(offset int64, maxBytes int, minOneBatch bool) ([]byte, error) {
	return l.ReadAppend(nil, offset, math.MaxInt64, maxBytes, minOneBatch)
}

// ReadUpTo is Read that never returns a batch whose base offset is at or
// above maxOffset (the high watermark or last stable offset).
func (l *Log) ReadUpTo(offset, maxOffset int64, maxBytes int, minOneBatch bool) ([]byte, error) {
	return l.ReadAppend(nil, offset, maxOffset, maxBytes, minOneBatch)
}

// ReadAppend is ReadUpTo that appends the batches to dst and returns the
// extended slice, so that callers can reuse (pool) their buffers. The
// bytes come from the segment file with one pread(2), unparsed beyond
// batch headers and the CRCs of batches not yet verified.
func (l *Log) ReadAppend(dst []byte, offset, maxOffset int64, maxBytes int, minOneBatch bool) ([]byte, error) {
	return l.read(dst, slices.Grow[[]byte], offset, maxOffset, maxBytes, minOneBatch, nil)
}

// ReadInto is ReadUpTo reading into a buffer from get, which is called
// (at most once, but for a retry after a damaged index) with the number of
// bytes the read needs and must return an empty slice with at least that
// capacity: callers pool their buffers and size them to the read. When
// there is nothing to read, get is not called and nil is returned.
func (l *Log) ReadInto(get func(n int) []byte, offset, maxOffset int64, maxBytes int, minOneBatch bool) ([]byte, error) {
	return l.read(nil, growInto(get), offset, maxOffset, maxBytes, minOneBatch, nil)
}

// growInto is the grow function of a read into buffers from get.
func growInto(get func(n int) []byte) func(dst []byte, n int) []byte {
	return func(dst []byte, n int) []byte {
		if cap(dst)-len(dst) >= n {
			return dst
		}
		return append(get(len(dst)+n), dst...)
	}
}

// read is ReadAppend with grow making room for n more bytes in dst. With
// a non-nil span the batches may be returned as a Span instead (ReadSpan).
func (l *Log) read(dst []byte, grow func(dst []byte, n int) []byte, offset, maxOffset int64, maxBytes int, minOneBatch bool, span *spanRead) ([]byte, error) {
	l.truncMu.RLock()
	defer l.truncMu.RUnlock()
	v, limit, ok, err := l.firstView(offset)
	if err != nil || !ok {
		return dst, err
	}
	maxOffset = min(maxOffset, limit)
	for ok {
		out, found, err := l.readFrom(dst, grow, v, offset, maxOffset, maxBytes, minOneBatch, true, span)
		if err != nil {
			// A damaged index must not make good data unreadable or skip
			// it: look again from the segment start before reporting.
			out, found, err = l.readFrom(out, grow, v, offset, maxOffset, maxBytes, minOneBatch, false, nil)
		}
		if err != nil || found {
			return out, err
		}
		// offset lies in a gap after this segment's last batch
		v, ok = l.nextView(v.seg.base)
	}
	return dst, nil
}

func (l *Log) readFrom(dst []byte, grow func([]byte, int) []byte, v segmentView, offset, maxOffset int64, maxBytes int, minOne, useIndex bool, span *spanRead) ([]byte, bool, error) {
	h, pos, found, err := findBatch(v, offset, useIndex)
	if err != nil || !found {
		return dst, found, err
	}
	l.noteRead(v.seg, pos)
	if span != nil && span.of(v, h, pos, maxOffset, maxBytes, minOne) {
		l.mu.Lock() // truncMu is held: TruncateTo waits for it to close
		l.spansOut++
		l.mu.Unlock()
		span.out.log = l
		return dst, true, nil
	}
	start := len(dst)
	out, checkedCRC, err := readBatches(dst, grow, v, h, pos, maxOffset, maxBytes, minOne)
	if checkedCRC && len(out) > start {
		// Every batch served passed its check: record it (only after the
		// check, and while truncMu still keeps these bytes in place).
		l.mu.Lock()
		v.seg.verified.checked(pos, pos+int64(len(out)-start), v.seg.size)
		l.mu.Unlock()
	}
	return out, true, err
}

// errIndexMismatch: an offset-index entry does not describe the batch at
// its position.
var errIndexMismatch = errors.New("offset index entry does not match the segment")

// firstView snapshots the segment holding offset; ok=false (and no error)
// when offset is the log end. After a storage failure only fsynced data is
// served (the page cache may no longer hold what a failed write or fsync
// left): limit is the offset reads must stop before.
func (l *Log) firstView(offset int64) (v segmentView, limit int64, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	limit = math.MaxInt64
	if l.closed {
		return v, limit, false, ErrClosed
	}
	if offset < l.logStart || offset > l.leo {
		return v, limit, false, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, l.logStart, l.leo)
	}
	if offset == l.leo {
		return v, limit, false, nil
	}
	if l.failed != nil {
		if offset >= l.flushed {
			return v, limit, false, l.failed
		}
		limit = l.flushed
	}
	return l.segments[l.segmentIndex(offset)].view(), limit, true, nil
}

// nextView snapshots the segment after the one based at base. The caller
// holds truncMu for reading, so segments are only ever added meanwhile.
func (l *Log) nextView(base int64) (segmentView, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].base > base })
	if i == len(l.segments) {
		return segmentView{}, false
	}
	return l.segments[i].view(), true
}

// findBatch locates the first batch in v whose last offset is >= offset,
// scanning from the offset index's answer or, without useIndex, from the
// segment start.
func findBatch(v segmentView, offset int64, useIndex bool) (batch.Header, int64, bool, error) {
	var entry offsetEntry
	checkEntry := false
	if useIndex {
		entry, checkEntry = v.seg.offIdx.lookup(v.off, offset)
	}
	sc := newHeaderScanner(v.seg.log, v.seg.logPath, entry.Position, v.size)
	defer sc.release()
	for {
		h, _, pos, err := sc.next(false)
		if err == io.EOF {
			if checkEntry {
				return h, 0, false, &CorruptionError{Segment: v.seg.offIdx.path, Err: errIndexMismatch}
			}
			return h, 0, false, nil
		}
		if err != nil {
			return h, 0, false, readErr(v.seg, err)
		}
		if checkEntry {
			if h.LastOffset() != entry.Offset {
				return h, 0, false, &CorruptionError{Segment: v.seg.offIdx.path, Err: errIndexMismatch}
			}
			checkEntry = false
		}
		if h.LastOffset() >= offset {
			return h, pos, true, nil
		}
	}
}

// readErr passes corruption through and wraps IO failures.
func readErr(s *segment, err error) error {
	var ce *CorruptionError
	if errors.As(err, &ce) {
		return err
	}
	return storageErr("read", s.logPath, err)
}

// readBatches appends to dst the whole batches from pos (where the batch
// with header first starts), checking the framing of each and the CRC of
// each that v does not count as verified. checkedCRC reports whether it
// checked a CRC (the batches it returns are then newly verified).
func readBatches(dst []byte, grow func([]byte, int) []byte, v segmentView, first batch.Header, pos, maxOffset int64, maxBytes int, minOne bool) (out []byte, checkedCRC bool, err error) {
	if first.BaseOffset >= maxOffset {
		return dst, false, nil
	}
	want := min(int64(max(maxBytes, 0)), v.size-pos, maxReadBytes)
	if int64(first.Size()) > want {
		if !minOne {
			return dst, false, nil
		}
		want = int64(first.Size())
	}
	start := len(dst)
	dst = grow(dst, int(want))[:start+int(want)]
	buf := dst[start:]
	if n, err := v.seg.log.ReadAt(buf, pos); n < len(buf) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return dst[:start], false, storageErr("read", v.seg.logPath, err)
	}
	p := 0
	next := int64(-1)
	for p+batch.LogOverhead <= len(buf) {
		size64, _ := batch.SizeOf(buf[p:]) // the loop condition leaves LogOverhead bytes
		size := int(size64)
		if size < batch.HeaderSize || size > len(buf)-p {
			if p == 0 || size < batch.HeaderSize {
				out, err := cutOrFail(dst, start, p, v.seg, pos, fmt.Errorf("%w: batch length %d", batch.ErrInvalid, size-batch.LogOverhead))
				return out, checkedCRC, err
			}
			break // the next batch does not fit in maxBytes
		}
		var h batch.Header
		var err error
		at := pos + int64(p)
		if v.verified.covers(at, at+int64(size)) {
			h, err = batch.ValidateFraming(buf[p : p+size])
		} else {
			h, err = batch.Validate(buf[p : p+size])
			checkedCRC = true
		}
		if err == nil && h.BaseOffset < next {
			err = fmt.Errorf("offset %d after %d", h.BaseOffset, next-1)
		}
		if err != nil {
			out, err := cutOrFail(dst, start, p, v.seg, pos, err)
			return out, checkedCRC, err
		}
		if h.BaseOffset >= maxOffset {
			break
		}
		next = h.LastOffset() + 1
		p += size
	}
	return dst[:start+p], checkedCRC, nil
}

// cutOrFail serves the good batches (dst[start:start+p]) before a damaged
// one, or reports the damage when it is the first batch.
func cutOrFail(dst []byte, start, p int, s *segment, pos int64, err error) ([]byte, error) {
	if p > 0 {
		return dst[:start+p], nil
	}
	return dst[:start], &CorruptionError{Segment: s.logPath, Offset: pos, Err: err}
}

// OffsetForTimestamp returns the first offset whose record timestamp is
// >= ts and that timestamp (ListOffsets by time), decompressing the one
// batch that holds it when it is compressed.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	l.truncMu.RLock()
	defer l.truncMu.RUnlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return -1, -1, false
	}
	logStart := l.logStart
	var views []segmentView
	var maxes []int64
	for _, s := range l.segments {
		views = append(views, s.view())
		maxes = append(maxes, s.maxTs)
	}
	l.mu.Unlock()

	for i, v := range views {
		if maxes[i] < ts || v.next <= logStart {
			continue
		}
		pos := timeLookupPosition(v, ts, logStart)
		sc := newScanner(v.seg.log, v.seg.logPath, pos, v.size, 64<<10)
		for {
			h, raw, _, err := sc.next(true)
			if err != nil {
				break // end of segment or damage: try the next one
			}
			if h.LastOffset() < logStart || h.MaxTimestamp < ts {
				continue
			}
			off, rts := firstRecordAtOrAfter(raw, &h, ts, logStart)
			return off, rts, true
		}
	}
	return -1, -1, false
}

// timeLookupPosition is where a search for timestamp ts may start in v:
// the batch named by the time index's last entry below ts, once both
// indexes are confirmed to describe the data; otherwise the position of
// logStart found by scanning.
func timeLookupPosition(v segmentView, ts, logStart int64) int64 {
	if e, ok := v.seg.timeIdx.lookupBefore(v.times, ts); ok && e.Offset >= logStart {
		if h, pos, found, err := findBatch(v, e.Offset, true); err == nil && found &&
			h.BaseOffset == e.Offset && h.MaxTimestamp == e.Timestamp {
			return pos
		}
	}
	if _, pos, found, err := findBatch(v, logStart, true); err == nil && found {
		return pos
	}
	if _, pos, found, err := findBatch(v, logStart, false); err == nil && found {
		return pos
	}
	return 0
}

// MaxTimestamp returns the offset and timestamp of the record with the
// largest timestamp (ListOffsets MAX_TIMESTAMP): the first record carrying
// it, looking inside compressed batches; (-1, -1) for an empty log.
func (l *Log) MaxTimestamp() (offset int64, timestamp int64) {
	l.truncMu.RLock()
	defer l.truncMu.RUnlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return -1, -1
	}
	var best *segment
	for _, s := range l.segments {
		if s.maxTs >= 0 && (best == nil || s.maxTs > best.maxTs) {
			best = s
		}
	}
	if best == nil {
		l.mu.Unlock()
		return -1, -1
	}
	v, ts, at := best.view(), best.maxTs, best.maxTsOffset
	l.mu.Unlock()

	h, pos, found, err := findBatch(v, at, true)
	if err != nil || !found {
		return at, ts
	}
	raw := make([]byte, h.Size())
	if _, err := v.seg.log.ReadAt(raw, pos); err != nil {
		return at, ts
	}
	if off, rts := firstRecordAtOrAfter(raw, &h, ts, 0); rts == ts {
		return off, ts
	}
	return h.LastOffset(), ts
}

// firstRecordAtOrAfter finds the first record of a batch at or after
// minOffset with timestamp >= ts, decompressing the records if needed. In
// a log-append-time batch every record carries the batch's max timestamp.
// If the records do not parse it answers at batch granularity: the
// batch's first offset at or after minOffset and its max timestamp.
func firstRecordAtOrAfter(raw []byte, h *batch.Header, ts, minOffset int64) (int64, int64) {
	fallback := func() (int64, int64) { return max(h.BaseOffset, minOffset), h.MaxTimestamp }
	if h.LogAppendTimeType() {
		return fallback()
	}
	b, err := records(raw, h)
	if err != nil {
		return fallback()
	}
	it := batch.NewRecordIter(b, h.NumRecords)
	for offDelta, tsDelta, ok := it.Next(); ok; offDelta, tsDelta, ok = it.Next() {
		off, rts := h.BaseOffset+int64(offDelta), h.BaseTimestamp+tsDelta
		if off >= minOffset && rts >= ts {
			return off, rts
		}
	}
	return fallback()
}

// AbortedTxns returns the aborted transactions overlapping
// [fromOffset, toOffset), oldest marker first (read_committed Fetch).
func (l *Log) AbortedTxns(fromOffset, toOffset int64) []AbortedTxn {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []AbortedTxn
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].nextOffset > fromOffset })
	for _, s := range l.segments[min(i, len(l.segments)):] {
		for _, t := range s.txn.entries {
			if t.LastOffset >= fromOffset && t.FirstOffset < toOffset {
				out = append(out, t)
			}
		}
	}
	return out
}
