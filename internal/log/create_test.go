package log

import (
	"bytes"
	"slices"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// TestOpenNewLogDoesNotSync: creating a partition fsyncs nothing (as in
// Kafka); fsyncs that fail would fail the Open if it did any.
func TestOpenNewLogDoesNotSync(t *testing.T) {
	mem := errorfs.NewMem()
	efs := errorfs.Wrap(mem)
	efs.Inject(errorfs.Rule{Op: errorfs.OpSync})
	efs.Inject(errorfs.Rule{Op: errorfs.OpSyncDir})
	l := openTest(t, faultDir, testConfig(), Options{FS: efs})
	if len(efs.Injected()) != 0 {
		t.Fatalf("Open of a new log synced: %v", efs.Injected())
	}
	l.Abandon()
}

// TestNewLogCrash cuts the power after a new log's creation, after
// unflushed appends, and after a flush: the restart finds a new (empty)
// log, or everything flushed, never a log it cannot open.
func TestNewLogCrash(t *testing.T) {
	for _, c := range []struct {
		name      string
		flush     func(l *Log) error
		wantAll   bool
		wantEpoch []EpochEntry
	}{
		{"no append", nil, false, nil},
		{"appended, not flushed", func(*Log) error { return nil }, false, nil},
		{"appended, group commit", func(l *Log) error { return l.WaitFlushed(l.LogEndOffset()) }, true, []EpochEntry{{3, 0}}},
		{"appended, full flush", func(l *Log) error { return l.Flush() }, true, []EpochEntry{{3, 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// No background flushes (they would race with the crash
			// point); WaitFlushed is the group commit.
			mem := errorfs.NewMem()
			l := openTest(t, faultDir, testConfig(), Options{FS: mem})
			var all []byte
			if c.flush != nil {
				all = slices.Concat(appendN(t, l, 4, 2, 3, 0, 50)...)
				if err := c.flush(l); err != nil {
					t.Fatal(err)
				}
			}
			crashed := mem.CrashClone()
			l.Abandon()
			l2 := openTest(t, faultDir, testConfig(), Options{FS: crashed})
			defer l2.Close()
			got := readAllGaps(t, l2)
			want := []byte(nil)
			if c.wantAll {
				want = all
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("after the crash: %d bytes, want %d", len(got), len(want))
			}
			if e := l2.EpochEntries(); !slices.Equal(e, c.wantEpoch) {
				t.Fatalf("epochs %v, want %v", e, c.wantEpoch)
			}
			if _, err := l2.Append(testBatch{base: l2.LogEndOffset(), records: 1}.build()); err != nil {
				t.Fatalf("Append after the crash: %v", err)
			}
		})
	}
}
