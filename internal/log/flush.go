package log

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// Flush fsyncs every segment written since the last flush (and the
// directory if files were created or removed), then advances
// FlushedOffset to the log end offset seen when it started. A failed
// fsync takes the log offline for writes (ErrStorage).
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.truncMu.RLock()
	defer l.truncMu.RUnlock()

	l.mu.Lock()
	if l.failed != nil {
		err := l.failed
		l.mu.Unlock()
		return err
	}
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	leo := l.leo
	var targets []syncTarget
	for _, s := range l.segments {
		if s.dirty {
			targets = s.syncTargets(targets)
			s.dirty = false
		}
	}
	syncDir := l.dirDirty
	l.dirDirty = false
	l.mu.Unlock()

	err := syncAll(targets)
	if err == nil && syncDir {
		if derr := l.fs.SyncDir(l.dir); derr != nil {
			err = storageErr("fsync", l.dir, derr)
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		return l.failLocked(err)
	}
	if leo > l.flushed && leo <= l.leo {
		l.flushed = leo
	}
	return nil
}

// flusher is the Log's background goroutine: it flushes after a segment
// roll (Kafka flushes rolled segments asynchronously) and every
// log.flush.interval.ms if set. The Log owns it; Close stops and waits.
type flusher struct {
	l        *Log
	interval time.Duration
	kickCh   chan struct{}
	stopCh   chan struct{}
	done     sync.WaitGroup
	once     sync.Once
}

func startFlusher(l *Log, interval time.Duration) *flusher {
	f := &flusher{l: l, interval: interval, kickCh: make(chan struct{}, 1), stopCh: make(chan struct{})}
	f.done.Add(1)
	go f.run()
	return f
}

func (f *flusher) run() {
	defer f.done.Done()
	var tick <-chan time.Time
	if f.interval > 0 {
		t := time.NewTicker(f.interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-f.stopCh:
			return
		case <-f.kickCh:
		case <-tick:
		}
		if err := f.l.Flush(); err != nil && err != ErrClosed {
			f.l.logger.Debug("background flush failed", zap.Error(err))
		}
	}
}

// kick asks for a background flush without waiting for it.
func (f *flusher) kick() {
	select {
	case f.kickCh <- struct{}{}:
	default:
	}
}

func (f *flusher) stop() {
	f.once.Do(func() { close(f.stopCh) })
	f.done.Wait()
}
