package log

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

func TestUncleanOpenCutsTornTail(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, testConfig(), Options{})
	batches := appendN(t, l, 10, 3, 0, 0, 50)
	l.Flush()
	// Simulate a crash: no Close, so no clean-shutdown marker; then tear
	// the last batch.
	path := segmentFileName(dir, 0, logSuffix)
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()-5); err != nil {
		t.Fatal(err)
	}
	os.Remove(segmentFileName(dir, 0, indexSuffix))
	l2 := openTest(t, dir, testConfig(), Options{})
	defer l2.Close()
	if l2.LogEndOffset() != 27 {
		t.Fatalf("LEO %d after torn tail", l2.LogEndOffset())
	}
	if !bytes.Equal(readAll(t, l2), slices.Concat(batches[:9]...)) {
		t.Fatal("surviving batches differ")
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownName)); !os.IsNotExist(err) {
		t.Fatal("clean-shutdown marker present while open")
	}
	appendN(t, l2, 1, 3, 0, 0, 50)
	l.flusher.stop()
}

// TestRecoveredSegmentKeepsMaxTimestamp: a segment rebuilt by recovery
// ends its time index with its max timestamp, as a roll or Close leaves
// it (Kafka's LogSegment.recover), so that a later clean open, which
// takes a sealed segment's max timestamp from that entry, answers
// MaxTimestamp and OffsetForTimestamp as a scan does. Before, recovery
// only re-added the per-interval entries and a clean open after it could
// miss the segment's newest timestamps.
func TestRecoveredSegmentKeepsMaxTimestamp(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4000
	cfg.IndexIntervalBytes = 300
	mem := errorfs.NewMem()
	l := openTest(t, faultDir, cfg, Options{FS: mem})
	l.flusher.stop()
	// The newest timestamp of segment 0 is in a batch after its last
	// index interval.
	for i := range 40 {
		ts := int64(1000 + 10*i)
		if i%3 == 2 {
			ts = 1000
		}
		b := testBatch{base: l.LogEndOffset(), records: 1 + i%3, ts: ts, valueSize: 100}.build()
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.WaitFlushed(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	l.Abandon()
	l2 := openTest(t, faultDir, cfg, Options{FS: mem.CrashClone()}) // recovers every segment
	want := l2.segments[0].maxTs
	fs2 := l2.fs.(*errorfs.MemFS)
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	l3 := openTest(t, faultDir, cfg, Options{FS: fs2}) // clean open
	defer l3.Close()
	if got := l3.segments[0].maxTs; got != want {
		t.Fatalf("segment 0's max timestamp %d after recovery and a clean open, a scan gives %d", got, want)
	}
}
