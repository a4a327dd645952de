package log

import (
	"fmt"
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
		err = l.failLocked(err)
	} else if leo > l.flushed && leo <= l.leo {
		l.flushed = leo
	}
	l.releaseWaitersLocked()
	return err
}

// flushWaiter is a WaitFlushed call parked until FlushedOffset reaches
// offset.
type flushWaiter struct {
	offset int64
	done   chan error
}

// WaitFlushed blocks until everything below offset is fsynced (Kafka
// acks=all with log.flush.interval.messages=1). Concurrent callers share
// fsyncs: the Log's flusher goroutine syncs whatever is written when it
// runs and releases every waiter it covers (group commit). It fails with
// ErrStorage if an fsync fails and ErrClosed if the log closes first.
func (l *Log) WaitFlushed(offset int64) error {
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
	if offset <= l.flushed {
		l.mu.Unlock()
		return nil
	}
	if offset > l.leo {
		leo := l.leo
		l.mu.Unlock()
		return fmt.Errorf("%w: wait for flush of %d past log end %d", ErrOffsetOutOfRange, offset, leo)
	}
	w := flushWaiter{offset: offset, done: make(chan error, 1)}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()
	l.flusher.kick()
	return <-w.done
}

// releaseWaitersLocked answers the waiters that FlushedOffset now covers,
// or all of them when the log failed or closed.
func (l *Log) releaseWaitersLocked() {
	keep := l.waiters[:0]
	for _, w := range l.waiters {
		switch {
		case w.offset <= l.flushed:
			w.done <- nil
		case l.failed != nil:
			w.done <- l.failed
		case l.closed:
			w.done <- ErrClosed
		case w.offset > l.leo: // truncated away below the waited-for offset
			w.done <- fmt.Errorf("%w: log truncated below %d", ErrOffsetOutOfRange, w.offset)
		default:
			keep = append(keep, w)
		}
	}
	clear(l.waiters[len(keep):])
	l.waiters = keep
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
