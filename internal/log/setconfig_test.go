package log

import (
	"testing"
	"time"
)

// SetConfig changes an open log: the background flush runs at the new
// period, the next append rolls at the new segment size, and the next
// retention run deletes by the new limit. The negative control runs the
// same appends on a log whose config is not changed, and sees none of it.
func TestSetConfigAppliesToOpenLog(t *testing.T) {
	for _, apply := range []bool{true, false} {
		cfg := DefaultConfig() // 1 GiB segments, no time-based flush
		l := openTest(t, t.TempDir(), cfg, Options{})
		appendN(t, l, 10, 1, 0, 0, 1000)

		// flush.ms: nothing rolls here, so only the timer can flush.
		if apply {
			cfg.FlushIntervalMs = 20
			l.SetConfig(cfg)
		}
		appendN(t, l, 5, 1, 0, 0, 100)
		flushed := false
		wait := 3 * time.Second
		if !apply {
			wait = 300 * time.Millisecond // 15 periods of the applied case
		}
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if l.FlushedOffset() == l.LogEndOffset() {
				flushed = true
				break
			}
		}
		if n := len(l.SegmentBaseOffsets()); n != 1 {
			t.Fatalf("%d segments before segment.bytes changed", n)
		}

		// segment.bytes and retention.bytes.
		if apply {
			cfg.SegmentBytes = 4096
			cfg.RetentionBytes = 0
			l.SetConfig(cfg)
		}
		appendN(t, l, 20, 1, 0, 0, 1000)
		rolled := len(l.SegmentBaseOffsets()) >= 4
		deleted, err := l.ApplyRetention()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("SetConfig=%v: flushed by the timer %v, rolled %v, retention deleted %d segments", apply, flushed, rolled, deleted)
		if rolled != apply || flushed != apply || (deleted > 0) != apply {
			t.Fatalf("SetConfig=%v: flushed %v, rolled %v, deleted %d", apply, flushed, rolled, deleted)
		}
		if apply && len(l.SegmentBaseOffsets()) != 1 {
			t.Fatalf("retention.bytes=0 left %v", l.SegmentBaseOffsets())
		}
		l.Close()
	}
}
