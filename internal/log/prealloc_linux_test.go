package log

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// diskUse is the bytes of blocks allocated to the file at path, and its size.
func diskUse(t *testing.T, path string) (blocks, size int64) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512, st.Size
}

// TestPreallocation: past preallocFrom bytes the active segment's blocks
// are reserved ahead of its data while its size stays that of the data
// (what readers and recovery see); the full flush after a roll (the
// roll's background flush) and Close give the reserved tail back, and a
// crash with it reserved recovers the same log.
// Negative controls: without FALLOC_FL_KEEP_SIZE the file's size runs
// ahead of the data; without the trims the rolled segment and the closed
// active one keep the blocks.
func TestPreallocation(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 24 << 20
	cfg.Preallocate = true
	l := openTest(t, dir, cfg, Options{})
	seg0 := segmentFileName(dir, 0, logSuffix)
	appendN(t, l, 7, 1, 0, 1000, 1<<20) // 7 MiB: past preallocFrom
	blocks, size := diskUse(t, seg0)
	if l.active().allocated == 0 {
		t.Skip("fallocate not supported by this file system")
	}
	if size != l.active().size || blocks < size+1<<20 {
		t.Fatalf("7 MiB in: size %d (data %d), %d bytes of blocks: want the data's size and blocks reserved past it", size, l.active().size, blocks)
	}
	appendN(t, l, 20, 1, 0, 2000, 1<<20) // rolls at 24 MiB
	if len(l.segments) < 2 {
		t.Fatalf("%d segments, want a roll", len(l.segments))
	}
	if err := l.Flush(); err != nil { // what the roll's background flush does
		t.Fatal(err)
	}
	if blocks, size := diskUse(t, seg0); blocks > size+64<<10 {
		t.Errorf("rolled segment: %d bytes of blocks for %d bytes of data", blocks, size)
	}
	appendN(t, l, 6, 1, 0, 3000, 1<<20)
	leo := l.LogEndOffset()
	want := readAll(t, l)
	// A crash with the active segment's tail reserved: the same log.
	l.Abandon()
	l = openTest(t, dir, cfg, Options{})
	if l.LogEndOffset() != leo || string(readAll(t, l)) != string(want) {
		t.Fatalf("after a crash: log end %d, want %d, or other bytes", l.LogEndOffset(), leo)
	}
	appendN(t, l, 6, 1, 0, 4000, 1<<20)
	active := l.active().logPath
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if blocks, size := diskUse(t, active); blocks > size+64<<10 {
		t.Errorf("closed active segment %s: %d bytes of blocks for %d bytes of data", filepath.Base(active), blocks, size)
	}
	if _, err := os.Stat(active); err != nil {
		t.Fatal(err)
	}
}
