package log

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/minibroker/minibroker/internal/locktest"
	"github.com/minibroker/minibroker/internal/vfs"
)

// panicFS panics, once armed, in the first OpenFile, Write or Sync of a
// file whose name ends in suffix; it counts those files' Syncs.
type panicFS struct {
	vfs.FS
	suffix            string
	open, write, sync atomic.Bool
	syncs             atomic.Int64
}

type panicFile struct {
	vfs.File
	fs *panicFS
}

func (p *panicFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if !strings.HasSuffix(name, p.suffix) {
		return p.FS.OpenFile(name, flag, perm)
	}
	if p.open.CompareAndSwap(true, false) {
		panic("injected panic opening " + name)
	}
	f, err := p.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return panicFile{File: f, fs: p}, nil
}

func (f panicFile) Write(b []byte) (int, error) {
	if f.fs.write.CompareAndSwap(true, false) {
		panic("injected panic writing " + f.Name())
	}
	return f.File.Write(b)
}

func (f panicFile) Sync() error {
	if f.fs.sync.CompareAndSwap(true, false) {
		panic("injected panic syncing " + f.Name())
	}
	f.fs.syncs.Add(1)
	return f.File.Sync()
}

// TestAppendPanicLeavesLogUsable: a panic in the middle of an Append,
// recovered as protocol/conn.go recovers a handler's panic, leaves
// neither of the Log's locks held, whether it comes while mu is held (a
// segment opened at a roll) or while the write has released it (the
// segment write). Reads, later appends, a flush and Close all complete.
// With appendFramed unlocking mu by hand on each path, as it did, the
// roll case hangs the next Append and every read.
func TestAppendPanicLeavesLogUsable(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(*panicFS)
	}{
		{"segment write, mu released", func(p *panicFS) { p.write.Store(true) }},
		{"segment open at a roll, mu held", func(p *panicFS) { p.open.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &panicFS{FS: vfs.Default, suffix: logSuffix}
			cfg := testConfig()
			cfg.SegmentBytes = 1 << 10 // each 600-byte batch below rolls
			l := openTest(t, t.TempDir(), cfg, Options{FS: fs})
			appendN(t, l, 2, 5, 0, 1000, 100)
			tc.arm(fs)
			func() {
				defer func() {
					if r := recover(); r == nil {
						t.Fatal("the injected panic did not happen")
					}
				}()
				l.Append(testBatch{base: l.LogEndOffset(), records: 5, ts: 2000, valueSize: 100}.build())
			}()
			locktest.Within(t, "a read after the panic", func() {
				if _, err := l.Read(0, 1<<20, true); err != nil {
					t.Errorf("read after the panic: %v", err)
				}
			})
			locktest.Within(t, "appends after the panic", func() {
				for range 3 {
					leo := l.LogEndOffset()
					b := testBatch{base: leo, records: 5, ts: 3000, valueSize: 100}.build()
					if _, err := l.Append(b); err != nil {
						t.Errorf("append at %d after the panic: %v", leo, err)
						return
					}
				}
			})
			locktest.Within(t, "a flush after the panic", func() {
				if err := l.Flush(); err != nil {
					t.Error(err)
				}
			})
			locktest.Within(t, "Close after the panic", func() {
				if err := l.Close(); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// TestFlushPanicLeavesWaitersWorking: a panic in the fsync of a group
// commit, recovered as protocol/conn.go recovers a handler's panic,
// leaves WaitFlushed usable: the next waiter leads a new commit, which
// syncs the segment the panicking commit had taken (the flushed offset
// does not pass data never fsynced), and returns. With the commit's
// leader clearing its committing flag by hand after flush, the panic
// skips it and the next WaitFlushed waits for ever.
func TestFlushPanicLeavesWaitersWorking(t *testing.T) {
	fs := &panicFS{FS: vfs.Default, suffix: logSuffix}
	l := openTest(t, t.TempDir(), testConfig(), Options{FS: fs})
	defer l.Close()
	appendN(t, l, 3, 5, 0, 1000, 100)
	leo := l.LogEndOffset()
	fs.sync.Store(true)
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("the injected panic did not happen")
			}
		}()
		l.WaitFlushed(leo)
	}()
	if got := l.FlushedOffset(); got >= leo {
		t.Fatalf("flushed offset %d after the panicking commit, want below %d", got, leo)
	}
	before := fs.syncs.Load()
	locktest.Within(t, "WaitFlushed after the panic", func() {
		if err := l.WaitFlushed(leo); err != nil {
			t.Errorf("WaitFlushed after the panic: %v", err)
		}
	})
	if fs.syncs.Load() == before {
		t.Fatal("the commit after the panic synced no segment: the flushed offset passed data never fsynced")
	}
	locktest.Within(t, "appends and a concurrent group commit after the panic", func() {
		appendN(t, l, 2, 5, 0, 2000, 100)
		if err := l.WaitFlushed(l.LogEndOffset()); err != nil {
			t.Error(err)
		}
	})
}
