package log

import (
	"sync/atomic"
	"testing"
)

// TestWaitFlushedAloneDoesNotYield: a group-commit leader yields once
// before its fsync when led from WaitFlushed (writers about to append may
// join), never from WaitFlushedAlone (the caller knows none is coming).
func TestWaitFlushedAloneDoesNotYield(t *testing.T) {
	cfg := testConfig()
	cfg.FlushIntervalMessages = 1 << 40 // no automatic flush
	var yields atomic.Int64
	var opts Options
	opts.private.onCommitYield = func() { yields.Add(1) }
	l := openTest(t, t.TempDir(), cfg, opts)
	defer l.Close()
	for _, c := range []struct {
		name  string
		wait  func(int64) error
		yield int64
	}{{"WaitFlushed", l.WaitFlushed, 1}, {"WaitFlushedAlone", l.WaitFlushedAlone, 0}} {
		yields.Store(0)
		appendN(t, l, 1, 1, 0, 0, 10)
		if err := c.wait(l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		if got := l.FlushedOffset(); got != l.LogEndOffset() {
			t.Fatalf("%s returned at flushed offset %d, log end %d", c.name, got, l.LogEndOffset())
		}
		if n := yields.Load(); n != c.yield {
			t.Errorf("%s's commit yielded %d times, want %d", c.name, n, c.yield)
		}
	}
}
