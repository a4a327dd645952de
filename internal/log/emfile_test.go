package log

import (
	"errors"
	"slices"
	"syscall"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// TestEMFILEOpeningSegmentFiles: a process out of file descriptors gets
// EMFILE from every open, including the one that reads a transaction
// index that does not exist (the open fails before the file system can
// say ENOENT). Whichever of a segment's files fails, opening a log, new or
// existing, and rolling a segment answer ErrStorage and never panic (a nil
// transaction index was closed: a panic under Log.Open, i.e. in
// CreateTopics, CreatePartitions or start-up). Index files are lazy (see
// doc.go): a new log and a log whose indexes have no entries open none, so
// for them Open succeeds; the roll writes the old segment's sealing entries,
// so its index files are the ones a roll opens.
func TestEMFILEOpeningSegmentFiles(t *testing.T) {
	for _, file := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		lazy := file == indexSuffix || file == timeIndexSuffix
		t.Run("new log/"+file, func(t *testing.T) {
			e := errorfs.Wrap(errorfs.NewMem())
			e.Inject(errorfs.Rule{Op: errorfs.OpOpen, PathContains: file, Err: syscall.EMFILE})
			l, err := Open(faultDir, testConfig(), Options{FS: e})
			if lazy {
				if err != nil {
					t.Fatalf("Open opened a lazy %s: %v", file, err)
				}
				l.Close()
				return
			}
			if !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.EMFILE) {
				t.Fatalf("Open: %v (injected %v)", err, e.Injected())
			}
		})
		t.Run("existing log/"+file, func(t *testing.T) {
			mem := errorfs.NewMem()
			e := errorfs.Wrap(mem)
			l := openTest(t, faultDir, testConfig(), Options{FS: e})
			appendN(t, l, 2, 1, 0, 1, 10)
			l.Close()
			e.Inject(errorfs.Rule{Op: errorfs.OpOpen, PathContains: file, Err: syscall.EMFILE})
			l1, err := Open(faultDir, testConfig(), Options{FS: e})
			switch {
			case lazy && err == nil: // two small batches: no index entries, no index file to open
				l1.Close()
			case !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.EMFILE):
				t.Fatalf("Open: %v (injected %v)", err, e.Injected())
			}
			e.Clear()
			l2, got := reopenOn(t, mem)
			defer l2.Close()
			if len(headers(t, got)) != 2 {
				t.Fatalf("after the failed open: %d batches", len(headers(t, got)))
			}
		})
		t.Run("roll/"+file, func(t *testing.T) {
			cfg := testConfig()
			cfg.SegmentBytes = 1000
			l, e, _ := faultLog(t, cfg)
			defer l.Close()
			first := testBatch{base: 0, records: 2, valueSize: 400}.build()
			second := testBatch{base: 2, records: 2, valueSize: 400}.build() // does not fit: roll
			failing := "00000000000000000002" + file                         // the new segment's files
			if lazy {
				failing = "00000000000000000000" + file // the old segment's sealing entry
			}
			e.Inject(errorfs.Rule{Op: errorfs.OpOpen, PathContains: failing, Err: syscall.EMFILE})
			_, err := l.Append(slices.Concat(first, second))
			if file == timeIndexSuffix {
				// The roll fsyncs only the old offset index; the old time
				// index's entry waits for the next full flush, which is
				// where its file is opened.
				if err != nil {
					t.Fatalf("Append across a roll opened the old time index: %v", err)
				}
				err = l.Flush()
			}
			if !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.EMFILE) {
				t.Fatalf("across a roll: %v (injected %v)", err, e.Injected())
			}
		})
	}
}
