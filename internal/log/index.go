package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Index files are append-only arrays of fixed-size entries, not
// preallocated and not kept in memory: the file length gives the entry
// count and lookups binary-search the file with ReadAt. Only the last
// entry is cached, which serves reads at the tail without IO. See doc.go
// for the byte layouts.
const (
	OffsetIndexEntrySize = 8  // int32 relative offset, int32 position
	TimeIndexEntrySize   = 12 // int64 timestamp, int32 relative offset

	offsetEntrySize = OffsetIndexEntrySize
	timeEntrySize   = TimeIndexEntrySize
)

// DecodeOffsetIndexEntry decodes one .index entry of a segment based at
// base: the absolute offset and the position. Exported, with the entry
// sizes, for internal/logtool, so the layout is defined here only.
func DecodeOffsetIndexEntry(b []byte, base int64) (offset, position int64) {
	e := decodeOffsetEntry(b, base)
	return e.Offset, e.Position
}

// DecodeTimeIndexEntry decodes one .timeindex entry of a segment based at
// base: the timestamp and the absolute offset.
func DecodeTimeIndexEntry(b []byte, base int64) (timestamp, offset int64) {
	e := decodeTimeEntry(b, base)
	return e.Timestamp, e.Offset
}

type offsetEntry struct {
	Offset   int64 // absolute; the last offset of the batch at Position
	Position int64
}

type timeEntry struct {
	Timestamp int64
	Offset    int64 // absolute; the base offset of the batch holding Timestamp
}

// decodeOffsetEntry decodes one .index entry of a segment based at base.
func decodeOffsetEntry(b []byte, base int64) offsetEntry {
	return offsetEntry{
		Offset:   base + int64(int32(binary.BigEndian.Uint32(b[0:]))),
		Position: int64(int32(binary.BigEndian.Uint32(b[4:]))),
	}
}

func appendOffsetEntry(dst []byte, e offsetEntry, base int64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(int32(e.Offset-base)))
	return binary.BigEndian.AppendUint32(dst, uint32(int32(e.Position)))
}

func decodeTimeEntry(b []byte, base int64) timeEntry {
	return timeEntry{
		Timestamp: int64(binary.BigEndian.Uint64(b[0:])),
		Offset:    base + int64(int32(binary.BigEndian.Uint32(b[8:]))),
	}
}

func appendTimeEntry(dst []byte, e timeEntry, base int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.Timestamp))
	return binary.BigEndian.AppendUint32(dst, uint32(int32(e.Offset-base)))
}

// indexFile is the shared machinery of the offset and time indexes. New
// entries collect in memory (pending) and reach the file in one write when
// pendingLimit bytes have gathered or the index is flushed, so appending
// small batches does not cost a write(2) per index entry; readers see
// pending entries through their view.
//
// The file is lazy (Kafka's LazyIndex): a new segment's index file is
// created only when entries must be written to it (pendingLimit reached,
// a full flush, a roll), and an existing one is opened only when its
// entries are read past the cached last entry or it is written or
// truncated. Until then the index holds no file descriptor, and an index
// with no entries may have no file at all: a missing file is an empty
// index (Log.checkIndexes says when a missing file means damage).
//
// Fields from n on are guarded by Log.mu; the file is only truncated
// under Log.truncMu held for writing. fileMu guards f, which readers open
// without Log.mu.
type indexFile struct {
	fsys      vfs.FS
	path      string
	base      int64
	entrySize int

	fileMu sync.Mutex
	f      vfs.File // nil until first needed

	onDisk  bool   // the file exists (f may still be nil)
	newFile bool   // created since the directory was last synced for it
	written bool   // written or truncated since its last fsync
	n       int64  // entries, in the file and pending
	fileN   int64  // entries in the file
	last    []byte // raw last entry, nil when n == 0
	// pending holds entries fileN..n-1. It is only appended to between
	// writes and replaced by a new array after each, so a reader's view
	// of it never changes under the reader.
	pending []byte
}

// pendingLimit is how many bytes of entries wait before being written.
const pendingLimit = 4 << 10

// newIndexFile is the index of a new segment: no entries, no file yet.
func newIndexFile(fsys vfs.FS, path string, base int64, entrySize int) *indexFile {
	return &indexFile{fsys: fsys, path: path, base: base, entrySize: entrySize}
}

// loadIndexFile reads the entry count and the last entry of an existing
// segment's index and closes the file again: it is reopened when first
// needed. A missing file is an empty index with onDisk false.
func loadIndexFile(fsys vfs.FS, path string, base int64, entrySize int) (*indexFile, error) {
	x := newIndexFile(fsys, path, base, entrySize)
	st, err := fsys.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return x, nil
	}
	if err != nil {
		return nil, storageErr("stat", path, err)
	}
	x.onDisk = true
	size := st.Size()
	if size == 0 {
		return x, nil
	}
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, storageErr("open", path, err)
	}
	defer f.Close()
	if size%int64(entrySize) != 0 {
		// A torn entry: drop it. The caller's sanity check decides whether
		// the rest can be trusted.
		if err := f.Truncate(size - size%int64(entrySize)); err != nil {
			return nil, storageErr("truncate", path, err)
		}
		size -= size % int64(entrySize)
	}
	x.n = size / int64(entrySize)
	x.fileN = x.n
	if x.n > 0 {
		x.last = make([]byte, entrySize)
		if _, err := f.ReadAt(x.last, (x.n-1)*int64(entrySize)); err != nil {
			return nil, storageErr("read", path, err)
		}
	}
	return x, nil
}

// file returns the open index file, opening (and, for a writer, creating)
// it on first use. Readers call it without Log.mu, only for entries
// already in the file; writers call it with Log.mu held.
func (x *indexFile) file() (vfs.File, error) {
	x.fileMu.Lock()
	defer x.fileMu.Unlock()
	if x.f == nil {
		f, err := x.fsys.OpenFile(x.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, storageErr("open", x.path, err)
		}
		x.f = f
	}
	return x.f, nil
}

// fileForWrite is file for a writer (Log.mu held): it records that the
// file was created, if it was, and that it needs an fsync.
func (x *indexFile) fileForWrite() (vfs.File, error) {
	f, err := x.file()
	if err != nil {
		return nil, err
	}
	if !x.onDisk {
		x.onDisk, x.newFile = true, true
	}
	x.written = true
	return f, nil
}

// materialize creates the file, empty, if it does not exist (Log.mu held).
func (x *indexFile) materialize() error {
	if x.onDisk {
		return nil
	}
	_, err := x.fileForWrite()
	return err
}

// syncTarget returns the file to fsync if it was written since its last
// fsync, and whether it was created since (its directory entry needs a
// directory fsync). Log.mu held.
func (x *indexFile) syncTarget() (t syncTarget, ok, created bool) {
	created, x.newFile = x.newFile, false
	if !x.written {
		return t, false, created
	}
	x.written = false
	x.fileMu.Lock()
	defer x.fileMu.Unlock()
	return syncTarget{x.path, x.f}, true, created
}

// indexView is a reader's snapshot of an index: the entries it may read.
type indexView struct {
	n, fileN int64
	pending  []byte
	last     [timeEntrySize]byte // the last entry (entrySize bytes of it)
}

func (x *indexFile) view() indexView {
	v := indexView{n: x.n, fileN: x.fileN, pending: x.pending}
	copy(v.last[:], x.last)
	return v
}

// entryAt returns entry i of view v.
func (x *indexFile) entryAt(v *indexView, i int64, buf []byte) ([]byte, error) {
	b := buf[:x.entrySize]
	if i >= v.fileN {
		off := (i - v.fileN) * int64(x.entrySize)
		if off+int64(x.entrySize) > int64(len(v.pending)) {
			return nil, errIndexMismatch
		}
		copy(b, v.pending[off:])
		return b, nil
	}
	f, err := x.file()
	if err != nil {
		return nil, err
	}
	if _, err := f.ReadAt(b, i*int64(x.entrySize)); err != nil {
		return nil, err
	}
	return b, nil
}

// appendRaw adds entries (whole multiples of entrySize).
func (x *indexFile) appendRaw(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	x.pending = append(x.pending, b...)
	x.n += int64(len(b) / x.entrySize)
	if x.last == nil {
		x.last = make([]byte, x.entrySize)
	}
	copy(x.last, b[len(b)-x.entrySize:])
	if len(x.pending) >= pendingLimit {
		return x.flushPending()
	}
	return nil
}

// errIndexOpen marks a failure to open (or create) an index file before
// anything was written to it: the entries stay pending, in memory, and a
// later flushPending tries again (retry.go).
var errIndexOpen = errors.New("index file not opened; its entries stay pending")

// flushPending writes the pending entries to the file, creating it if
// need be.
func (x *indexFile) flushPending() error {
	if len(x.pending) == 0 {
		return nil
	}
	f, err := x.fileForWrite()
	if err != nil {
		return fmt.Errorf("%w (%w)", err, errIndexOpen)
	}
	if _, err := f.Write(x.pending); err != nil {
		return storageErr("write", x.path, err)
	}
	x.fileN = x.n
	x.pending = nil
	return nil
}

// startRebuild empties the index before recovery re-adds its entries
// (an existing file is truncated; a missing one stays missing until
// entries are written).
func (x *indexFile) startRebuild() error {
	if x.onDisk {
		f, err := x.fileForWrite()
		if err != nil {
			return err
		}
		if err := f.Truncate(0); err != nil {
			return storageErr("truncate", x.path, err)
		}
	}
	x.n, x.fileN, x.last, x.pending = 0, 0, nil, nil
	return nil
}

// truncateEntries keeps the first n entries. Called with no reader
// active (truncMu held for writing).
func (x *indexFile) truncateEntries(n int64) error {
	if n >= x.n {
		return nil
	}
	if n >= x.fileN {
		x.pending = x.pending[:(n-x.fileN)*int64(x.entrySize)]
	} else {
		f, err := x.fileForWrite()
		if err != nil {
			return err
		}
		if err := f.Truncate(n * int64(x.entrySize)); err != nil {
			return storageErr("truncate", x.path, err)
		}
		x.fileN, x.pending = n, nil
	}
	x.n = n
	if n == 0 {
		x.last = nil
		return nil
	}
	v := x.view()
	b, err := x.entryAt(&v, n-1, make([]byte, timeEntrySize))
	if err != nil {
		return storageErr("read", x.path, err)
	}
	copy(x.last, b)
	return nil
}

// search returns the largest i < n for which less(entry i) is true,
// assuming less is true for a prefix of entries; -1 if none. IO errors end
// the search early with a smaller (still safe: earlier) answer.
func (x *indexFile) search(v *indexView, n int64, less func(b []byte) bool) int64 {
	var buf [timeEntrySize]byte
	lo, hi := int64(0), n-1 // invariant: answer in [lo-1, hi]
	ans := int64(-1)
	for lo <= hi {
		mid := lo + (hi-lo)/2
		b, err := x.entryAt(v, mid, buf[:])
		if err != nil {
			return ans
		}
		if less(b) {
			ans = mid
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	return ans
}

// release closes the file if it is open and holds nothing unsynced
// (Open calls it once the checks that read entries are done): it is
// reopened when next needed.
func (x *indexFile) release() error {
	if x.written {
		return nil
	}
	return x.close()
}

// close closes the file if it is open. Called with no reader active.
func (x *indexFile) close() error {
	x.fileMu.Lock()
	defer x.fileMu.Unlock()
	if x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}

// offsetIndex maps offsets to byte positions in the segment.
type offsetIndex struct{ *indexFile }

// lookupPosition returns the position of a batch at or before the batch
// holding target, using only the entries in v. 0 is always safe.
func (x offsetIndex) lookupPosition(v indexView, target int64) int64 {
	e, _ := x.lookup(v, target)
	return e.Position
}

// lookup returns the last entry whose offset is <= target; ok=false (and
// position 0) if there is none or the index cannot be read.
func (x offsetIndex) lookup(v indexView, target int64) (offsetEntry, bool) {
	if v.n == 0 {
		return offsetEntry{}, false
	}
	if last := decodeOffsetEntry(v.last[:], x.base); last.Offset <= target {
		return last, true
	}
	i := x.search(&v, v.n-1, func(b []byte) bool { return decodeOffsetEntry(b, x.base).Offset <= target })
	if i < 0 {
		return offsetEntry{}, false
	}
	var buf [offsetEntrySize]byte
	b, err := x.entryAt(&v, i, buf[:])
	if err != nil {
		return offsetEntry{}, false
	}
	return decodeOffsetEntry(b, x.base), true
}

// truncateToPosition drops entries pointing at or after pos.
func (x offsetIndex) truncateToPosition(pos int64) error {
	v := x.view()
	i := x.search(&v, x.n, func(b []byte) bool { return decodeOffsetEntry(b, x.base).Position < pos })
	return x.truncateEntries(i + 1)
}

// lastEntry returns the cached last entry.
func (x offsetIndex) lastEntry() (offsetEntry, bool) {
	if x.n == 0 {
		return offsetEntry{}, false
	}
	return decodeOffsetEntry(x.last, x.base), true
}

// sanityCheck verifies what can be checked cheaply (Kafka's
// OffsetIndex.sanityCheck): the last entry lies inside the segment.
func (x offsetIndex) sanityCheck(logSize int64) error {
	e, ok := x.lastEntry()
	if !ok {
		return nil
	}
	if e.Offset < x.base || e.Position < 0 || e.Position >= logSize {
		return &CorruptionError{Segment: x.path, Offset: (x.n - 1) * offsetEntrySize,
			Err: fmt.Errorf("last entry (offset %d, position %d) outside segment of %d bytes", e.Offset, e.Position, logSize)}
	}
	return nil
}

// timeIndex maps timestamps to offsets.
type timeIndex struct{ *indexFile }

func (x timeIndex) lastEntry() (timeEntry, bool) {
	if x.n == 0 {
		return timeEntry{}, false
	}
	return decodeTimeEntry(x.last, x.base), true
}

// lookupBefore returns the last entry whose timestamp is strictly below
// ts (every batch up to that entry's batch has smaller timestamps);
// ok=false if there is none.
func (x timeIndex) lookupBefore(v indexView, ts int64) (timeEntry, bool) {
	if v.n == 0 {
		return timeEntry{}, false
	}
	if last := decodeTimeEntry(v.last[:], x.base); last.Timestamp < ts {
		return last, true
	}
	i := x.search(&v, v.n-1, func(b []byte) bool { return decodeTimeEntry(b, x.base).Timestamp < ts })
	if i < 0 {
		return timeEntry{}, false
	}
	var buf [timeEntrySize]byte
	b, err := x.entryAt(&v, i, buf[:])
	if err != nil {
		return timeEntry{}, false
	}
	return decodeTimeEntry(b, x.base), true
}

// truncateToOffset drops entries for offsets at or after off.
func (x timeIndex) truncateToOffset(off int64) error {
	v := x.view()
	i := x.search(&v, x.n, func(b []byte) bool { return decodeTimeEntry(b, x.base).Offset < off })
	return x.truncateEntries(i + 1)
}

func (x timeIndex) sanityCheck(nextOffset int64) error {
	e, ok := x.lastEntry()
	if !ok {
		return nil
	}
	if e.Offset < x.base || (nextOffset >= 0 && e.Offset >= nextOffset) {
		return &CorruptionError{Segment: x.path, Offset: (x.n - 1) * timeEntrySize,
			Err: fmt.Errorf("last entry offset %d outside segment", e.Offset)}
	}
	return nil
}
