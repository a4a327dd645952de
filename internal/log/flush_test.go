package log

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// syncCounter counts fsyncs of files opened through it.
type syncCounter struct {
	vfs.FS
	syncs atomic.Int64
}

type countedFile struct {
	vfs.File
	c *syncCounter
}

func (c *syncCounter) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countedFile{f, c}, nil
}

func (f countedFile) Sync() error { f.c.syncs.Add(1); return f.File.Sync() }

// TestGroupCommit: 16 appenders each wait for their own data to be
// durable; they share fsyncs, and each is released only once its offset
// is flushed.
func TestGroupCommit(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.FlushIntervalMessages = 1
	fsys := &syncCounter{FS: vfs.Default}
	l := openTest(t, t.TempDir(), cfg, Options{FS: fsys})
	defer l.Close()
	var appendMu sync.Mutex // the partition's append lock
	var wg sync.WaitGroup
	const writers, each = 16, 20
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				appendMu.Lock()
				res, err := l.Append(testBatch{base: l.LogEndOffset(), records: 1, valueSize: 100}.build())
				appendMu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				if err := l.WaitFlushed(res.LogEndOffset); err != nil {
					t.Error(err)
					return
				}
				if got := l.FlushedOffset(); got < res.LogEndOffset {
					t.Errorf("released at flushed %d before %d", got, res.LogEndOffset)
				}
			}
		}()
	}
	wg.Wait()
	// Group commits fsync only the .log file, so fsyncs ≈ commits.
	if syncs := fsys.syncs.Load(); syncs >= writers*each {
		t.Errorf("%d fsyncs for %d appends: no group commit", syncs, writers*each)
	} else {
		t.Logf("%d appends, %d fsyncs", writers*each, syncs)
	}
}

func TestWaitFlushedReleasedOnFailureAndClose(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1 << 40 // no automatic flush
	e := errorfs.Wrap(errorfs.NewMem())
	l := openTest(t, faultDir, cfg, Options{FS: e})
	appendN(t, l, 1, 2, 0, 0, 10)
	e.Inject(errorfs.Rule{Op: errorfs.OpSync})
	if err := l.WaitFlushed(2); !errors.Is(err, ErrStorage) {
		t.Fatalf("WaitFlushed with failing fsync: %v", err)
	}
	l.Close()

	// Waiters racing Close return (nil if their data made it, else
	// ErrClosed) rather than hang.
	l = openTest(t, t.TempDir(), cfg, Options{})
	appendN(t, l, 1, 2, 0, 0, 10)
	done := make(chan error, 8)
	for range 8 {
		go func() { done <- l.WaitFlushed(2) }()
	}
	l.Close()
	for range 8 {
		if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("WaitFlushed across Close: %v", err)
		}
	}
	if err := l.WaitFlushed(2); err != nil { // flushed by Close
		t.Fatalf("WaitFlushed after Close: %v", err)
	}
}

func TestBackgroundFlushInterval(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMs = 5
	l := openTest(t, t.TempDir(), cfg, Options{})
	defer l.Close()
	appendN(t, l, 2, 1, 0, 0, 10)
	deadline := time.Now().Add(5 * time.Second)
	for l.FlushedOffset() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("log.flush.interval.ms did not flush")
		}
		time.Sleep(time.Millisecond)
	}
}
