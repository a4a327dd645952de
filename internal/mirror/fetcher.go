package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/partition"
)

// fetcher copies one source partition into its local partition. It is one
// goroutine selecting on stop, pause and a retry timer; close returns only
// after it exits.
type fetcher struct {
	m     *Manager
	rt    *liveMirror
	k     tp
	p     *partition.Partition
	ctx   context.Context
	stop  context.CancelFunc
	done  chan struct{}
	wake  chan struct{} // pause state changed
	pmu   sync.Mutex
	pause bool
	loop  *brokerLoop // the broker loop f last joined; guarded by pmu
	// evictions carries the error that took the partition out of its
	// broker loop.
	evictions chan error
	// retried: started by a retry (retry.go); the first fetch that
	// succeeds ends the partition's failure streak.
	retried atomic.Bool

	// Observations for describe and metrics.
	sourceHW     atomic.Int64
	sourceLSO    atomic.Int64
	sourceSeenAt atomic.Int64 // unix ms of the last fetch answer; 0: none yet
	// lsoWaitSince is when the fetcher, caught up to the source's LSO,
	// first saw records past it held back at that LSO (lsoWaitAt): an open
	// transaction at the source. 0 when not waiting.
	lsoWaitSince atomic.Int64
	lsoWaitAt    atomic.Int64
	caughtUpAt   atomic.Int64 // unix ms when the local log last reached the source HW
	fetchErrors  atomic.Int64
	epochFences  atomic.Int64 // fetches the source fenced (FENCED_LEADER_EPOCH)
	bytes        atomic.Int64
	lastErr      atomic.Pointer[string]
	lastErrAt    atomic.Int64 // unix ms of the last fetch error
	lastProgress atomic.Int64
}

func (m *Manager) startFetcher(rt *liveMirror, topic string, idx int32, p *partition.Partition, paused bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	m.startFetcherLocked(rt, topic, idx, p, paused)
}

func (m *Manager) startFetcherLocked(rt *liveMirror, topic string, idx int32, p *partition.Partition, paused bool) {
	if m.goneLocked(rt) {
		// Deleted or shut down: shutdownRuntime has taken (or will take)
		// the fetchers it waits for; one started now would be left.
		return
	}
	k := tp{topic, idx}
	rt.closing = slices.DeleteFunc(rt.closing, func(f *fetcher) bool { // those that have exited
		select {
		case <-f.done:
			return true
		default:
			return false
		}
	})
	if f := rt.fetchers[k]; f != nil {
		select {
		case <-f.done: // it failed and exited: a new one takes its place
		default:
			return
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &fetcher{m: m, rt: rt, k: k, p: p, ctx: ctx, stop: cancel, done: make(chan struct{}),
		wake: make(chan struct{}, 1), pause: paused, evictions: make(chan error, 1)}
	f.sourceHW.Store(-1)
	f.sourceLSO.Store(-1)
	f.caughtUpAt.Store(time.Now().UnixMilli())
	rt.fetchers[k] = f
	go f.run()
}

func (f *fetcher) close() {
	f.stop()
	<-f.done
}

// setPaused pauses or resumes f. A pause takes f out of its broker loop
// before it returns, so once Pause returns nothing more is appended: the
// fetcher's goroutine also leaves when it wakes, but the scheduler may run
// it after the loop has appended another fetch.
func (f *fetcher) setPaused(p bool) {
	f.pmu.Lock()
	f.pause = p
	var joined *brokerLoop
	if p {
		joined, f.loop = f.loop, nil
	}
	f.pmu.Unlock()
	if joined != nil {
		joined.remove(f)
	}
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// join adds f to loop unless f is paused, fetching the source topic by
// topicID (Fetch v13+; zero: by name) at the source's leader epoch epoch
// (-1: unchecked). It and setPaused hold pmu, so a pause that comes after
// the fetcher last looked is not missed.
func (f *fetcher) join(loop *brokerLoop, topicID [16]byte, epoch int32) bool {
	f.pmu.Lock()
	defer f.pmu.Unlock()
	if f.pause {
		return false
	}
	f.loop = loop
	loop.add(f, topicID, epoch)
	return true
}

func (f *fetcher) paused() bool {
	f.pmu.Lock()
	defer f.pmu.Unlock()
	return f.pause
}

func (f *fetcher) logger() *zap.Logger {
	return f.m.logger.With(zap.String("mirror", f.rt.spec.Name), zap.String("topic", f.k.topic), zap.Int32("partition", f.k.partition))
}

// sleep waits d, returning false when the fetcher is stopped.
func (f *fetcher) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.ctx.Done():
		return false
	case <-t.C:
		return true
	case <-f.wake:
		return true
	}
}

// recordErr stores the error before counting it, so that a status that
// reads a count above zero also reads an error.
func (f *fetcher) recordErr(err error) {
	f.lsoWaitSince.Store(0)
	s := err.Error()
	f.lastErr.Store(&s)
	f.lastErrAt.Store(time.Now().UnixMilli())
	f.fetchErrors.Add(1)
	f.m.metrics.fetchErrors.WithLabelValues(f.rt.spec.Name, f.k.topic).Inc()
}

func (f *fetcher) run() {
	defer func() {
		if h := f.m.knobs.beforeFetcherExit; h != nil {
			h(f.k.topic, f.k.partition)
		}
		close(f.done)
	}()
	log := f.logger()
	backoff := 100 * time.Millisecond
	var lastFence time.Time
	fail := func(err error) bool {
		f.recordErr(err)
		var perr error
		switch {
		case isIdentityError(err):
			// Another cluster, or a recreated topic: never retried.
			perr = f.m.failIdentity(f.rt, f.k.topic, err)
		case isTruncateRefused(err):
			perr = f.m.fail(f.rt, f.k, err)
		case isRetriableFailure(err):
			perr = f.m.failRetriable(f.rt, f.k, err)
		case isSecurityFailure(err):
			// Retrying with the same credentials cannot succeed:
			// FAILED until the source config is changed.
			perr = f.m.fail(f.rt, f.k, fmt.Errorf("source refused the mirror's security settings: %w", err))
		default:
			log.Warn("mirror fetch failed; backing off", zap.Error(err), zap.Duration("backoff", backoff))
			ok := f.sleep(backoff)
			backoff = min(backoff*2, 5*time.Second)
			return ok
		}
		if perr == nil || f.m.knobs.dropFailSaveError {
			return false // FAILED (or STOPPING, which closes this fetcher)
		}
		// FAILED could not be persisted, so the partition keeps its
		// state, and this fetcher: it backs off and meets the failure
		// again (before, the error was dropped and the fetcher left a
		// partition recorded as fed by a fetcher with none).
		log.Error("persisting FAILED failed; retrying", zap.Error(perr), zap.NamedError("failure", err),
			zap.Duration("backoff", backoff))
		ok := f.sleep(backoff)
		backoff = min(backoff*2, 5*time.Second)
		return ok
	}
	src, err := f.m.source(f.rt)
	if errors.Is(err, errStopped) {
		return // shut down, not failed: the state stays for the next start
	}
	for err != nil { // the source config cannot make a client
		if perr := f.m.fail(f.rt, f.k, err); perr == nil {
			return
		} else if log.Error("persisting FAILED failed; retrying", zap.Error(perr)); !f.sleep(backoff) {
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	// PREPARING: align the local log with the source before fetching.
	for f.state() == Preparing {
		if err := f.prepare(src); err != nil {
			if f.ctx.Err() != nil || !fail(err) {
				return
			}
			continue
		}
		if err := f.m.setRecord(f.rt, f.k, func(r *partitionRecord) {
			// Refused unless still PREPARING (a stop may have begun).
			if next, _, err := step(*r, coreEvent{Kind: EvPrepared, Paused: f.paused()}); err == nil {
				*r = next
			}
		}); err != nil {
			// Still PREPARING (the record is put back): prepare again
			// after the backoff.
			log.Error("persisting MIRRORING failed", zap.Error(err))
			if !f.sleep(backoff) {
				return
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
	}
	for f.ctx.Err() == nil {
		if f.paused() {
			if !f.sleep(time.Hour) {
				return
			}
			continue
		}
		info, err := src.describeTopic(f.ctx, f.k.topic)
		if err != nil {
			if !fail(err) {
				return
			}
			continue
		}
		if err := f.m.checkIdentity(f.rt, f.k.topic, info); err != nil {
			if !fail(err) { // identity errors stop here; a failed save is retried
				return
			}
			continue
		}
		epoch, ok := info.Epochs[f.k.partition]
		if !ok {
			epoch = -1
		}
		if err := f.m.noteSourceEpoch(f.rt, f.k, f.p, epoch); err != nil {
			// Not followed yet; the next describe (or group sync) tries again.
			log.Warn("persisting the source's leader epoch failed", zap.Error(err))
		}
		leader, ok := info.Partitions[f.k.partition]
		if !ok || leader < 0 {
			if !fail(fmt.Errorf("source has no leader for %s-%d", f.k.topic, f.k.partition)) {
				return
			}
			continue
		}
		select {
		case <-f.evictions: // stale
		default:
		}
		loop := src.loop(leader, f.m.opts.FetchMaxBytes)
		joined := time.Now()
		if !f.join(loop, info.ID, epoch) {
			continue // paused since the check above
		}
		select {
		case <-f.ctx.Done():
			loop.remove(f)
			return
		case <-f.wake: // paused (or resumed): leave and look again
			f.m.knobs.hooks.FetcherWoken(f.k.topic, f.k.partition)
			loop.remove(f)
		case err := <-f.evictions:
			if time.Since(joined) > 10*time.Second {
				backoff = 100 * time.Millisecond
			}
			if errors.Is(err, kerr.OffsetOutOfRange) {
				err = f.handleOutOfRange(src, f.p.Offsets().LogEnd)
			}
			if errors.Is(err, kerr.FencedLeaderEpoch) {
				// The source's leader epoch rose since the Metadata answer
				// (a leader election, with or without a record since):
				// read it again at once, which raises the local epoch
				// (epoch.go). Fenced again within a second (a source
				// whose metadata lags its leader): back off.
				f.epochFences.Add(1)
				if time.Since(lastFence) > time.Second {
					lastFence = time.Now()
					continue
				}
				lastFence = time.Now()
			}
			if err != nil && !fail(err) {
				return
			}
		}
	}
}

// evicted is called by the broker loop that dropped this partition.
func (f *fetcher) evicted(err error) {
	select {
	case f.evictions <- err:
	default:
	}
}

// apply appends fetched batches as REPLICATION and records progress.
func (f *fetcher) apply(res fetchResult) error {
	f.sourceHW.Store(res.HighWatermark)
	f.sourceSeenAt.Store(time.Now().UnixMilli())
	if len(res.Records) > 0 {
		if h := f.m.knobs.appendGate; h != nil {
			h(f.k.topic, f.k.partition)
		}
		n, err := f.p.AppendAsMirror(res.Records)
		if err != nil {
			return &localAppendError{err}
		}
		if n > 0 {
			f.bytes.Add(int64(len(res.Records)))
			f.m.metrics.bytes.WithLabelValues(f.rt.spec.Name, f.k.topic).Add(float64(len(res.Records)))
			f.lastProgress.Store(time.Now().UnixMilli())
		}
	}
	now := time.Now().UnixMilli()
	// Caught up: everything the fetch's isolation can give (the LSO
	// read_committed, the high watermark read_uncommitted).
	target := res.LastStable
	if f.rt.settings().FailoverMode.fetchIsolation() == 0 {
		target = res.HighWatermark
	}
	caughtUp := f.p.Offsets().LogEnd >= target
	if caughtUp {
		f.caughtUpAt.Store(now)
	}
	f.sourceLSO.Store(res.LastStable)
	switch {
	case !caughtUp || target >= res.HighWatermark: // read_uncommitted waits for no LSO
		f.lsoWaitSince.Store(0)
	case f.lsoWaitSince.Load() == 0 || f.lsoWaitAt.Load() != res.LastStable:
		f.lsoWaitAt.Store(res.LastStable)
		f.lsoWaitSince.Store(now)
	}
	return nil
}

// handleOutOfRange deals with a fetch offset the source no longer (or not
// yet) has. Behind the source's log start: the gap cannot be filled, so the
// local log restarts at the source's log start. Past the source's end: the
// logs diverged (the source was truncated), so PREPARING runs again.
func (f *fetcher) handleOutOfRange(src *source, offset int64) error {
	// A topic recreated at the source answers out of range too (fetched
	// by name): it must not restart or cut the local log.
	if err := f.checkSourceTopic(src); err != nil {
		return err
	}
	start, err := src.listOffset(f.ctx, f.k.topic, f.k.partition, -2)
	if err != nil {
		return err
	}
	if offset < start {
		f.logger().Warn("source log start passed the mirror; restarting at the source's log start",
			zap.Int64("local_end", offset), zap.Int64("source_start", start))
		return f.p.TruncateFullyAndStartAt(start)
	}
	return f.prepare(src)
}

func (f *fetcher) state() State {
	f.rt.mu.Lock()
	defer f.rt.mu.Unlock()
	return f.rt.spec.Topics[f.k.topic].Partitions[f.k.partition].State
}

// fail moves a partition to FAILED with a reason; it stays read-only.
// Failures from the source's settings (a client that cannot be made,
// credentials or certificates refused) restart when they change; a
// refused truncation does not. Identity failures go through failIdentity.
// It answers the error of persisting FAILED (nil when the transition is
// refused): the record is then unchanged.
func (m *Manager) fail(rt *liveMirror, k tp, err error) error {
	m.logger.Error("mirror partition failed", zap.String("mirror", rt.spec.Name), zap.String("topic", k.topic),
		zap.Int32("partition", k.partition), zap.Error(err))
	// A refused truncation is the operator's to decide (start again with
	// --allow-truncate); other failures come from the source's settings,
	// which AlterSourceConfig restarts.
	kind := failSecurity
	if isTruncateRefused(err) {
		kind = failTruncateRefused
	}
	return m.setRecord(rt, k, func(r *partitionRecord) {
		// Refused in STOPPING (the failover goes on), and once stopped or failed.
		if next, _, terr := step(*r, coreEvent{Kind: EvFail, Fail: kind, Reason: err.Error()}); terr == nil {
			*r = next
		}
	})
}
