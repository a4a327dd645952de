package partition

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/locktest"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/psm"
	"github.com/minibroker/minibroker/internal/vfs"
)

// TestRollSnapshotFsyncOffAppendPath: appends that roll return while the
// fsync of their producer snapshots is held, and the snapshots are written
// and then fsynced by the log's background flush, as Kafka's roll leaves
// the snapshot's fsync to its flush-log task. Negative control: with the
// snapshot written with its fsync on the append path (Snapshot.WriteFile
// in writeRollSnapshotsLocked), the appends do not return.
func TestRollSnapshotFsyncOffAppendPath(t *testing.T) {
	release := make(chan struct{})
	var synced atomic.Int32
	fs := &hookFS{FS: vfs.Default, match: psm.SnapshotSuffix, onSync: func() {
		<-release
		synced.Add(1)
	}}
	cfg := Config{Log: mlog.DefaultConfig(), MessageMaxBytes: 1 << 20}
	cfg.Log.SegmentBytes = 200 // every append or two rolls
	p, err := Open(t.TempDir(), "t", 0, cfg, Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	locktest.Within(t, "appends that roll while snapshot fsyncs are held", func() {
		for i := range 6 {
			if _, err := p.AppendAsLeader(encode(-1, -1, -1, 1, false)); err != nil {
				t.Errorf("append %d: %v", i, err)
			}
		}
	})
	offs, err := psm.SnapshotOffsets(vfs.Default, p.Dir())
	if err != nil || len(offs) == 0 {
		t.Fatalf("roll snapshots written: %v %v", offs, err)
	}
	close(release)
	released = true
	for deadline := time.Now().Add(30 * time.Second); synced.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no roll snapshot was fsynced by the background flush")
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
