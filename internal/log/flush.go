package log

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Flush fsyncs every file written since the last flush (and the
// directory if files were created or removed), then advances
// FlushedOffset and RecoveryPoint to the log end offset seen when it
// started. A failed fsync takes the log offline for writes (ErrStorage).
func (l *Log) Flush() error { return l.flush(true) }

// flush syncs what is dirty; without withIndexes (group commit) the
// active segment's offset and time indexes are left for a later full
// flush, so that each commit costs one fsync.
func (l *Log) flush(withIndexes bool) error {
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
	var trims []*segment
	for i, s := range l.segments {
		if withIndexes && i < len(l.segments)-1 && s.allocated > s.size {
			trims = append(trims, s)
		}
		var err error
		var created bool
		targets, created, err = s.syncTargets(targets, withIndexes || i < len(l.segments)-1)
		l.dirDirty = l.dirDirty || created
		if err != nil {
			err = l.failLocked(err)
			l.mu.Unlock()
			return err
		}
	}
	syncDir := l.dirDirty
	l.dirDirty = false
	// A full flush also writes the leader-epoch cache if it changed, so
	// that the recovery point can pass its new entries. Every entry added
	// after this snapshot starts at or after leo, which the recovery point
	// computed below does not pass. Truncation and retention, the other
	// writers of the file, wait for truncMu, held here for reading.
	var epochFile []byte
	epochsFrom := l.epochsUnsavedFrom
	if withIndexes && l.epochFileStale {
		epochFile = encodeEpochCheckpoint(l.epochs.entries)
		l.epochFileStale, l.epochsUnsavedFrom = false, math.MaxInt64
	}
	l.mu.Unlock()

	l.trimRolled(trims)
	err := l.syncTaken(targets, syncDir, epochFile, epochsFrom)

	l.mu.Lock()
	if err != nil {
		if epochFile != nil {
			l.epochsChangedLocked(epochsFrom)
		}
		err = l.failLocked(err)
	} else if leo > l.flushed && leo <= l.leo {
		l.flushed = leo
	}
	if err == nil {
		// The recovery point also needs durable indexes: it stops at the
		// first segment whose indexes are not fsynced yet, and at the
		// first leader epoch not in the checkpoint file.
		rp := min(leo, l.leo, l.epochsUnsavedFrom)
		for _, s := range l.segments {
			if s.idxDirty {
				rp = min(rp, s.base)
				break
			}
		}
		l.recoveryPoint = max(l.recoveryPoint, rp)
	}
	l.releaseWaitersLocked()
	rp, persisted, closing := l.recoveryPoint, l.persistedRP, l.closing
	l.mu.Unlock()
	if err == nil && withIndexes && rp > persisted {
		// Persist it (full flushes only: rolls, log.flush.interval.ms,
		// Flush, Close). Truncation, which lowers it, waits for truncMu,
		// which this flush holds for reading. Close fsyncs the new file
		// but not the directory: everything below it is durable now, and
		// should the rename be lost, the next open recovers from the
		// older recovery point, only for longer. It must not skip the
		// file's fsync: a later directory fsync (another file written in
		// the directory) could make the rename durable with the contents
		// lost, i.e. no recovery point at all, and recovery keeps gaps
		// between segments only below the recovery point (recover).
		write := writeOffsetFile
		if closing {
			write = writeOffsetSyncedNoDir
		}
		if werr := write(l.fs, l.dir, recoveryPointName, rp); werr != nil {
			l.mu.Lock()
			err = l.failLocked(werr)
			l.mu.Unlock()
			return err
		}
		l.mu.Lock()
		l.persistedRP = max(l.persistedRP, rp)
		l.mu.Unlock()
	}
	return err
}

// trimRolled gives back the blocks reserved past the data of rolled
// segments (prealloc.go), before the fsync that follows makes it durable.
// Called by a full flush with flushMu and truncMu (for reading) held and
// mu released: only the active segment is preallocated, by appends, and a
// rolled segment becomes active again only by a truncation, which waits
// for truncMu, so nothing else touches these segments' reservations.
func (l *Log) trimRolled(trims []*segment) {
	for _, s := range trims {
		if err := s.trimPrealloc(); err != nil {
			l.logger.Warn("cannot give back a rolled segment's preallocated blocks", zap.String("segment", s.logPath), zap.Error(err))
		}
	}
}

// syncTaken syncs what flush took as dirty (targets, the directory if
// syncDir, the leader-epoch file if epochFile is set). Should it panic
// (a bug, recovered by the connection whose request led the flush), what
// it took is marked dirty again, so that the next flush syncs it instead
// of advancing the flushed offset past data never fsynced.
func (l *Log) syncTaken(targets []syncTarget, syncDir bool, epochFile []byte, epochsFrom int64) error {
	done := false
	defer func() {
		if done {
			return
		}
		l.mu.Lock()
		for _, s := range l.segments {
			s.markDirty()
		}
		l.dirDirty = l.dirDirty || syncDir
		if epochFile != nil {
			l.epochsChangedLocked(epochsFrom)
		}
		l.mu.Unlock()
	}()
	err := syncAll(targets)
	if err == nil && syncDir {
		if derr := l.fs.SyncDir(l.dir); derr != nil {
			err = storageErr("fsync", l.dir, derr)
		}
	}
	if err == nil && epochFile != nil {
		err = l.writeEpochFile(epochFile)
	}
	done = true
	return err
}

// lowerRecoveryPointLocked makes the recovery point, in memory and on
// disk, no higher than end (after truncation: a stale recovery point past
// new, unsynced data would let an unclean open skip it).
func (l *Log) lowerRecoveryPointLocked(end int64) error {
	l.recoveryPoint = min(l.recoveryPoint, end)
	if l.persistedRP <= l.recoveryPoint {
		return nil
	}
	if err := writeOffsetFile(l.fs, l.dir, recoveryPointName, l.recoveryPoint); err != nil {
		return err
	}
	l.persistedRP = l.recoveryPoint
	return nil
}

// WaitFlushed blocks until everything below offset is fsynced (Kafka
// acks=all with log.flush.interval.messages=1). Concurrent callers share
// fsyncs (group commit): one waiter at a time leads, syncing whatever has
// been written by then, and every waiter it covers returns; the others
// elect the next leader. It fails with ErrStorage if an fsync fails and
// ErrClosed if the log closes first.
func (l *Log) WaitFlushed(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		switch {
		case l.failed != nil:
			return l.failed
		case offset <= l.flushed:
			return nil
		case l.closed:
			return ErrClosed
		case offset > l.leo:
			return fmt.Errorf("%w: wait for flush of %d past log end %d", ErrOffsetOutOfRange, offset, l.leo)
		}
		if l.committing {
			l.commitDone.Wait()
			continue
		}
		if err := l.leadCommitLocked(); err != nil && err != ErrClosed {
			return err
		}
	}
}

// leadCommitLocked runs one group commit with mu released, and returns
// with mu held, committing cleared and the waiters woken, whether the
// flush returns or panics: a panic (recovered by the connection that led
// the commit) must not leave committing set, which would keep every later
// waiter waiting for a commit that never ends.
func (l *Log) leadCommitLocked() error {
	l.committing = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.committing = false
		l.commitDone.Broadcast()
	}()
	// Let appenders that were just released by the previous commit
	// (runnable, about to append) join this one.
	runtime.Gosched()
	return l.flush(false)
}

// releaseWaitersLocked wakes WaitFlushed callers to re-check the log's
// state (flushed, failed, closed or truncated).
func (l *Log) releaseWaitersLocked() { l.commitDone.Broadcast() }

// flusher is the Log's background goroutine: it flushes after a segment
// roll (Kafka flushes rolled segments asynchronously) and every
// log.flush.interval.ms if set. The Log owns it; Close stops and waits.
type flusher struct {
	l        *Log
	interval time.Duration
	full     atomic.Bool // a kick asked for a full flush (roll)
	kickCh   chan struct{}
	wbCh     chan struct{}      // a window of the active segment is due for writeback
	periodCh chan time.Duration // a new log.flush.interval.ms (SetConfig)
	stopCh   chan struct{}
	done     sync.WaitGroup
	once     sync.Once
}

func startFlusher(l *Log, interval time.Duration) *flusher {
	f := &flusher{l: l, interval: interval, kickCh: make(chan struct{}, 1), wbCh: make(chan struct{}, 1), periodCh: make(chan time.Duration),
		stopCh: make(chan struct{})}
	f.done.Add(1)
	go f.run()
	return f
}

func (f *flusher) run() {
	defer f.done.Done()
	var ticker *time.Ticker
	var tick <-chan time.Time
	setPeriod := func(d time.Duration) {
		if ticker != nil {
			ticker.Stop()
			ticker, tick = nil, nil
		}
		if d > 0 {
			ticker = time.NewTicker(d)
			tick = ticker.C
		}
	}
	setPeriod(f.interval)
	defer func() { setPeriod(0) }()
	var wb writebackRange // the range written back last, waited for next
	for {
		full := true
		select {
		case <-f.stopCh:
			return
		case d := <-f.periodCh:
			setPeriod(d)
			continue
		case <-f.wbCh:
			wb = f.l.writeBehind(wb)
			continue
		case <-f.kickCh:
			full = f.full.Swap(false)
		case <-tick:
		}
		var err error
		if full {
			if hook := f.l.opts.BeforeBackgroundFlush; hook != nil {
				hook()
			}
			err = f.l.flush(true)
		} else {
			// log.flush.interval.messages reached: join the group commit
			// (as one more waiter) rather than fsync beside it.
			err = f.l.WaitFlushed(f.l.LogEndOffset())
		}
		if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrOffsetOutOfRange) {
			f.l.logger.Debug("background flush failed", zap.Error(err))
		}
	}
}

// FlushInBackground asks the background flusher for a full flush (with
// BeforeBackgroundFlush first) and returns at once.
func (l *Log) FlushInBackground() { l.flusher.kick(true) }

// kick asks for a background flush without waiting for it; full also
// syncs the active segment's indexes.
func (f *flusher) kick(full bool) {
	if full {
		f.full.Store(true)
	}
	select {
	case f.kickCh <- struct{}{}:
	default:
	}
}

// kickWriteback asks the flusher for a write-behind of the active
// segment (writeback.go) without waiting for it.
func (f *flusher) kickWriteback() {
	select {
	case f.wbCh <- struct{}{}:
	default:
	}
}

// setPeriod changes the background flush period (0: none); it returns
// once the flusher took it, or at once if the flusher is stopped.
func (f *flusher) setPeriod(d time.Duration) {
	select {
	case f.periodCh <- d:
	case <-f.stopCh:
	}
}

func (f *flusher) stop() {
	f.once.Do(func() { close(f.stopCh) })
	f.done.Wait()
}
