package log

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// countingFS counts the files open through it, per file suffix, and the
// bytes read from .log files (to tell a scan from an index lookup).
type countingFS struct {
	vfs.FS
	mu       sync.Mutex
	open     map[string]int // suffix -> open files
	logBytes int64          // bytes read from .log files
}

func newCountingFS(inner vfs.FS) *countingFS {
	return &countingFS{FS: inner, open: map[string]int{}}
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	ext := filepath.Ext(name)
	c.mu.Lock()
	c.open[ext]++
	c.mu.Unlock()
	return &countingFile{File: f, fs: c, ext: ext}, nil
}

// openFiles returns the number of open files with suffix ext ("" = all).
func (c *countingFS) openFiles(ext string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ext != "" {
		return c.open[ext]
	}
	n := 0
	for _, v := range c.open {
		n += v
	}
	return n
}

func (c *countingFS) logBytesRead() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logBytes
}

type countingFile struct {
	vfs.File
	fs     *countingFS
	ext    string
	closed bool
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	if f.ext == logSuffix {
		f.fs.mu.Lock()
		f.fs.logBytes += int64(n)
		f.fs.mu.Unlock()
	}
	return n, err
}

func (f *countingFile) Close() error {
	f.fs.mu.Lock()
	if !f.closed {
		f.closed = true
		f.fs.open[f.ext]--
	}
	f.fs.mu.Unlock()
	return f.File.Close()
}

// indexFilesIn lists the .index and .timeindex files under root.
func indexFilesIn(t *testing.T, fsys vfs.FS, dirs ...string) []string {
	t.Helper()
	var out []string
	for _, d := range dirs {
		entries, err := fsys.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); ext == indexSuffix || ext == timeIndexSuffix {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// TestNewLogsHoldOneFD: 1,000 new logs create no index file and hold one
// file descriptor each (the .log), counted through the FS and in
// /proc/self/fd; a log opens an index file only once entries must be
// written to it, and holds one more descriptor per such file.
func TestNewLogsHoldOneFD(t *testing.T) {
	const n = 1000
	root := t.TempDir()
	cfs := newCountingFS(vfs.Default)
	fdsBefore := openFDs()
	logs := make([]*Log, 0, n)
	var dirs []string
	for i := range n {
		dir := filepath.Join(root, strconv.Itoa(i))
		logs = append(logs, openTest(t, dir, testConfig(), Options{FS: cfs}))
		dirs = append(dirs, dir)
	}
	fdsAfter := openFDs()
	defer func() {
		for _, l := range logs {
			l.Close()
		}
	}()
	if got := cfs.openFiles(""); got != n {
		t.Fatalf("%d new logs hold %d files (%d .log, %d .index, %d .timeindex), want %d", n, got,
			cfs.openFiles(logSuffix), cfs.openFiles(indexSuffix), cfs.openFiles(timeIndexSuffix), n)
	}
	// The process may open a descriptor or two of its own meanwhile (the
	// runtime's poller); two per log would be 1,000 more.
	if d := fdsAfter - fdsBefore; fdsBefore >= 0 && (d < n || d > n+10) {
		t.Fatalf("%d new logs added %d fds to the process, want %d", n, d, n)
	}
	if files := indexFilesIn(t, vfs.Default, dirs...); len(files) != 0 {
		t.Fatalf("new logs created index files: %v", files[:min(len(files), 5)])
	}

	// One partition: appends whose index entries stay pending keep it at
	// one fd; the first write of entries opens (creates) the file.
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 1 // an entry per batch
	one := newCountingFS(errorfs.NewMem())
	l := openTest(t, faultDir, cfg, Options{FS: one})
	defer l.Close()
	perFile := pendingLimit / offsetEntrySize // offset entries before the first write
	appendN(t, l, perFile/2, 1, 0, -1, 1)     // no timestamps: no time entries
	if got := one.openFiles(""); got != 1 {
		t.Fatalf("%d files open with %d pending entries, want 1", got, l.segments[0].offIdx.n)
	}
	if files := indexFilesIn(t, one.FS, faultDir); len(files) != 0 {
		t.Fatalf("index files %v before any entry was written", files)
	}
	appendN(t, l, perFile, 1, 0, -1, 1)
	files := indexFilesIn(t, one.FS, faultDir)
	if !slices.Contains(files, segmentFileName(faultDir, 0, indexSuffix)) {
		t.Fatalf("index files %v after the first offset-index write", files)
	}
	if got, idx := one.openFiles(""), one.openFiles(indexSuffix); got != 1+len(files) || idx != 1 {
		t.Fatalf("%d files open (%d .index) with index files %v, want %d (1)", got, idx, files, 1+len(files))
	}
}

// lazyWorkload writes batches with increasing timestamps (and, with tsGaps,
// some batches without a larger timestamp) and returns them.
func lazyWorkload(t *testing.T, l *Log, count, valueSize int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range count {
		leo := l.LogEndOffset()
		ts := int64(1000 + 10*i)
		if i%3 == 2 {
			ts = 1000 // does not raise the max timestamp
		}
		b := testBatch{base: leo, records: 1 + i%3, epoch: int32(i / 50), ts: ts, valueSize: valueSize}.build()
		if _, err := l.Append(b); err != nil {
			t.Fatalf("Append: %v", err)
		}
		out = append(out, b)
	}
	return out
}

// checkLookupsMatchScan checks every index of l against a scan of its
// data: each offset-index entry names the batch at its position, each
// time-index entry a batch carrying the running maximum timestamp; index
// lookups (without the fallback to a scan that reads use on a mismatch)
// find what a scan from the segment start finds; OffsetForTimestamp and
// MaxTimestamp answer what a scan of the whole log answers.
func checkLookupsMatchScan(t *testing.T, l *Log) {
	t.Helper()
	all := readAllGaps(t, l)
	hs := headers(t, all)
	l.mu.Lock()
	segs := slices.Clone(l.segments)
	logStart := l.logStart
	l.mu.Unlock()
	for _, s := range segs {
		l.mu.Lock()
		v := s.view()
		segMax, segMaxOff := s.maxTs, s.maxTsOffset
		l.mu.Unlock()
		// Scan the segment.
		type scanned struct {
			h   batch.Header
			pos int64
		}
		var batches []scanned
		sc := newScanner(s.log, s.logPath, 0, v.size, 64<<10)
		for {
			h, _, pos, err := sc.next(false)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("scan %s: %v", s.logPath, err)
			}
			batches = append(batches, scanned{h, pos})
		}
		byPos := map[int64]batch.Header{}
		wantMax, wantMaxOff := int64(-1), int64(-1)
		runningMax := map[int64]int64{} // base offset -> max ts up to that batch
		for _, b := range batches {
			byPos[b.pos] = b.h
			if b.h.MaxTimestamp > wantMax {
				wantMax, wantMaxOff = b.h.MaxTimestamp, b.h.BaseOffset
			}
			runningMax[b.h.BaseOffset] = wantMax
		}
		if len(batches) > 0 && (segMax != wantMax || segMaxOff != wantMaxOff) {
			t.Fatalf("%s: max timestamp %d at %d, a scan gives %d at %d", s.logPath, segMax, segMaxOff, wantMax, wantMaxOff)
		}
		var buf [timeEntrySize]byte
		for i := range v.off.n {
			b, err := s.offIdx.entryAt(&v.off, i, buf[:])
			if err != nil {
				t.Fatalf("%s entry %d: %v", s.offIdx.path, i, err)
			}
			e := decodeOffsetEntry(b, s.base)
			if h, ok := byPos[e.Position]; !ok || h.LastOffset() != e.Offset {
				t.Fatalf("%s entry %d %+v does not name a batch", s.offIdx.path, i, e)
			}
		}
		for i := range v.times.n {
			b, err := s.timeIdx.entryAt(&v.times, i, buf[:])
			if err != nil {
				t.Fatalf("%s entry %d: %v", s.timeIdx.path, i, err)
			}
			e := decodeTimeEntry(b, s.base)
			if m, ok := runningMax[e.Offset]; !ok || m != e.Timestamp {
				t.Fatalf("%s entry %d %+v: the scan's running max there is %d (found %v)", s.timeIdx.path, i, e, m, ok)
			}
		}
		for _, b := range batches {
			for _, off := range []int64{b.h.BaseOffset, b.h.LastOffset()} {
				h1, p1, f1, err := findBatch(v, off, true)
				if err != nil {
					t.Fatalf("%s: index lookup of %d: %v", s.logPath, off, err)
				}
				h2, p2, f2, _ := findBatch(v, off, false)
				if f1 != f2 || p1 != p2 || h1.BaseOffset != h2.BaseOffset {
					t.Fatalf("%s: lookup of %d found %d@%d, a scan %d@%d", s.logPath, off, h1.BaseOffset, p1, h2.BaseOffset, p2)
				}
			}
		}
	}
	// Whole-log timestamp lookups against a scan.
	maxTs, maxOff := int64(-1), int64(-1)
	var raws [][]byte
	for p := 0; p < len(all); {
		h, _ := batch.ParseHeader(all[p:])
		raws = append(raws, all[p:p+h.Size()])
		p += h.Size()
	}
	for i, h := range hs {
		if h.MaxTimestamp > maxTs {
			maxTs = h.MaxTimestamp
			maxOff, _ = firstRecordAtOrAfter(raws[i], &hs[i], maxTs, 0)
		}
	}
	if off, ts := l.MaxTimestamp(); len(hs) > 0 && (off != maxOff || ts != maxTs) {
		t.Fatalf("MaxTimestamp %d@%d, a scan gives %d@%d", ts, off, maxTs, maxOff)
	}
	for _, ts := range []int64{-5, 0, 999, 1000, 1001, 1005, 1010, 1333, 1500, 2000, 3000, 5000, 1 << 40} {
		wantOff, wantTs, wantOK := int64(-1), int64(-1), false
		for i, h := range hs {
			if h.LastOffset() < logStart || h.MaxTimestamp < ts {
				continue
			}
			wantOff, wantTs = firstRecordAtOrAfter(raws[i], &hs[i], ts, logStart)
			wantOK = true
			break
		}
		off, gotTs, ok := l.OffsetForTimestamp(ts)
		if ok != wantOK || off != wantOff || gotTs != wantTs {
			t.Fatalf("OffsetForTimestamp(%d) = %d %d %v, a scan gives %d %d %v", ts, off, gotTs, ok, wantOff, wantTs, wantOK)
		}
	}
}

// TestLazyIndexCrash cuts the power at the points where lazy index files
// matter: right after creation, after appends whose entries stayed
// pending, after the first write of entries, after a roll (before the
// background flush) and after a clean close. The restart finds a prefix
// of the log holding everything flushed, with indexes that agree with a
// scan of the data.
func TestLazyIndexCrash(t *testing.T) {
	small := testConfig()
	small.SegmentBytes = 1 << 20
	small.IndexIntervalBytes = 1
	roll := testConfig()
	roll.SegmentBytes = 4000
	roll.IndexIntervalBytes = 300
	for _, c := range []struct {
		name string
		cfg  Config
		// run writes and returns the batches appended and the offset
		// below which they must survive.
		run func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64)
	}{
		{"created", small, func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64) {
			return nil, 0
		}},
		{"pending, not flushed", small, func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64) {
			return lazyWorkload(t, l, 20, 10), 0
		}},
		{"pending, group commit", small, func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64) {
			bs := lazyWorkload(t, l, 20, 10)
			if err := l.WaitFlushed(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			if files := indexFilesIn(t, mem, faultDir); len(files) != 0 {
				t.Fatalf("index files %v with every entry pending", files)
			}
			return bs, l.LogEndOffset()
		}},
		{"first index write, group commit", small, func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64) {
			bs := lazyWorkload(t, l, pendingLimit/offsetEntrySize+50, 10)
			if err := l.WaitFlushed(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			if files := indexFilesIn(t, mem, faultDir); len(files) == 0 {
				t.Fatal("no index file after pendingLimit bytes of entries")
			}
			return bs, l.LogEndOffset()
		}},
		{"first index write, full flush", small, func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64) {
			bs := lazyWorkload(t, l, pendingLimit/offsetEntrySize+50, 10)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			return bs, l.LogEndOffset()
		}},
		{"rolled, group commit", roll, func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64) {
			bs := lazyWorkload(t, l, 40, 100)
			if len(l.SegmentBaseOffsets()) < 3 {
				t.Fatalf("no rolls: %v", l.SegmentBaseOffsets())
			}
			if err := l.WaitFlushed(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			return bs, l.LogEndOffset()
		}},
		{"rolled, not flushed", roll, func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64) {
			return lazyWorkload(t, l, 40, 100), 0
		}},
		{"rolled, full flush, more appends", roll, func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64) {
			bs := lazyWorkload(t, l, 40, 100)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			flushed := l.LogEndOffset()
			return append(bs, lazyWorkload(t, l, 5, 100)...), flushed
		}},
		{"clean close", roll, func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64) {
			bs := lazyWorkload(t, l, 45, 100)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			return bs, l.LogEndOffset()
		}},
		{"clean close, small active segment", roll, func(t *testing.T, l *Log, mem *errorfs.MemFS) ([][]byte, int64) {
			bs := lazyWorkload(t, l, 2, 10)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if files := indexFilesIn(t, mem, faultDir); !slices.Equal(files, []string{segmentFileName(faultDir, 0, timeIndexSuffix)}) {
				t.Fatalf("index files %v after closing a segment with a time entry and no offset entry", files)
			}
			return bs, l.LogEndOffset()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, torn := range []bool{false, true} {
				mem := errorfs.NewMem()
				l := openTest(t, faultDir, c.cfg, Options{FS: mem})
				l.flusher.stop() // the test decides what is flushed
				written, flushed := c.run(t, l, mem)
				var crashed *errorfs.MemFS
				if torn {
					crashed = mem.TornCrashClone(rand.New(rand.NewPCG(7, 7)))
				} else {
					crashed = mem.CrashClone()
				}
				l.Abandon()
				l2 := openTest(t, faultDir, c.cfg, Options{FS: crashed})
				got := readAllGaps(t, l2)
				if all := slices.Concat(written...); !bytes.HasPrefix(all, got) {
					t.Fatalf("torn=%v: recovered %d bytes that are not a prefix of the %d written", torn, len(got), len(all))
				}
				if l2.LogEndOffset() < flushed {
					t.Fatalf("torn=%v: recovered up to %d, %d was flushed", torn, l2.LogEndOffset(), flushed)
				}
				checkLookupsMatchScan(t, l2)
				// And again after a clean close of the recovered log.
				lazyWorkload(t, l2, 3, 10)
				if err := l2.Close(); err != nil {
					t.Fatal(err)
				}
				l3 := openTest(t, faultDir, c.cfg, Options{FS: crashed.CrashClone()})
				checkLookupsMatchScan(t, l3)
				l3.Close()
			}
		})
	}
}

// TestCleanOpenMissingIndexFiles: segments whose index files never
// existed (no entries) open cleanly without a recovery scan and answer
// lookups; an active segment whose offset index file is missing although
// it must have had entries is rebuilt (that one segment is scanned).
func TestCleanOpenMissingIndexFiles(t *testing.T) {
	cfg := testConfig() // log.index.interval.bytes 512
	for _, c := range []struct {
		name    string
		ts      int64 // -1: batches without timestamps, so no time entries
		count   int
		missing []string // index files of the active segment absent after Close
		remove  string   // index file to delete after Close (damage)
		rebuilt bool
	}{
		{"no offset entries", 1000, 2, []string{indexSuffix}, "", false},
		{"no entries at all", -1, 2, []string{indexSuffix, timeIndexSuffix}, "", false},
		{"offset index lost", 1000, 20, nil, indexSuffix, true},
		{"time index lost", 1000, 20, nil, timeIndexSuffix, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := errorfs.NewMem()
			l := openTest(t, faultDir, cfg, Options{FS: mem})
			var written [][]byte
			for range c.count {
				leo := l.LogEndOffset()
				ts := c.ts
				if ts >= 0 {
					ts += leo
				}
				recs := 2
				if ts < 0 {
					recs = 1 // max timestamp -1
				}
				b := testBatch{base: leo, records: recs, ts: ts, valueSize: 100}.build()
				if _, err := l.Append(b); err != nil {
					t.Fatal(err)
				}
				written = append(written, b)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, suf := range []string{indexSuffix, timeIndexSuffix} {
				_, err := mem.Stat(segmentFileName(faultDir, 0, suf))
				if exists, want := err == nil, !slices.Contains(c.missing, suf); exists != want {
					t.Fatalf("%s exists %v after Close, want %v", suf, exists, want)
				}
			}
			if c.remove != "" {
				if err := mem.Remove(segmentFileName(faultDir, 0, c.remove)); err != nil {
					t.Fatal(err)
				}
				if err := mem.SyncDir(faultDir); err != nil {
					t.Fatal(err)
				}
			}
			// A restart, not a power loss: the clean-shutdown marker is
			// written without an fsync (TestCloseHintsLostInCrash).
			cfs := newCountingFS(mem)
			l2 := openTest(t, faultDir, cfg, Options{FS: cfs})
			defer l2.Close()
			read := cfs.logBytesRead()
			s := l2.segments[0]
			if rebuilt := s.verified.prefixEnd == s.size; rebuilt != c.rebuilt {
				t.Fatalf("segment rebuilt by recovery: %v, want %v (read %d of %d bytes)", rebuilt, c.rebuilt, read, s.size)
			}
			t.Logf("clean open read %d of the segment's %d bytes (rebuilt %v)", read, s.size, c.rebuilt)
			if !bytes.Equal(readAll(t, l2), slices.Concat(written...)) {
				t.Fatal("content")
			}
			checkLookupsMatchScan(t, l2)
		})
	}
}

// TestCleanOpenReadsOnlyTheTail: a clean open of a large segment whose
// indexes exist reads its last batches, not the segment.
func TestCleanOpenReadsOnlyTheTail(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 20
	mem := errorfs.NewMem()
	l := openTest(t, faultDir, cfg, Options{FS: mem})
	appendN(t, l, 2000, 2, 0, 1000, 100)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cfs := newCountingFS(mem)
	l2 := openTest(t, faultDir, cfg, Options{FS: cfs})
	defer l2.Close()
	read, size := cfs.logBytesRead(), l2.Size()
	if read > int64(4*cfg.IndexIntervalBytes)+128<<10 || read*10 > size {
		t.Fatalf("clean open read %d bytes of a %d-byte segment", read, size)
	}
	if n := cfs.openFiles(indexSuffix) + cfs.openFiles(timeIndexSuffix); n != 0 {
		t.Fatalf("%d index files open after a clean open", n)
	}
	checkLookupsMatchScan(t, l2)
	if n := cfs.openFiles(indexSuffix); n != 1 {
		t.Fatalf("%d offset index files open after lookups in the middle of the segment, want 1", n)
	}
}

// TestCloseAndRollMakeIndexesDurable is the negative control for lazy
// creation: entries still pending when the log closes, or when it rolls,
// must be in the index files that survive a power loss. (A clean open
// that found them missing would rebuild them and hide the omission;
// this test reads the files themselves.)
func TestCloseAndRollMakeIndexesDurable(t *testing.T) {
	t.Run("close", func(t *testing.T) {
		cfg := testConfig()
		cfg.SegmentBytes = 1 << 20
		cfg.IndexIntervalBytes = 100
		mem := errorfs.NewMem()
		l := openTest(t, faultDir, cfg, Options{FS: mem})
		lazyWorkload(t, l, 30, 100)
		wantOff, wantTime := indexBytes(t, l, 0)
		if len(wantOff) == 0 || len(wantTime) == 0 {
			t.Fatal("workload made no index entries")
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// Close appends the final time entry.
		checkIndexFile(t, mem.CrashClone(), segmentFileName(faultDir, 0, indexSuffix), wantOff)
		gotTime, _ := vfs.ReadFile(mem.CrashClone(), segmentFileName(faultDir, 0, timeIndexSuffix))
		if !bytes.HasPrefix(gotTime, wantTime) {
			t.Fatalf("durable time index %x lacks the entries %x", gotTime, wantTime)
		}
	})
	t.Run("roll", func(t *testing.T) {
		cfg := testConfig()
		cfg.SegmentBytes = 3000
		cfg.IndexIntervalBytes = 100
		mem := errorfs.NewMem()
		l := openTest(t, faultDir, cfg, Options{FS: mem})
		defer l.Abandon()
		lazyWorkload(t, l, 10, 100)
		before := l.SegmentBaseOffsets()
		wantOff, _ := indexBytes(t, l, 0)
		lazyWorkload(t, l, 30, 100)
		if len(l.SegmentBaseOffsets()) == len(before) {
			t.Fatal("no roll")
		}
		l.mu.Lock()
		s := l.segments[0]
		last := offsetEntry{Offset: s.lastBatchOffset, Position: s.lastBatchPos}
		l.mu.Unlock()
		// The sealed index: every entry it had, then its sealing entry
		// for the last batch, fsynced by the roll's background flush,
		// which then moves the recovery point past the segment.
		waitFor(t, func() bool { return l.RecoveryPoint() >= l.SegmentBaseOffsets()[1] })
		got, err := vfs.ReadFile(mem.CrashClone(), segmentFileName(faultDir, 0, indexSuffix))
		if err != nil {
			t.Fatalf("sealed offset index not durable: %v", err)
		}
		if !bytes.HasPrefix(got, wantOff) || len(got) < offsetEntrySize ||
			decodeOffsetEntry(got[len(got)-offsetEntrySize:], 0) != last {
			t.Fatalf("durable sealed index %x: want a prefix %x and last entry %+v", got, wantOff, last)
		}
	})
}

// indexBytes returns the raw entries, pending included, of segment i's
// offset and time indexes.
func indexBytes(t *testing.T, l *Log, i int) (off, times []byte) {
	t.Helper()
	l.mu.Lock()
	s := l.segments[i]
	v := s.view()
	l.mu.Unlock()
	var buf [timeEntrySize]byte
	for k := range v.off.n {
		b, err := s.offIdx.entryAt(&v.off, k, buf[:])
		if err != nil {
			t.Fatal(err)
		}
		off = append(off, b...)
	}
	for k := range v.times.n {
		b, err := s.timeIdx.entryAt(&v.times, k, buf[:])
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, b...)
	}
	return off, times
}

func checkIndexFile(t *testing.T, fsys vfs.FS, path string, want []byte) {
	t.Helper()
	got, err := vfs.ReadFile(fsys, path)
	if err != nil {
		t.Fatalf("%s not durable: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("durable %s holds %d bytes, want the %d bytes of entries", path, len(got), len(want))
	}
}

// TestCleanOpenOpensNoIndexFile: a clean open of a log of several
// segments reads each index's length and last entry and closes it again;
// it holds one file descriptor per segment (the .log) until a lookup
// needs an index entry before the last.
func TestCleanOpenOpensNoIndexFile(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4000
	cfg.IndexIntervalBytes = 300
	mem := errorfs.NewMem()
	l := openTest(t, faultDir, cfg, Options{FS: mem})
	lazyWorkload(t, l, 60, 100)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cfs := newCountingFS(mem)
	l2 := openTest(t, faultDir, cfg, Options{FS: cfs})
	defer l2.Close()
	segs := len(l2.SegmentBaseOffsets())
	if segs < 3 {
		t.Fatalf("want 3+ segments, got %d", segs)
	}
	if got := cfs.openFiles(""); got != segs {
		t.Fatalf("%d files open after a clean open of %d segments (%d .index, %d .timeindex), want %d",
			got, segs, cfs.openFiles(indexSuffix), cfs.openFiles(timeIndexSuffix), segs)
	}
	checkLookupsMatchScan(t, l2)
}
