package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// keyed is a record for keyedBatchAt: value nil is a tombstone.
type keyed struct{ key, value string }

// keyedBatchAt builds a batch of keyed records at base, compressed with
// codec, with no producer.
func keyedBatchAt(base, ts int64, codec int8, recs ...keyed) []byte {
	var body []byte
	for i, r := range recs {
		var rec []byte
		rec = append(rec, 0)
		rec = binary.AppendVarint(rec, int64(i))
		rec = binary.AppendVarint(rec, int64(i))
		rec = binary.AppendVarint(rec, int64(len(r.key)))
		rec = append(rec, r.key...)
		if r.value == "" {
			rec = binary.AppendVarint(rec, -1)
		} else {
			rec = binary.AppendVarint(rec, int64(len(r.value)))
			rec = append(rec, r.value...)
		}
		rec = binary.AppendVarint(rec, 0)
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	body = compress(codec, body)
	b := make([]byte, batch.HeaderSize, batch.HeaderSize+len(body))
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(batch.HeaderSize-batch.LogOverhead+len(body)))
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(codec))
	binary.BigEndian.PutUint32(b[23:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(b[27:], uint64(ts))
	binary.BigEndian.PutUint64(b[35:], uint64(ts+int64(len(recs)-1)))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0))
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(len(recs)))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// logRecords reads every record of the log: offset → key=value (value
// "" for a tombstone), and checks offsets strictly increase.
func logRecords(t *testing.T, l *Log) map[int64]keyed {
	t.Helper()
	out := map[int64]keyed{}
	last := int64(-1)
	raw := readAll(t, l)
	it := batch.NewIter(raw)
	for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
		if h.BaseOffset <= last {
			t.Fatalf("batch at %d after offset %d: an offset served twice", h.BaseOffset, last)
		}
		last = h.LastOffset()
		section, err := records(b, &h)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := parseRecords(section, &h, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			off := h.BaseOffset + int64(r.offsetDelta)
			if off > h.LastOffset() {
				t.Fatalf("record %d past its batch's last offset %d", off, h.LastOffset())
			}
			v := ""
			if !r.tombstone {
				valLen, n := binary.Varint(r.rest[len(r.key)+varintLen(int64(len(r.key))):])
				v = string(r.rest[len(r.key)+varintLen(int64(len(r.key)))+n:][:valLen])
			}
			out[off] = keyed{string(r.key), v}
		}
	}
	return out
}

func varintLen(v int64) int { return len(binary.AppendVarint(nil, v)) }

// latestOf is the latest value of every key (tombstones delete).
func latestOf(recs map[int64]keyed) map[string]string {
	out := map[string]string{}
	for _, off := range slices.Sorted(maps.Keys(recs)) {
		r := recs[off]
		if r.value == "" {
			delete(out, r.key)
		} else {
			out[r.key] = r.value
		}
	}
	return out
}

func compactConfig() Config {
	c := testConfig()
	c.SegmentBytes = 2048
	c.IndexIntervalBytes = 256
	c.Compact, c.NoDelete = true, true
	c.MinCleanableDirtyRatio = 0.5
	c.DeleteRetentionMs = 1000
	return c
}

// fillKeyed appends n batches of 3 records over keys k0..k(keys-1), every
// seventh record a tombstone, rotating through the codecs.
func fillKeyed(t *testing.T, l *Log, n, keys int, ts int64) {
	t.Helper()
	codecs := []int8{batch.CodecNone, batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd}
	for i := range n {
		base := l.LogEndOffset()
		var recs []keyed
		for j := range 3 {
			k := fmt.Sprintf("k%d", (i*3+j)*7%keys)
			v := fmt.Sprintf("v%d", base+int64(j))
			if (i*3+j)%7 == 3 {
				v = ""
			}
			recs = append(recs, keyed{k, v})
		}
		if _, err := l.Append(keyedBatchAt(base, ts+int64(i), codecs[i%len(codecs)], recs...)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCompactionKeepsLatestValuesAtTheirOffsets(t *testing.T) {
	dir := t.TempDir()
	clock := &fixedClock{t: time.UnixMilli(1_000_000)}
	l := openTest(t, dir, compactConfig(), Options{Now: clock.now})
	fillKeyed(t, l, 200, 20, 1_000_000)
	before := logRecords(t, l)
	activeBase := l.SegmentBaseOffsets()[len(l.SegmentBaseOffsets())-1]
	segsBefore := len(l.SegmentBaseOffsets())
	c := NewCleaner(1<<20, 0, nil)
	st, err := c.Clean(l, CleanRequest{Now: clock.t, FirstUnstable: l.LogEndOffset()})
	if err != nil || !st.Cleaned {
		t.Fatalf("clean: %+v %v", st, err)
	}
	if st.EndOffset != activeBase {
		t.Errorf("cleaned up to %d, want the active segment's base %d", st.EndOffset, activeBase)
	}
	check := func(l *Log, what string) {
		after := logRecords(t, l)
		for off, r := range after {
			if before[off] != r {
				t.Fatalf("%s: offset %d holds %+v, was %+v", what, off, r, before[off])
			}
			if off >= activeBase {
				continue
			}
		}
		for off, r := range before {
			if off >= activeBase {
				if after[off] != r {
					t.Fatalf("%s: active segment record %d changed: %+v", what, off, after[off])
				}
			}
		}
		if !maps.Equal(latestOf(before), latestOf(after)) {
			t.Fatalf("%s: latest values differ", what)
		}
		// Every offset still present is found by a read from it (the
		// rebuilt offset index), and every gap reads the next batch.
		for off := range after {
			b, err := l.Read(off, 1, true)
			if err != nil || len(headers(t, b)) == 0 {
				t.Fatalf("%s: Read(%d): %v", what, off, err)
			}
			if h := headers(t, b)[0]; h.BaseOffset > off || h.LastOffset() < off {
				t.Fatalf("%s: Read(%d) gave batch %d..%d", what, off, h.BaseOffset, h.LastOffset())
			}
		}
	}
	check(l, "after cleaning")
	after := logRecords(t, l)
	if len(after) >= len(before)/2 {
		t.Errorf("kept %d of %d records", len(after), len(before))
	}
	// Tombstones are kept (their horizon is set) until delete.retention.ms
	// has passed, then go at the next pass.
	tombs := func(recs map[int64]keyed) (n int) {
		for off, r := range recs {
			if r.value == "" && off < activeBase {
				n++
			}
		}
		return n
	}
	if tombs(after) == 0 {
		t.Fatal("tombstones removed at their first cleaning")
	}
	clock.t = clock.t.Add(2 * time.Second)
	if _, err := c.Clean(l, CleanRequest{Now: clock.t, FirstUnstable: l.LogEndOffset(), Force: true}); err != nil {
		t.Fatal(err)
	}
	if n := tombs(logRecords(t, l)); n != 0 {
		t.Fatalf("%d tombstones left after delete.retention.ms", n)
	}
	// The second pass groups the small cleaned segments into few.
	if n := len(l.SegmentBaseOffsets()); n > segsBefore/3 {
		t.Errorf("%d segments after the second pass, %d before: small cleaned segments are not grouped", n, segsBefore)
	}
	before = logRecords(t, l)
	check(l, "after the second pass")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, compactConfig(), Options{Now: clock.now})
	check(l, "after a clean reopen")
	l.Abandon()
	os.Remove(filepath.Join(dir, recoveryPointName))
	l = openTest(t, dir, compactConfig(), Options{Now: clock.now})
	defer l.Close()
	check(l, "after recovery of every segment")
	if cp, _ := l.CleanerCheckpoint(); cp != activeBase {
		t.Errorf("checkpoint %d, want %d", cp, activeBase)
	}
}

func TestCompactionFollowsDirtyRatioAndLag(t *testing.T) {
	clock := &fixedClock{t: time.UnixMilli(1_000_000)}
	cfg := compactConfig()
	l := openTest(t, t.TempDir(), cfg, Options{Now: clock.now})
	defer l.Close()
	fillKeyed(t, l, 100, 20, 1_000_000)
	c := NewCleaner(1<<20, 0, nil)
	req := CleanRequest{Now: clock.t, FirstUnstable: l.LogEndOffset()}
	// min.compaction.lag.ms: segments younger than it are not cleanable.
	cfg.MinCompactionLagMs = 10_000
	l.SetConfig(cfg)
	if st, _ := c.Clean(l, req); st.Cleaned {
		t.Fatal("cleaned segments younger than min.compaction.lag.ms")
	}
	cfg.MinCompactionLagMs = 0
	l.SetConfig(cfg)
	if st, _ := c.Clean(l, req); !st.Cleaned {
		t.Fatal("not cleaned at a dirty ratio of 1")
	}
	// More data, below a min.cleanable.dirty.ratio of 0.9.
	cfg.MinCleanableDirtyRatio = 0.9
	l.SetConfig(cfg)
	fillKeyed(t, l, 25, 20, 1_000_100)
	req.FirstUnstable = l.LogEndOffset()
	ca, err := l.Cleanable(clock.t, req.FirstUnstable)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := c.Clean(l, req); st.Cleaned || ca.Ratio >= cfg.MinCleanableDirtyRatio {
		t.Fatalf("cleaned at ratio %.2f (min %.2f)", ca.Ratio, cfg.MinCleanableDirtyRatio)
	}
	// max.compaction.lag.ms makes it cleanable now.
	cfg.MaxCompactionLagMs = 50
	l.SetConfig(cfg)
	clock.t = clock.t.Add(time.Second)
	req.Now = clock.t
	if st, _ := c.Clean(l, req); !st.Cleaned {
		t.Fatalf("not cleaned past max.compaction.lag.ms (ratio %.2f)", ca.Ratio)
	}
	// Nothing is cleaned at or past the first unstable offset.
	fillKeyed(t, l, 60, 20, 1_000_200)
	req.FirstUnstable = l.LogEndOffset() - 100
	req.Force = true
	st, err := c.Clean(l, req)
	if err != nil || st.EndOffset > req.FirstUnstable {
		t.Fatalf("cleaned to %d past the first unstable offset %d (%v)", st.EndOffset, req.FirstUnstable, err)
	}
}

// The offset map is bounded by its buffer: with room for 18 keys and 300
// distinct keys a pass cleans only the offsets it covered, and later
// passes go on from the checkpoint.
func TestCompactionOffsetMapIsBounded(t *testing.T) {
	clock := &fixedClock{t: time.UnixMilli(1_000_000)}
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0
	l := openTest(t, t.TempDir(), cfg, Options{Now: clock.now})
	defer l.Close()
	fillKeyed(t, l, 60, 300, 1_000_000)
	before := logRecords(t, l)
	c := NewCleaner(20*offsetMapSlot, 0.9, nil)
	if c.m.n != 20 {
		t.Fatalf("%d slots", c.m.n)
	}
	req := CleanRequest{Now: clock.t, FirstUnstable: l.LogEndOffset()}
	var ends []int64
	for range 100 {
		st, err := c.Clean(l, req)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Cleaned {
			break
		}
		ends = append(ends, st.EndOffset)
		if c.m.entries > 18 {
			t.Fatalf("map took %d keys", c.m.entries)
		}
	}
	active := l.SegmentBaseOffsets()[len(l.SegmentBaseOffsets())-1]
	if len(ends) < 3 || ends[len(ends)-1] != active || !slices.IsSorted(ends) {
		t.Fatalf("pass ends %v, want several rising to %d", ends, active)
	}
	if !maps.Equal(latestOf(before), latestOf(logRecords(t, l))) {
		t.Fatal("latest values differ")
	}
}

// processClone copies a MemFS as a kill -9 leaves it: everything written,
// synced or not.
func processClone(t *testing.T, m *errorfs.MemFS, dir string) *errorfs.MemFS {
	t.Helper()
	c := errorfs.NewMem()
	if err := c.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := m.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		data, err := vfs.ReadFile(m, filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f, err := c.OpenFile(filepath.Join(dir, e.Name()), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(data)
		f.Sync()
		f.Close()
	}
	if err := c.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCompactionCrashMatrix cuts a cleaning pass at each step of its swap
// (clean_swap.go), as a power loss (only synced bytes and directory
// entries survive) and as a kill -9 (everything written survives), and
// opens the log from what is left: each group holds its old segments or
// its cleaned one (every record the pass keeps is there, every record
// there is at its original offset), the same latest value of every key,
// no offset twice, and no leftover .cleaned or .swap file.
func TestCompactionCrashMatrix(t *testing.T) {
	lost := runCleanCrashMatrix(t, false)
	if lost > 0 {
		t.Fatalf("%d crash points lost data", lost)
	}
}

// TestCompactionCrashMatrixWithoutSync is its negative control: cleaned files
// renamed into place without their fsync lose the group's data at a
// power loss after the swap.
func TestCompactionCrashMatrixWithoutSync(t *testing.T) {
	lost := runCleanCrashMatrix(t, true)
	t.Logf("%d crash points lost data without the fsync", lost)
	if lost == 0 {
		t.Fatal("no crash point lost data without the fsync: the matrix does not test it")
	}
}

func runCleanCrashMatrix(t *testing.T, skipSync bool) (lost int) {
	const dir = "/data/t-0"
	mem := errorfs.NewMem()
	clock := &fixedClock{t: time.UnixMilli(1_000_000)}
	cfg := compactConfig()
	type cut struct {
		step string
		fs   *errorfs.MemFS
	}
	var cuts []cut
	opts := Options{FS: mem, Now: clock.now}
	opts.private.cleanSkipSync = skipSync
	opts.private.cleanStep = func(step string) {
		cuts = append(cuts, cut{"power loss at " + step, mem.CrashClone()}, cut{"kill -9 at " + step, processClone(t, mem, dir)})
	}
	l := openTest(t, dir, cfg, opts)
	fillKeyed(t, l, 150, 20, 1_000_000)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	before := logRecords(t, l)
	c := NewCleaner(1<<20, 0, nil)
	st, err := c.Clean(l, CleanRequest{Now: clock.t, FirstUnstable: l.LogEndOffset()})
	if err != nil || !st.Cleaned {
		t.Fatalf("clean: %+v %v", st, err)
	}
	cleaned := logRecords(t, l)
	cuts = append(cuts, cut{"power loss after the pass", mem.CrashClone()})
	l.Close()
	if len(cuts) < 9 {
		t.Fatalf("only %d cut points", len(cuts))
	}
	for _, ct := range cuts {
		o := Options{FS: ct.fs, Now: clock.now}
		rl, err := Open(dir, cfg, o)
		if err != nil {
			t.Fatalf("%s: open: %v", ct.step, err)
		}
		got := logRecords(t, rl)
		rl.Close()
		ents, _ := ct.fs.ReadDir(dir)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), cleanedSuffix) || strings.HasSuffix(e.Name(), swapSuffix) {
				t.Errorf("%s: %s left", ct.step, e.Name())
			}
		}
		bad := ""
		switch {
		case !maps.Equal(latestOf(got), latestOf(before)):
			bad = "latest values differ"
		default:
			// Each group holds its old records or its cleaned ones:
			// cleaned ⊆ got ⊆ before, each record at its offset.
			for off, r := range got {
				if before[off] != r {
					bad = fmt.Sprintf("offset %d holds %+v, was %+v", off, r, before[off])
				}
			}
			for off, r := range cleaned {
				if got[off] != r {
					bad = fmt.Sprintf("offset %d (%+v) lost", off, r)
				}
			}
		}
		if bad != "" {
			lost++
			t.Logf("%s: %s", ct.step, bad)
		}
	}
	return lost
}

// TestCompactionWhileAppendingAndReading cleans while a writer appends
// and readers read from the start: every read sees increasing offsets and
// records that are at their original offsets (the swap is atomic for
// readers and appends). Run with -race.
func TestCompactionWhileAppendingAndReading(t *testing.T) {
	clock := &fixedClock{t: time.UnixMilli(1_000_000)}
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0
	l := openTest(t, t.TempDir(), cfg, Options{Now: clock.now})
	defer l.Close()
	fillKeyed(t, l, 100, 20, 1_000_000)
	written := logRecords(t, l)
	done := make(chan struct{})
	errs := make(chan error, 2)
	go func() { // writer: the same deterministic values, so readers can check them
		defer func() { errs <- nil }()
		for i := range 600 {
			select {
			case <-done:
				return
			default:
			}
			base := l.LogEndOffset()
			b := keyedBatchAt(base, 1_000_000, batch.CodecNone, keyed{fmt.Sprintf("k%d", i%20), fmt.Sprintf("v%d", base)})
			if _, err := l.Append(b); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() { // reader
		defer func() { errs <- nil }()
		for {
			select {
			case <-done:
				return
			default:
			}
			last := int64(-1)
			for off := l.LogStartOffset(); ; {
				b, err := l.Read(off, 4096, true)
				if err != nil {
					errs <- err
					return
				}
				if len(b) == 0 {
					break
				}
				it := batch.NewIter(b)
				for raw, h, ok := it.Next(); ok; raw, h, ok = it.Next() {
					if h.BaseOffset <= last {
						errs <- fmt.Errorf("offset %d after %d", h.BaseOffset, last)
						return
					}
					if _, err := batch.Validate(raw); err != nil {
						errs <- err
						return
					}
					last, off = h.LastOffset(), h.LastOffset()+1
				}
			}
		}
	}()
	c := NewCleaner(1<<20, 0, nil)
	passes := 0
	for range 12 {
		st, err := c.Clean(l, CleanRequest{Now: clock.t, FirstUnstable: l.LogEndOffset(), Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if st.Cleaned {
			passes++
		}
	}
	close(done)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	after := logRecords(t, l)
	for off, r := range written {
		if a, ok := after[off]; ok && a != r {
			t.Fatalf("offset %d: %+v, was %+v", off, a, r)
		}
	}
	if passes < 6 {
		t.Fatalf("only %d passes cleaned", passes)
	}
}

// TestCompactionSwapExcludesTruncation: a truncation (a mirror's) that
// comes while a cleaned group's .swap files are durable waits for the
// swap (swapMu): a crash afterwards never completes a swap over segments
// the truncation cut, so no truncated offset comes back. Two cuts: inside
// the first group (the segments being swapped) and above it.
func TestCompactionSwapExcludesTruncation(t *testing.T) {
	for _, inGroup := range []bool{true, false} {
		cut, leos, err := swapTruncationScenario(t, inGroup, false)
		if err != nil {
			t.Fatalf("in group %v: the pass failed: %v", inGroup, err)
		}
		for i, leo := range leos {
			if leo > cut {
				t.Fatalf("in group %v: clone %d recovered to log end %d, truncated to %d", inGroup, i, leo, cut)
			}
		}
	}
}

// TestCompactionSwapWithoutSwapMu is the negative control: with the swap
// not holding swapMu, the truncation into the group runs while the
// group's .swap files are durable; the swap then finds its segments
// changed (the log goes offline), and recovery of either clone completes
// the durable swap and brings back offsets the truncation cut.
func TestCompactionSwapWithoutSwapMu(t *testing.T) {
	cut, leos, err := swapTruncationScenario(t, true, true)
	if err == nil {
		t.Fatal("the pass swapped over a truncated group without an error")
	}
	back := 0
	for _, leo := range leos {
		if leo > cut {
			back++
		}
	}
	if back == 0 {
		t.Fatalf("no clone brought back offsets past the truncation point %d: %v (the control)", cut, leos)
	}
	t.Logf("pass error %q; clones recovered to log ends %v, truncated to %d", err, leos, cut)
}

// swapTruncationScenario cleans a log and, when the first group's .swap
// files are durable, truncates it (inside that group, or above it). It
// returns the truncation point, the log end each crash clone taken after
// the pass recovers to (a power loss and a kill -9), and the pass's
// error. Records at or past the cut fail the test whatever the seam.
func swapTruncationScenario(t *testing.T, inGroup, skipSwapMu bool) (int64, []int64, error) {
	t.Helper()
	const dir = "/data/t-0"
	mem := errorfs.NewMem()
	clock := &fixedClock{t: time.UnixMilli(1_000_000)}
	cfg := compactConfig()
	opts := Options{FS: mem, Now: clock.now}
	opts.private.cleanSkipSwapMu = skipSwapMu
	var l *Log
	var cut int64
	truncated := make(chan error, 1)
	opts.private.cleanStep = func(step string) {
		if step != "swap files durable" || cut != 0 {
			return
		}
		bases := l.SegmentBaseOffsets()
		cut = bases[1] + 2 // above the first group
		if inGroup {
			cut = bases[1] - 2 // the first group holds at least the first segment
		}
		go func() { truncated <- l.TruncateTo(cut) }()
		if skipSwapMu {
			// Nothing holds it back: wait for it, as a slow swap would.
			select {
			case err := <-truncated:
				truncated <- err
			case <-time.After(10 * time.Second):
				t.Error("the truncation did not run while the swap was under way")
			}
			return
		}
		time.Sleep(20 * time.Millisecond) // it would run now without swapMu
	}
	l = openTest(t, dir, cfg, opts)
	fillKeyed(t, l, 150, 20, 1_000_000)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	c := NewCleaner(1<<20, 0, nil)
	_, cleanErr := c.Clean(l, CleanRequest{Now: clock.t, FirstUnstable: l.LogEndOffset()})
	if err := <-truncated; err != nil {
		t.Fatal(err)
	}
	clones := []*errorfs.MemFS{mem.CrashClone(), processClone(t, mem, dir)}
	l.Close()
	var leos []int64
	for i, fsys := range clones {
		rl, err := Open(dir, cfg, Options{FS: fsys, Now: clock.now})
		if err != nil {
			t.Fatal(err)
		}
		for off := range logRecords(t, rl) {
			if off >= cut && !skipSwapMu {
				t.Fatalf("clone %d: record %d at or past the truncation point %d", i, off, cut)
			}
		}
		leos = append(leos, rl.LogEndOffset())
		rl.Close()
	}
	return cut, leos, cleanErr
}
