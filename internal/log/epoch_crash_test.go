package log

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// scannedEpochs is the leader-epoch cache that a scan of every batch in
// l gives: what EpochEntries must return after any crash, whatever the
// checkpoint file holds.
func scannedEpochs(t *testing.T, l *Log) []EpochEntry {
	t.Helper()
	var c epochCache
	for _, h := range headers(t, readAllGaps(t, l)) {
		c.assign(h.PartitionLeaderEpoch, h.BaseOffset)
	}
	c.truncateFromStart(l.LogStartOffset())
	return c.entries
}

// checkpointFile returns the entries in fsys's leader-epoch-checkpoint
// (ok=false: missing or unreadable).
func checkpointFile(t *testing.T, fsys vfs.FS) ([]EpochEntry, bool) {
	t.Helper()
	entries, ok, err := readEpochCheckpoint(fsys, filepath.Join(faultDir, epochCheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	return entries, ok
}

// reopenChecked opens the log on fsys (a restart after a power loss) and
// checks that its epoch cache is the scanned one and equals want.
func reopenChecked(t *testing.T, fsys *errorfs.MemFS, want []EpochEntry) *Log {
	t.Helper()
	l := openTest(t, faultDir, testConfig(), Options{FS: fsys})
	got := l.EpochEntries()
	if scanned := scannedEpochs(t, l); !slices.Equal(got, scanned) {
		t.Fatalf("epoch cache %v after the crash, a scan of the surviving log gives %v", got, scanned)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("epoch cache %v after the crash, want %v (LEO %d)", got, want, l.LogEndOffset())
	}
	return l
}

// TestEpochCheckpointCrash cuts the power at each point of the lazy
// leader-epoch checkpoint's life: a new epoch appended but not flushed,
// its data fsynced by a group commit while the checkpoint still lacks it,
// after the full flush that writes it, and around truncations. After the
// crash the cache must be exactly what a scan of the surviving log gives.
func TestEpochCheckpointCrash(t *testing.T) {
	type step func(t *testing.T, l *Log)
	appendE := func(n int, epoch int32) step {
		return func(t *testing.T, l *Log) { appendN(t, l, n, 2, epoch, 0, 20) }
	}
	groupCommit := func(t *testing.T, l *Log) {
		if err := l.WaitFlushed(l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
	}
	flush := func(t *testing.T, l *Log) {
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	truncate := func(off int64) step {
		return func(t *testing.T, l *Log) {
			if err := l.TruncateTo(off); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name  string
		steps []step
		want  []EpochEntry // after the crash
		// fileLacks: the checkpoint file at the crash lacks the last
		// wanted entry, so only recovery's scan can produce it (the
		// negative control: trusting the file would be wrong).
		fileLacks bool
	}{
		{"new epoch, crash before any flush",
			[]step{appendE(3, 0), flush, appendE(2, 3)},
			[]EpochEntry{{0, 0}}, false},
		{"new epoch fsynced by group commit, checkpoint not yet written",
			[]step{appendE(3, 0), flush, appendE(2, 3), groupCommit},
			[]EpochEntry{{0, 0}, {3, 6}}, true},
		{"first epoch of a new log fsynced by group commit",
			[]step{appendE(3, 2), groupCommit},
			[]EpochEntry{{2, 0}}, true},
		{"new epoch, crash after the full flush",
			[]step{appendE(3, 0), flush, appendE(2, 3), flush},
			[]EpochEntry{{0, 0}, {3, 6}}, false},
		{"two unsaved epochs after a flushed one",
			[]step{appendE(2, 1), flush, appendE(1, 4), appendE(1, 6), groupCommit},
			[]EpochEntry{{1, 0}, {4, 4}, {6, 6}}, true},
		{"truncation into an epoch, then crash",
			[]step{appendE(2, 0), appendE(2, 2), appendE(2, 5), flush, truncate(6)},
			[]EpochEntry{{0, 0}, {2, 4}}, false},
		{"truncation removing an unsaved epoch, then crash",
			[]step{appendE(2, 0), flush, appendE(2, 4), groupCommit, truncate(4)},
			[]EpochEntry{{0, 0}}, false},
		{"truncation, new epoch at the cut fsynced by group commit",
			[]step{appendE(2, 0), appendE(2, 2), flush, truncate(4), appendE(2, 7), groupCommit},
			[]EpochEntry{{0, 0}, {7, 4}}, true},
		{"truncation, new epoch at the cut, crash before it is fsynced",
			[]step{appendE(2, 0), appendE(2, 2), flush, truncate(4), appendE(2, 7)},
			[]EpochEntry{{0, 0}}, false},
		{"truncation of the whole log, new epoch fsynced",
			[]step{appendE(2, 0), flush, truncate(0), appendE(1, 9), groupCommit},
			[]EpochEntry{{9, 0}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// No background flushes (they would race with the crash
			// point); WaitFlushed is the group commit.
			cfg := testConfig()
			mem := errorfs.NewMem()
			l := openTest(t, faultDir, cfg, Options{FS: mem})
			defer l.Close()
			for _, s := range c.steps {
				s(t, l)
			}
			crashed := mem.CrashClone()
			file, _ := checkpointFile(t, crashed)
			if lacks := len(c.want) > 0 && !slices.Contains(file, c.want[len(c.want)-1]); lacks != c.fileLacks {
				t.Fatalf("checkpoint file at the crash %v: lacks %v = %v, want %v", file, c.want[len(c.want)-1], lacks, c.fileLacks)
			}
			if rp := l.RecoveryPoint(); len(c.want) > 0 && c.fileLacks && rp > c.want[len(c.want)-1].StartOffset {
				t.Fatalf("recovery point %d passed epoch entry %v, which the checkpoint file lacks", rp, c.want[len(c.want)-1])
			}
			l2 := reopenChecked(t, crashed, c.want)
			// A second power loss right after the restart (the rebuilt
			// cache not written yet) must give the same cache.
			again := crashed.CrashClone()
			l2.Abandon()
			reopenChecked(t, again, c.want).Close()
			// And a flush after the restart makes the file agree.
			l3 := reopenChecked(t, crashed, c.want)
			if err := l3.Flush(); err != nil {
				t.Fatal(err)
			}
			if file, _ := checkpointFile(t, crashed); !slices.Equal(file, c.want) {
				t.Fatalf("checkpoint file after a flush %v, want %v", file, c.want)
			}
			l3.Close()
		})
	}
}

// TestEpochCheckpointRollCrash puts new epochs in segments that roll (the
// roll's background full flush writes the checkpoint at a time the test
// does not control) and crashes at every step: whatever the flusher had
// done, the cache after the crash is the scanned one.
func TestEpochCheckpointRollCrash(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 600
	cfg.FlushIntervalMessages = 1
	mem := errorfs.NewMem()
	l := openTest(t, faultDir, cfg, Options{FS: mem})
	defer l.Close()
	for i := range 40 {
		appendN(t, l, 1, 2, int32(i/3), 0, 100)
		if i%4 != 3 {
			if err := l.WaitFlushed(l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
		}
		checkRecoveryPointCovered(t, l, mem)
		crashed := mem.CrashClone()
		l2 := openTest(t, faultDir, testConfig(), Options{FS: crashed})
		if got, want := l2.EpochEntries(), scannedEpochs(t, l2); !slices.Equal(got, want) {
			t.Fatalf("step %d: epoch cache %v after the crash, a scan gives %v", i, got, want)
		}
		l2.Close()
	}
}

// checkRecoveryPointCovered checks the rule that makes the lazy
// checkpoint safe: every epoch entry below the recovery point is in the
// durable checkpoint file. (The recovery point is read first: the file
// is written before the recovery point moves, so a flush in between only
// adds entries.)
func checkRecoveryPointCovered(t *testing.T, l *Log, mem *errorfs.MemFS) {
	t.Helper()
	rp := l.RecoveryPoint()
	file, _ := checkpointFile(t, mem.CrashClone())
	for _, e := range l.EpochEntries() {
		if e.StartOffset < rp && !slices.Contains(file, e) {
			t.Fatalf("recovery point %d passed epoch entry %v, which the durable checkpoint %v lacks", rp, e, file)
		}
	}
}
