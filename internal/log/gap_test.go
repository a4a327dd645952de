package log

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// A roll fsyncs nothing on the append path: a power loss may keep a later
// segment's data and lose an earlier one's tail. Recovery then cuts the
// log where a segment above the recovery point starts past the end of the
// one before it (TestFaultLostTailBeforeLaterSegment); the tests here are
// that rule's negative control and the legitimate gap it must keep, a
// roll past the log end. (The cleaner leaves no gap between segments: it
// keeps the last batch of every group it cleans, empty if need be.)

// syncFiles fsyncs the named segment files and the directory, as the OS's
// writeback might have written them before a power loss.
func syncFiles(t *testing.T, mem *errorfs.MemFS, dir string, bases []int64) {
	t.Helper()
	for _, b := range bases {
		f, err := mem.OpenFile(segmentFileName(dir, b, logSuffix), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := mem.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}

// TestFaultLostTailKeptWithoutGapRule is the negative control of recovery's
// gap rule: the scenario of TestFaultLostTailBeforeLaterSegment, opened
// with the rule off, serves the later segments after a hole.
func TestFaultLostTailKeptWithoutGapRule(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	l, _, mem := faultLog(t, cfg)
	l.flusher.stop()
	defer l.Close()
	appendN(t, l, 2, 2, 0, 0, 100)
	l.mu.Lock()
	targets, _, _ := l.segments[0].syncTargets(nil, true)
	l.mu.Unlock()
	syncAll(targets)
	appendN(t, l, 6, 2, 0, 0, 100)
	bases := l.SegmentBaseOffsets()
	syncFiles(t, mem, faultDir, bases[1:])
	opts := Options{FS: mem.CrashClone()}
	opts.private.recoverKeepsGaps = true
	l2 := openTest(t, faultDir, testConfig(), opts)
	defer l2.Close()
	if got := l2.SegmentBaseOffsets(); len(got) < 2 || l2.LogEndOffset() <= bases[1] {
		t.Fatalf("without the gap rule: segments %v, LEO %d; want the later segments kept", got, l2.LogEndOffset())
	}
	// Offsets 4 and 5 were in the lost tail: a read of 4 returns the
	// later segment's first batch, past the hole.
	b, err := l2.Read(4, 1000, true)
	if err != nil {
		t.Fatal(err)
	}
	if hs := headers(t, b); len(hs) == 0 || hs[0].BaseOffset <= 4 {
		t.Fatalf("read of the lost offset 4 gave %+v, want a batch past a hole", hs)
	}
}

// gapRollScenario fills a segment, fsyncs it, then appends a batch far
// past the log end that needs a roll (a mirrored batch after a gap in the
// source's offsets), and a power loss keeps everything the OS wrote. It
// returns what was appended and the log reopened after the power loss.
func gapRollScenario(t *testing.T, skipSync bool) (all []byte, l2 *Log) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	mem := errorfs.NewMem()
	opts := Options{FS: mem}
	opts.private.gapRollSkipsSync = skipSync
	l := openTest(t, faultDir, cfg, opts)
	l.flusher.stop() // the test decides what is durable
	defer l.Abandon()
	all = slices.Concat(appendN(t, l, 3, 2, 0, 0, 100)...)
	if len(l.SegmentBaseOffsets()) != 1 {
		t.Fatalf("rolled early: %v", l.SegmentBaseOffsets())
	}
	gap := testBatch{base: l.LogEndOffset() + 1000, records: 2, valueSize: 400}.build()
	if _, err := l.Append(gap); err != nil {
		t.Fatal(err)
	}
	all = append(all, gap...)
	bases := l.SegmentBaseOffsets()
	if len(bases) != 2 || bases[1] != 1006 {
		t.Fatalf("segments %v, want a roll to 1006", bases)
	}
	syncFiles(t, mem, faultDir, bases)
	l2, _ = reopenOn(t, mem.CrashClone())
	return all, l2
}

// TestGapRollSurvivesPowerLoss: a roll past the log end is a gap recovery
// keeps, since the roll made the log durable and moved the recovery point
// to the new segment first.
func TestGapRollSurvivesPowerLoss(t *testing.T) {
	all, l2 := gapRollScenario(t, false)
	defer l2.Close()
	if got := readAllGaps(t, l2); !bytes.Equal(got, all) || l2.LogEndOffset() != 1008 {
		t.Fatalf("after the power loss: LEO %d, %d of %d bytes", l2.LogEndOffset(), len(got), len(all))
	}
}

// TestGapRollWithoutSyncLosesData is its negative control: without the
// sync and the recovery point, recovery takes the gap for a lost tail and
// drops the mirrored batch, although every byte of it was on disk.
func TestGapRollWithoutSyncLosesData(t *testing.T) {
	_, l2 := gapRollScenario(t, true)
	defer l2.Close()
	if l2.LogEndOffset() != 6 {
		t.Fatalf("without the gap roll's sync: LEO %d, want 6 (the gap batch dropped)", l2.LogEndOffset())
	}
}

// TestCleanAboveRecoveryPointSurvivesPowerLoss: segments cleaned before
// the rolls' background flushes ran (the recovery point still 0) keep
// ending where the next segment starts, so after a power loss recovery
// finds no gap to cut at and every latest value is there.
func TestCleanAboveRecoveryPointSurvivesPowerLoss(t *testing.T) {
	clock := &fixedClock{t: time.UnixMilli(1_000_000)}
	mem := errorfs.NewMem()
	l := openTest(t, faultDir, compactConfig(), Options{FS: mem, Now: clock.now})
	l.flusher.stop()
	defer l.Abandon()
	fillKeyed(t, l, 200, 20, 1_000_000)
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d before cleaning, want 0", rp)
	}
	before := logRecords(t, l)
	c := NewCleaner(1<<20, 0, nil)
	if st, err := c.Clean(l, CleanRequest{Now: clock.t, FirstUnstable: l.LogEndOffset()}); err != nil || !st.Cleaned {
		t.Fatalf("clean: %+v %v", st, err)
	}
	bases := l.SegmentBaseOffsets()
	syncFiles(t, mem, faultDir, bases)
	l2 := openTest(t, faultDir, compactConfig(), Options{FS: mem.CrashClone(), Now: clock.now})
	defer l2.Close()
	after := logRecords(t, l2)
	if !maps.Equal(latestOf(before), latestOf(after)) || !slices.Equal(l2.SegmentBaseOffsets(), bases) {
		t.Fatalf("after the power loss: segments %v (were %v), %d records; latest values equal: %v",
			l2.SegmentBaseOffsets(), bases, len(after), maps.Equal(latestOf(before), latestOf(after)))
	}
}
