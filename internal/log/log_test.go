package log

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestAppendRead(t *testing.T) {
	l := openTest(t, t.TempDir(), testConfig(), Options{})
	defer l.Close()
	batches := appendN(t, l, 50, 5, 0, 1000, 40)
	if got := l.LogEndOffset(); got != 250 {
		t.Fatalf("LEO %d", got)
	}
	for off := int64(0); off < 250; off++ {
		b, err := l.Read(off, 1, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if !bytes.Equal(b, batches[off/5]) {
			t.Fatalf("Read(%d) returned wrong batch", off)
		}
	}
	// maxBytes bounds the answer to whole batches.
	size := len(batches[0])
	b, err := l.Read(0, 3*size+size/2, false)
	if err != nil || len(headers(t, b)) != 3 {
		t.Fatalf("Read maxBytes: %d batches, %v", len(headers(t, b)), err)
	}
	if b, err := l.Read(0, size-1, false); err != nil || len(b) != 0 {
		t.Fatalf("Read without minOneBatch: %d bytes, %v", len(b), err)
	}
	if b, err := l.Read(250, 1000, true); err != nil || len(b) != 0 {
		t.Fatalf("Read at LEO: %d bytes, %v", len(b), err)
	}
	if _, err := l.Read(251, 1000, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read past LEO: %v", err)
	}
	if _, err := l.Read(-1, 1000, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read below start: %v", err)
	}
	// ReadUpTo stops before a batch based at maxOffset.
	b, err = l.ReadUpTo(0, 12, 1<<20, true)
	if hs := headers(t, b); err != nil || len(hs) != 3 || hs[2].BaseOffset != 10 {
		t.Fatalf("ReadUpTo: %d batches, %v", len(hs), err)
	}
	if b, err := l.ReadUpTo(10, 10, 1<<20, true); err != nil || len(b) != 0 {
		t.Fatalf("ReadUpTo at max: %d bytes, %v", len(b), err)
	}
	if !bytes.Equal(readAll(t, l), slices.Concat(batches...)) {
		t.Fatal("log content differs from what was appended")
	}
}

func TestAppendValidation(t *testing.T) {
	l := openTest(t, t.TempDir(), testConfig(), Options{})
	defer l.Close()
	appendN(t, l, 2, 3, 0, 0, 10)
	good := testBatch{base: 6, records: 2}.build()
	cases := map[string][]byte{
		"empty":        nil,
		"below LEO":    testBatch{base: 5, records: 2}.build(),
		"truncated":    good[:len(good)-1],
		"trailing":     append(slices.Clone(good), 1, 2, 3),
		"bad magic":    func() []byte { b := slices.Clone(good); b[16] = 1; return b }(),
		"out of order": slices.Concat(testBatch{base: 6, records: 2}.build(), testBatch{base: 7}.build()),
	}
	for name, data := range cases {
		if _, err := l.Append(data); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("%s: err %v, want ErrInvalidBatch", name, err)
		}
	}
	// Several batches in one call, with a gap (compacted mirrored data).
	multi := slices.Concat(testBatch{base: 6, records: 2}.build(), testBatch{base: 20, records: 1}.build())
	res, err := l.Append(multi)
	if err != nil || res.FirstOffset != 6 || res.LastOffset != 20 || res.LogEndOffset != 21 {
		t.Fatalf("multi append %+v %v", res, err)
	}
	b, err := l.Read(10, 1<<20, true) // in the gap: served from the next batch
	if hs := headers(t, b); err != nil || len(hs) != 1 || hs[0].BaseOffset != 20 {
		t.Fatalf("read in gap: %v %v", hs, err)
	}
}

func TestEmptyLogAdoptsFirstOffset(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, testConfig(), Options{})
	if _, err := l.Append(testBatch{base: 1000, records: 3}.build()); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1003 || !slices.Equal(l.SegmentBaseOffsets(), []int64{1000}) {
		t.Fatalf("start %d end %d segs %v", l.LogStartOffset(), l.LogEndOffset(), l.SegmentBaseOffsets())
	}
	l.Close()
	l = openTest(t, dir, testConfig(), Options{})
	defer l.Close()
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1003 {
		t.Fatalf("after reopen: start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
}

func TestRollAndReopen(t *testing.T) {
	dir := t.TempDir()
	var rolls []int64
	var mu sync.Mutex
	opts := Options{OnRoll: func(b int64) { mu.Lock(); rolls = append(rolls, b); mu.Unlock() }}
	l := openTest(t, dir, testConfig(), opts)
	batches := appendN(t, l, 100, 4, 0, 0, 200) // ~1 KiB batches, 16 KiB segments
	bases := l.SegmentBaseOffsets()
	if len(bases) < 5 {
		t.Fatalf("expected several segments, got %v", bases)
	}
	mu.Lock()
	if !slices.Equal(rolls, bases[1:]) {
		t.Fatalf("OnRoll %v, segments %v", rolls, bases)
	}
	mu.Unlock()
	// Index files are lazy: a sealed segment has its offset index (the
	// roll wrote its sealing entry); the time index waits for the
	// background flush. After Close every segment with entries has both.
	for i, b := range bases {
		sufs := []string{logSuffix}
		if i < len(bases)-1 {
			sufs = append(sufs, indexSuffix)
		}
		for _, suf := range sufs {
			if _, err := os.Stat(segmentFileName(dir, b, suf)); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := slices.Concat(batches...)
	if !bytes.Equal(readAll(t, l), want) {
		t.Fatal("content differs before reopen")
	}
	size := l.Size()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 100, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	for _, b := range bases {
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if _, err := os.Stat(segmentFileName(dir, b, suf)); err != nil {
				t.Fatal(err)
			}
		}
	}
	l = openTest(t, dir, testConfig(), Options{})
	defer l.Close()
	if l.LogEndOffset() != 400 || l.Size() != size || !slices.Equal(l.SegmentBaseOffsets(), bases) {
		t.Fatalf("reopen: LEO %d size %d segs %v", l.LogEndOffset(), l.Size(), l.SegmentBaseOffsets())
	}
	if !bytes.Equal(readAll(t, l), want) {
		t.Fatal("content differs after reopen")
	}
	appendN(t, l, 1, 1, 0, 0, 1)
}

func TestSegmentMsRoll(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentMs = 1000
	l := openTest(t, t.TempDir(), cfg, Options{})
	defer l.Close()
	appendN(t, l, 1, 1, 0, 10_000, 1)
	appendN(t, l, 1, 1, 0, 10_500, 1) // within log.roll.ms of the first batch
	appendN(t, l, 1, 1, 0, 11_001, 1) // past it
	if got := l.SegmentBaseOffsets(); !slices.Equal(got, []int64{0, 2}) {
		t.Fatalf("segments %v", got)
	}
}

func TestIndexLookups(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 100
	l := openTest(t, t.TempDir(), cfg, Options{})
	defer l.Close()
	batches := appendN(t, l, 300, 2, 0, 0, 20)
	s := l.segments[0]
	if s.offIdx.n < 100 {
		t.Fatalf("only %d index entries", s.offIdx.n)
	}
	var pos int64
	positions := map[int64]int64{} // batch base → position
	for i, b := range batches {
		positions[int64(i*2)] = pos
		pos += int64(len(b))
	}
	v := s.offIdx.view()
	for off := int64(0); off < 600; off++ {
		got := s.offIdx.lookupPosition(v, off)
		if got > positions[off/2*2] {
			t.Fatalf("lookup(%d) = %d past the batch at %d", off, got, positions[off/2*2])
		}
		if got < positions[off/2*2]-int64(3*len(batches[0])) && off > 10 {
			t.Fatalf("lookup(%d) = %d too far before %d", off, got, positions[off/2*2])
		}
	}
	// Time index entries increase.
	var last int64 = -1
	for i := range s.timeIdx.n {
		var buf [timeEntrySize]byte
		v := s.timeIdx.view()
		b, _ := s.timeIdx.entryAt(&v, i, buf[:])
		e := decodeTimeEntry(b, 0)
		if e.Timestamp <= last {
			t.Fatalf("time index not increasing at %d", i)
		}
		last = e.Timestamp
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	l := openTest(t, t.TempDir(), testConfig(), Options{})
	defer l.Close()
	// 100 batches of 4 records; record at offset o has timestamp 1000+o.
	appendN(t, l, 100, 4, 0, 1000, 100)
	for _, ts := range []int64{0, 1000, 1001, 1002, 1003, 1004, 1250, 1399} {
		off, got, ok := l.OffsetForTimestamp(ts)
		want := max(ts-1000, 0)
		if !ok || off != want || got != 1000+want {
			t.Errorf("OffsetForTimestamp(%d) = %d,%d,%v want %d", ts, off, got, ok, want)
		}
	}
	if _, _, ok := l.OffsetForTimestamp(1400); ok {
		t.Error("timestamp past the end found")
	}
	if off, ts := l.MaxTimestamp(); off != 399 || ts != 1399 {
		t.Errorf("MaxTimestamp = %d,%d", off, ts)
	}
	if err := l.DeleteRecordsBefore(130); err != nil {
		t.Fatal(err)
	}
	if off, _, ok := l.OffsetForTimestamp(1001); !ok || off != 130 {
		t.Errorf("after DeleteRecords: %d %v", off, ok)
	}
}

func TestTruncateTo(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, testConfig(), Options{})
	batches := appendN(t, l, 100, 4, 0, 0, 200)
	segsBefore := l.SegmentBaseOffsets()
	if err := l.TruncateTo(400); err != nil || l.LogEndOffset() != 400 {
		t.Fatalf("no-op truncate: %v %d", err, l.LogEndOffset())
	}
	if err := l.TruncateTo(202); err != nil { // inside the batch at 200
		t.Fatal(err)
	}
	if l.LogEndOffset() != 200 {
		t.Fatalf("LEO after truncate %d", l.LogEndOffset())
	}
	for _, b := range l.SegmentBaseOffsets() {
		if b > 200 {
			t.Fatalf("segment %d survived truncation to 200 (before: %v)", b, segsBefore)
		}
	}
	want := slices.Concat(batches[:50]...)
	if !bytes.Equal(readAll(t, l), want) {
		t.Fatal("content after truncate")
	}
	if off, ts := l.MaxTimestamp(); off != 199 || ts != 199 {
		t.Fatalf("MaxTimestamp after truncate %d %d", off, ts)
	}
	more := appendN(t, l, 10, 4, 0, 200, 200)
	want = slices.Concat(want, slices.Concat(more...))
	l.Close()
	l = openTest(t, dir, testConfig(), Options{})
	if !bytes.Equal(readAll(t, l), want) || l.LogEndOffset() != 240 {
		t.Fatal("content after truncate, append, reopen")
	}
	// Truncating to the first segment's base empties the log.
	if err := l.TruncateTo(0); err != nil || l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("truncate to 0: %v LEO %d size %d", err, l.LogEndOffset(), l.Size())
	}
	appendN(t, l, 1, 1, 0, 0, 1)
	l.Close()
}

func TestRetention(t *testing.T) {
	clock := &fixedClock{t: time.UnixMilli(1_000_000)}
	cfg := testConfig()
	cfg.RetentionMs = 10_000
	l := openTest(t, t.TempDir(), cfg, Options{Now: clock.now})
	defer l.Close()
	// Old data first, then fresh data.
	appendN(t, l, 40, 4, 0, 900_000, 200)
	appendN(t, l, 40, 4, 0, 995_000, 200)
	segs := l.SegmentBaseOffsets()
	n, err := l.ApplyRetention()
	if err != nil || n == 0 {
		t.Fatalf("time retention deleted %d: %v", n, err)
	}
	left := l.SegmentBaseOffsets()
	if left[0] > 160 || !slices.Equal(left, segs[n:]) {
		t.Fatalf("time retention left %v of %v", left, segs)
	}
	if l.LogStartOffset() != left[0] {
		t.Fatalf("log start %d, first segment %d", l.LogStartOffset(), left[0])
	}
	if _, err := l.Read(0, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read of deleted data: %v", err)
	}
	// Size retention.
	l.cfg.RetentionMs = -1
	l.cfg.RetentionBytes = 20 << 10
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if l.Size() > 20<<10+16<<10 || len(l.SegmentBaseOffsets()) < 2 {
		t.Fatalf("size retention left %d bytes in %v", l.Size(), l.SegmentBaseOffsets())
	}
	// The active segment always stays.
	l.cfg.RetentionBytes = 0
	l.ApplyRetention()
	if got := l.SegmentBaseOffsets(); len(got) != 1 {
		t.Fatalf("segments %v", got)
	}
	readAll(t, l)
}

func TestDeleteRecordsBefore(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, testConfig(), Options{})
	appendN(t, l, 100, 4, 0, 0, 200)
	segs := l.SegmentBaseOffsets()
	target := segs[2] + 5
	if err := l.DeleteRecordsBefore(target); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != target || l.SegmentBaseOffsets()[0] != segs[2] {
		t.Fatalf("start %d segs %v", l.LogStartOffset(), l.SegmentBaseOffsets())
	}
	if _, err := l.Read(target-1, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if err := l.DeleteRecordsBefore(401); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete past end: %v", err)
	}
	l.Close()
	l = openTest(t, dir, testConfig(), Options{})
	defer l.Close()
	if l.LogStartOffset() != target {
		t.Fatalf("start after reopen %d", l.LogStartOffset())
	}
}

func TestEpochCache(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, testConfig(), Options{})
	appendN(t, l, 5, 2, 0, 0, 10) // e0 at 0
	appendN(t, l, 5, 2, 2, 0, 10) // e2 at 10
	appendN(t, l, 1, 2, 1, 0, 10) // lower epoch: ignored
	appendN(t, l, 5, 2, 5, 0, 10) // e5 at 22
	want := []EpochEntry{{0, 0}, {2, 10}, {5, 22}}
	if got := l.EpochEntries(); !slices.Equal(got, want) {
		t.Fatalf("entries %v", got)
	}
	if e, ok := l.LatestEpoch(); !ok || e != 5 {
		t.Fatalf("latest %d %v", e, ok)
	}
	for _, c := range []struct {
		req     int32
		epoch   int32
		endOffs int64
	}{{-1, -1, -1}, {0, 0, 10}, {1, 0, 10}, {2, 2, 22}, {3, 2, 22}, {5, 5, 32}, {6, -1, -1}} {
		e, o := l.EndOffsetForEpoch(c.req)
		if e != c.epoch || o != c.endOffs {
			t.Errorf("EndOffsetForEpoch(%d) = %d,%d want %d,%d", c.req, e, o, c.epoch, c.endOffs)
		}
	}
	// New epochs are written by the next full flush, not by Append.
	if _, err := os.Stat(filepath.Join(dir, epochCheckpointName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("checkpoint written on the append path: %v", err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, epochCheckpointName))
	if err != nil || string(data) != "0\n3\n0 0\n2 10\n5 22\n" {
		t.Fatalf("checkpoint %q %v", data, err)
	}
	if err := l.TruncateTo(22); err != nil {
		t.Fatal(err)
	}
	if got := l.EpochEntries(); !slices.Equal(got, want[:2]) {
		t.Fatalf("after truncate %v", got)
	}
	l.Close()
	l = openTest(t, dir, testConfig(), Options{})
	defer l.Close()
	if got := l.EpochEntries(); !slices.Equal(got, want[:2]) {
		t.Fatalf("after reopen %v", got)
	}
	if err := l.DeleteRecordsBefore(12); err != nil {
		t.Fatal(err)
	}
	if got := l.EpochEntries(); !slices.Equal(got, []EpochEntry{{2, 12}}) {
		t.Fatalf("after DeleteRecords %v", got)
	}
}

func TestEpochCheckpointRebuilt(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, testConfig(), Options{})
	appendN(t, l, 3, 2, 1, 0, 10)
	appendN(t, l, 3, 2, 4, 0, 10)
	l.Close()
	os.WriteFile(filepath.Join(dir, epochCheckpointName), []byte("garbage"), 0o644)
	l = openTest(t, dir, testConfig(), Options{})
	defer l.Close()
	if got := l.EpochEntries(); !slices.Equal(got, []EpochEntry{{1, 0}, {4, 6}}) {
		t.Fatalf("rebuilt %v", got)
	}
}

func TestTxnIndex(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, testConfig(), Options{})
	appendN(t, l, 100, 4, 0, 0, 200)
	txns := []AbortedTxn{
		{ProducerID: 1, FirstOffset: 10, LastOffset: 20, LastStableOffset: 10},
		{ProducerID: 2, FirstOffset: 15, LastOffset: 150, LastStableOffset: 15},
		{ProducerID: 3, FirstOffset: 300, LastOffset: 390, LastStableOffset: 300},
	}
	for _, tx := range txns {
		if err := l.AppendAbortedTxn(tx); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AppendAbortedTxn(txns[1]); err != nil { // duplicate: no-op
		t.Fatal(err)
	}
	check := func(from, to int64, want ...AbortedTxn) {
		t.Helper()
		if got := l.AbortedTxns(from, to); !slices.Equal(got, want) {
			t.Errorf("AbortedTxns(%d,%d) = %v want %v", from, to, got, want)
		}
	}
	check(0, 10)
	check(0, 11, txns[0])
	check(20, 300, txns[0], txns[1])
	check(21, 300, txns[1])
	check(21, 301, txns[1], txns[2])
	check(0, 400, txns...)
	check(391, 400)
	l.Close()
	l = openTest(t, dir, testConfig(), Options{})
	check(0, 400, txns...)
	if err := l.TruncateTo(150); err != nil {
		t.Fatal(err)
	}
	check(0, 400, txns[0])
	l.Close()
}

func TestFlushAndFlushedOffset(t *testing.T) {
	cfg := testConfig()
	l := openTest(t, t.TempDir(), cfg, Options{})
	appendN(t, l, 3, 2, 0, 0, 10)
	if l.FlushedOffset() != 0 {
		t.Fatalf("flushed %d before Flush", l.FlushedOffset())
	}
	if err := l.Flush(); err != nil || l.FlushedOffset() != 6 {
		t.Fatalf("flush: %v %d", err, l.FlushedOffset())
	}
	l.Close()
	cfg.FlushIntervalMessages = 1
	l = openTest(t, t.TempDir(), cfg, Options{})
	defer l.Close()
	appendN(t, l, 3, 2, 0, 0, 10)
	if err := l.WaitFlushed(6); err != nil || l.FlushedOffset() != 6 {
		t.Fatalf("flush.interval.messages=1: %v, flushed %d", err, l.FlushedOffset())
	}
	if err := l.WaitFlushed(7); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("WaitFlushed past LEO: %v", err)
	}
}

func TestDelete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "topic-0")
	l := openTest(t, dir, testConfig(), Options{})
	appendN(t, l, 3, 2, 0, 0, 10)
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("dir still there: %v", err)
	}
}

// TestConcurrentReadersAndWriters runs readers against appends,
// truncation and retention; -race and the batch checks in headers() catch
// a reader that sees freed, reused or half-written bytes.
func TestConcurrentReadersAndWriters(t *testing.T) {
	cfg := testConfig()
	cfg.RetentionBytes = 64 << 10
	cfg.RetentionMs = -1
	l := openTest(t, t.TempDir(), cfg, Options{})
	defer l.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start, end := l.LogStartOffset(), l.LogEndOffset()
				if end == start {
					continue
				}
				off := start + int64(i*7+r)%(end-start)
				b, err := l.Read(off, 4096, true)
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue
				}
				if err != nil {
					t.Errorf("Read(%d): %v", off, err)
					return
				}
				for _, h := range headers(t, b) {
					if h.NumRecords != 4 {
						t.Errorf("bad batch at %d", h.BaseOffset)
					}
				}
			}
		}()
	}
	for i := range 300 {
		appendN(t, l, 1, 4, int32(i/100), 0, 200)
		switch i % 50 {
		case 20:
			if err := l.TruncateTo(l.LogEndOffset() - 10); err != nil {
				t.Fatal(err)
			}
		case 40:
			if _, err := l.ApplyRetention(); err != nil {
				t.Fatal(err)
			}
		case 45:
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
}

// TestOnRollMayCallBack: OnRoll runs with no Log lock held, so it may use
// the Log (the partition writes producer snapshots from it).
func TestOnRollMayCallBack(t *testing.T) {
	var l *Log
	var seen []int64
	opts := Options{OnRoll: func(base int64) {
		if err := l.Flush(); err != nil {
			t.Error(err)
		}
		seen = append(seen, l.LogEndOffset())
		appendN(t, l, 1, 1, 0, 0, 10) // even a write
	}}
	l = openTest(t, t.TempDir(), testConfig(), opts)
	defer l.Close()
	appendN(t, l, 40, 4, 0, 0, 200)
	if len(seen) == 0 {
		t.Fatal("no roll")
	}
}

// TestAfterClose: every method answers after Close without panicking;
// writes and reads say ErrClosed.
func TestAfterClose(t *testing.T) {
	for _, abandon := range []bool{false, true} {
		l := openTest(t, t.TempDir(), testConfig(), Options{})
		appendN(t, l, 3, 2, 0, 0, 10)
		if abandon {
			l.Abandon()
		} else if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(testBatch{base: 6}.build()); !errors.Is(err, ErrClosed) {
			t.Errorf("Append: %v", err)
		}
		if _, err := l.Read(0, 100, true); !errors.Is(err, ErrClosed) {
			t.Errorf("Read: %v", err)
		}
		for name, err := range map[string]error{
			"TruncateTo":       l.TruncateTo(1),
			"DeleteRecords":    l.DeleteRecordsBefore(1),
			"Flush":            l.Flush(),
			"AppendAbortedTxn": l.AppendAbortedTxn(AbortedTxn{1, 0, 1, 0}),
			"WaitFlushed":      l.WaitFlushed(6),
		} {
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("%s: %v", name, err)
			}
		}
		l.ApplyRetention()
		l.OffsetForTimestamp(0)
		l.MaxTimestamp()
		l.AbortedTxns(0, 10)
		l.EpochEntries()
		l.SegmentBaseOffsets()
		if err := l.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}
