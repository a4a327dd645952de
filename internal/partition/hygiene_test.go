package partition

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/locktest"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/psm"
	"github.com/minibroker/minibroker/internal/vfs"
)

// hookFS calls onWrite before each write and onSync before each fsync of
// a file whose name contains match.
type hookFS struct {
	vfs.FS
	match   string
	onWrite func()
	onSync  func()
}

type hookFile struct {
	vfs.File
	fs *hookFS
}

func (h *hookFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := h.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, h.match) {
		return f, err
	}
	return hookFile{File: f, fs: h}, nil
}

func (f hookFile) Write(p []byte) (int, error) {
	if f.fs.onWrite != nil {
		f.fs.onWrite()
	}
	return f.File.Write(p)
}

func (f hookFile) Sync() error {
	if f.fs.onSync != nil {
		f.fs.onSync()
	}
	return f.File.Sync()
}

// TestAppendPanicLeavesPartitionUsable: a panic in the middle of an
// append (here in the segment write), recovered as protocol/conn.go
// recovers a handler's panic, leaves no partition lock held: the next
// append, a marker, a truncation and Close all complete.
func TestAppendPanicLeavesPartitionUsable(t *testing.T) {
	var armed atomic.Bool
	fs := &hookFS{FS: vfs.Default, match: ".log", onWrite: func() {
		if armed.CompareAndSwap(true, false) {
			panic("injected panic in a segment write")
		}
	}}
	p := openOn(t, fs, t.TempDir())
	if _, err := p.AppendAsLeader(encode(-1, -1, -1, 2, false)); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("the injected panic did not happen")
			}
		}()
		p.AppendAsLeader(encode(-1, -1, -1, 2, false))
	}()
	locktest.Within(t, "an append after a panic", func() {
		if res, err := p.AppendAsLeader(encode(-1, -1, -1, 2, false)); err != nil || res.BaseOffset != 2 {
			t.Errorf("append after a panic: %+v %v", res, err)
		}
	})
	locktest.Within(t, "a marker after a panic", func() {
		if _, err := p.WriteMarker(7, 0, true, 0); err != nil {
			t.Errorf("marker after a panic: %v", err)
		}
	})
	locktest.Within(t, "a truncation after a panic", func() {
		if err := p.TruncateTo(2); err != nil {
			t.Error(err)
		}
	})
	locktest.Within(t, "Close after a panic", func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
}

// TestRollSnapshotNotUnderAppendLock: the producer snapshot taken at a
// segment roll is fsynced after the append lock is released, so while it
// is being fsynced another producer's append completes.
func TestRollSnapshotNotUnderAppendLock(t *testing.T) {
	release := make(chan struct{})
	var blocked sync.Once
	inSync := make(chan struct{})
	var armed atomic.Bool
	fs := &hookFS{FS: vfs.Default, match: psm.SnapshotSuffix, onSync: func() {
		if armed.Load() {
			blocked.Do(func() { close(inSync) })
			<-release
		}
	}}
	cfg := Config{Log: mlog.DefaultConfig(), MessageMaxBytes: 1 << 20}
	cfg.Log.SegmentBytes = 200 // every append or two rolls
	p, err := Open(t.TempDir(), "t", 0, cfg, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var releaseOnce sync.Once
	unblock := func() { armed.Store(false); releaseOnce.Do(func() { close(release) }) }
	defer unblock() // before Close, even when the test fails
	armed.Store(true)
	rolled := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 10 && err == nil; i++ {
			_, err = p.AppendAsLeader(encode(1, 0, int32(i), 1, false))
		}
		rolled <- err
	}()
	select {
	case <-inSync:
	case <-time.After(10 * time.Second):
		t.Fatal("no roll snapshot was written")
	}
	locktest.Within(t, "an append during a roll snapshot's fsync", func() {
		if _, err := p.AppendAsLeader(encode(-1, -1, -1, 1, false)); err != nil {
			t.Error(err)
		}
	})
	unblock()
	if err := <-rolled; err != nil {
		t.Fatal(err)
	}
	offs, err := psm.SnapshotOffsets(vfs.Default, p.Dir())
	if err != nil || len(offs) == 0 {
		t.Fatalf("roll snapshots: %v %v", offs, err)
	}
}

// TestRollSnapshotPanicLeavesTruncationUsable: a panic while a roll's
// producer snapshot is written (after appendMu is released, under
// snapshotWriteMu), recovered as protocol/conn.go recovers a handler's
// panic, leaves snapshotWriteMu free: a truncation, which takes it to
// delete snapshots, and later appends complete. With the lock released
// by hand after the write, as it was, the truncation hangs.
func TestRollSnapshotPanicLeavesTruncationUsable(t *testing.T) {
	var armed atomic.Bool
	// The write, not the fsync: the fsync runs in the log's background
	// flush (syncRollSnapshots), off the append path.
	fs := &hookFS{FS: vfs.Default, match: psm.SnapshotSuffix, onWrite: func() {
		if armed.CompareAndSwap(true, false) {
			panic("injected panic in a roll snapshot's write")
		}
	}}
	cfg := Config{Log: mlog.DefaultConfig(), MessageMaxBytes: 1 << 20}
	cfg.Log.SegmentBytes = 200 // every append or two rolls
	p, err := Open(t.TempDir(), "t", 0, cfg, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	panicked := false
	for i := 0; i < 10 && !panicked; i++ {
		func() {
			defer func() {
				if r := recover(); r != nil {
					panicked = true
				}
			}()
			if _, err := p.AppendAsLeader(encode(1, 0, int32(i), 1, false)); err != nil {
				t.Fatal(err)
			}
		}()
	}
	if !panicked {
		t.Fatal("no roll snapshot was written: the injected panic did not happen")
	}
	locktest.Within(t, "a truncation after the panic", func() {
		if err := p.TruncateTo(1); err != nil {
			t.Error(err)
		}
	})
	locktest.Within(t, "appends after the panic", func() {
		for i := range 3 {
			if _, err := p.AppendAsLeader(encode(-1, -1, -1, 1, false)); err != nil {
				t.Errorf("append %d after the panic: %v", i, err)
			}
		}
	})
	locktest.Within(t, "Close after the panic", func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
}
