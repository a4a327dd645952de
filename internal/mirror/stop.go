package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/partition"
)

// Stop fails over the named topics (all of the mirror's when none): every
// mirrored partition goes through STOPPING to STOPPED and becomes
// writable. It returns when the steps have run: nil when all are STOPPED.
func (m *Manager) Stop(name string, topics []string) error {
	run, err := m.BeginStop(name, topics)
	if err != nil {
		return err
	}
	<-run.done
	return run.err
}

// StopRun is a failover begun by BeginStop: its STOPPING steps run in the
// background.
type StopRun struct {
	m        *Manager
	rt       *runtime
	selected []tp // every partition of the topics named, in any state
	done     chan struct{}
	err      error // the steps' error; read after done
}

// BeginStop fails over the named topics (all of the mirror's when none)
// and returns once STOPPING is persisted for every partition a stop
// applies to: from then on the failover is committed (a crash resumes it,
// never the mirroring). The steps run in the background (StopRun.Wait).
// A partition already STOPPING is stopped again: that resumes a failover
// whose steps failed.
func (m *Manager) BeginStop(name string, topics []string) (*StopRun, error) {
	rt, err := m.runtime(name)
	if err != nil {
		return nil, err
	}
	selected, err := m.partitionsOf(rt, topics, Preparing, Mirroring, Paused, Stopping, Stopped, Failed)
	if err != nil {
		return nil, err
	}
	run := &StopRun{m: m, rt: rt, selected: selected, done: make(chan struct{})}
	// Persist STOPPING for all at once before touching any log, so a crash
	// from here on resumes the failover instead of the mirroring.
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errStopped
	}
	snap := snapshotLocked(rt, selected)
	var tps []tp
	for _, k := range selected {
		rec := rt.spec.Topics[k.topic].Partitions[k.partition]
		next, err := transition(rec.State, EvStop)
		if err != nil {
			continue // STOPPED already
		}
		if rec.State != Stopping {
			rec.Retriable, rec.RetryAt, rec.AllowTruncate = false, 0, nil
		}
		rec.Reason, rec.SecurityFailure = "", false // a failed step's reason goes too: the steps run again
		rec.State = next
		tps = append(tps, k)
	}
	// A failover of the whole mirror ends its following of the topic
	// filters (discover.go): the topics the source creates afterwards are
	// not mirrored into the cluster that has taken over.
	stopAuto := len(topics) == 0 && rt.spec.AutoTopics
	rt.spec.AutoTopics = rt.spec.AutoTopics && !stopAuto
	if len(tps) == 0 && stopAuto {
		err = m.saveOrRestoreLocked(snap)
		m.mu.Unlock()
		if err != nil {
			return nil, err
		}
		close(run.done)
		return run, nil
	}
	if len(tps) == 0 {
		m.mu.Unlock()
		close(run.done)
		return run, nil
	}
	err = m.saveOrRestoreLocked(snap)
	if err == nil {
		m.stops.Add(1)
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	go func() {
		defer m.stops.Done()
		defer close(run.done)
		run.err = m.stopPartitions(rt, tps)
	}()
	return run, nil
}

// Wait waits until the steps end or ctx does, and reports on every
// selected partition: how many are STOPPED and which are not (with their
// state and why). Waited is false when ctx ended first: the steps go on.
func (r *StopRun) Wait(ctx context.Context) StopResult {
	res := StopResult{Partitions: len(r.selected)}
	select {
	case <-r.done: // over already: whatever ctx says
	default:
		select {
		case <-r.done:
		case <-ctx.Done():
		}
	}
	select {
	case <-r.done:
		res.Waited = true
		if r.err != nil {
			res.Error = r.err.Error()
		}
	default:
	}
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	for _, k := range r.selected {
		rec := r.rt.spec.Topics[k.topic].Partitions[k.partition]
		if rec.State == Stopped {
			res.Stopped++
			continue
		}
		res.NotStopped = append(res.NotStopped, PartitionState{Topic: k.topic, Partition: k.partition, State: rec.State, Reason: rec.Reason})
	}
	return res
}

// StopResult is what a stop reports (POST /v1/mirrors/{name}/stop).
type StopResult struct {
	// Partitions counts every partition of the topics named.
	Partitions int `json:"partitions"`
	Stopped    int `json:"stopped"`
	// Waited is false when the answer came before the steps ended
	// (without wait, or at the timeout): they go on in the background.
	Waited bool `json:"waited"`
	// NotStopped lists the partitions not STOPPED when the answer was
	// made.
	NotStopped []PartitionState `json:"not_stopped,omitempty"`
	// Error is the steps' error when they ended with one.
	Error string `json:"error,omitempty"`
}

// PartitionState names a partition, its state and the reason of it.
type PartitionState struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	State     State  `json:"state"`
	Reason    string `json:"reason,omitempty"`
}

// stopPartitions runs the seed's STOPPING steps for each partition, in
// parallel across partitions:
//
//  1. remove the fetcher and wait for it;
//  2. truncate to the local LSO (no open transaction survives);
//  3. persist the last mirrored offsets (the log ends after 2), for all
//     the partitions at once, then bring every group offset above them
//     down to them, durably in the group log (clampGroupOffsets);
//  4. write the MIRROR_PID_RESET barrier at an epoch above every epoch in
//     the log, and flush it; skipped when a barrier already sits at the
//     last mirrored offset (a crash after the write);
//  5. persist STOPPED (once for all) and make the partitions writable.
//
// Each step is idempotent, so a crash anywhere resumes here on restart and
// never writes a second barrier.
func (m *Manager) stopPartitions(rt *runtime, tps []tp) error {
	// One failover at a time: a stop asked again while one runs, or
	// resumed at start-up, waits here, then goes on with what is still
	// STOPPING (a partition STOPPED meanwhile must not be clamped again:
	// its group offsets are local ones now).
	m.stopMu.Lock()
	defer m.stopMu.Unlock()
	m.mu.Lock()
	tps = slices.DeleteFunc(slices.Clone(tps), func(k tp) bool {
		return rt.spec.Topics[k.topic].Partitions[k.partition].State != Stopping
	})
	m.mu.Unlock()
	if len(tps) == 0 {
		return nil
	}
	records := make([]partitionRecord, len(tps))
	parts := make([]*partition.Partition, len(tps))
	m.mu.Lock()
	for i, k := range tps {
		records[i] = *rt.spec.Topics[k.topic].Partitions[k.partition]
	}
	m.mu.Unlock()
	for i, k := range tps {
		ps := m.local.Partitions(k.topic)
		if int(k.partition) >= len(ps) {
			return fmt.Errorf("mirror: %s-%d missing locally", k.topic, k.partition)
		}
		parts[i] = ps[k.partition]
	}

	// 1. Fetchers.
	for _, k := range tps {
		if err := m.hook(StepStopFetcher, k); err != nil {
			return err
		}
	}
	m.mu.Lock()
	fetchers := make([]*fetcher, 0, len(tps))
	for _, k := range tps {
		if f := rt.fetchers[k]; f != nil {
			fetchers = append(fetchers, f)
			delete(rt.fetchers, k)
		}
	}
	if len(rt.closing) > 0 { // stopped by failIdentity, maybe still appending
		stopping := make(map[tp]bool, len(tps))
		for _, k := range tps {
			stopping[k] = true
		}
		rt.closing = slices.DeleteFunc(rt.closing, func(f *fetcher) bool {
			if stopping[f.k] {
				fetchers = append(fetchers, f)
				return true
			}
			return false
		})
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, f := range fetchers {
		wg.Add(1)
		go func() { defer wg.Done(); f.close() }()
	}
	wg.Wait()

	// 2–3: truncate every partition to its LSO (in parallel), then persist
	// all the last mirrored offsets at once.
	errs := make([]error, len(tps))
	parallel(len(tps), func(i int) { errs[i] = m.truncateToLSO(tps[i], parts[i], &records[i]) })
	m.mu.Lock()
	snap := snapshotLocked(rt, tps)
	for i, k := range tps {
		if errs[i] == nil {
			r := rt.spec.Topics[k.topic].Partitions[k.partition]
			r.LastMirroredOffset, r.LostAtFailover = records[i].LastMirroredOffset, records[i].LostAtFailover
		}
	}
	err := m.saveOrRestoreLocked(snap)
	m.mu.Unlock()
	if err != nil {
		return err
	}
	ends := map[coordinator.TopicPartition]int64{}
	for i, k := range tps {
		if errs[i] == nil {
			errs[i] = m.hook(StepClamp, k)
		}
		if errs[i] == nil {
			ends[coordinator.TopicPartition{Topic: k.topic, Partition: k.partition}] = records[i].LastMirroredOffset
		}
	}
	if n, err := m.clampGroupOffsets(ends); err != nil {
		for i := range tps {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("clamp group offsets: %w", err)
			}
		}
	} else if n > 0 {
		m.logger.Info("failover lowered group offsets past the cut to it", zap.String("mirror", rt.spec.Name), zap.Int("offsets", n))
	}
	// 4: barriers, in parallel.
	parallel(len(tps), func(i int) {
		if errs[i] == nil {
			errs[i] = m.writeBarrier(rt, tps[i], parts[i], &records[i])
		}
	})

	// 5. One persist for all, then writable.
	var failed []error
	m.mu.Lock()
	snap = snapshotLocked(rt, tps)
	for i, k := range tps {
		if errs[i] != nil {
			failed = append(failed, fmt.Errorf("%s-%d: %w", k.topic, k.partition, errs[i]))
			rt.spec.Topics[k.topic].Partitions[k.partition].Reason = stepFailed(errs[i])
			continue
		}
		rec := rt.spec.Topics[k.topic].Partitions[k.partition]
		rec.LastMirroredOffset, rec.BarrierOffset = records[i].LastMirroredOffset, records[i].BarrierOffset
		if err := m.hookLocked(StepStopped, k); err != nil {
			failed = append(failed, err)
			continue
		}
		next, err := transition(rec.State, EvStopped)
		if err != nil {
			failed = append(failed, fmt.Errorf("%s-%d: %w", k.topic, k.partition, err))
			continue
		}
		rec.State = next
	}
	err = m.saveOrRestoreLocked(snap)
	m.mu.Unlock()
	if err != nil {
		return err
	}
	for i, k := range tps {
		if errs[i] == nil && m.stateOf(rt, k) == Stopped {
			parts[i].SetMode(partition.Writable, "")
		}
	}
	if n := len(tps) - len(failed); n > 0 {
		m.logger.Info("failover complete", zap.String("mirror", rt.spec.Name), zap.Int("partitions", n))
	}
	return errors.Join(failed...)
}

// stepFailed is the reason a partition left STOPPING by a failed step
// shows: it stays STOPPING, read-only, until a stop runs its steps again.
func stepFailed(err error) string {
	return "failover step failed (run mirror stop again to resume it): " + err.Error()
}

func (m *Manager) stateOf(rt *runtime, k tp) State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return rt.spec.Topics[k.topic].Partitions[k.partition].State
}

// parallel runs fn(0..n-1) on up to 64 goroutines and waits.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// truncateToLSO is step 2 for one partition: cut what an open transaction
// left past the local LSO, and note the log end as the last mirrored
// offset. Done already when rec has one (a resumed stop).
func (m *Manager) truncateToLSO(k tp, p *partition.Partition, rec *partitionRecord) error {
	if rec.LastMirroredOffset >= 0 {
		return nil
	}
	if err := m.hook(StepTruncate, k); err != nil {
		return err
	}
	o := p.Offsets()
	if err := p.TruncateTo(o.LastStable); err != nil {
		return fmt.Errorf("truncate to LSO %d: %w", o.LastStable, err)
	}
	rec.LastMirroredOffset = p.Offsets().LogEnd
	rec.LostAtFailover = o.LogEnd - rec.LastMirroredOffset
	if lost := rec.LostAtFailover; lost > 0 {
		m.logger.Info("failover truncated records past the LSO", zap.String("topic", k.topic),
			zap.Int32("partition", k.partition), zap.Int64("records", lost))
	}
	return nil
}

// writeBarrier is step 4 for one partition: the MIRROR_PID_RESET barrier
// at the last mirrored offset, flushed, unless one is already there (a
// crash after writing it): never a second one.
func (m *Manager) writeBarrier(rt *runtime, k tp, p *partition.Partition, rec *partitionRecord) error {
	if rec.BarrierOffset >= 0 {
		return nil
	}
	if ok, err := p.BarrierAt(rec.LastMirroredOffset); err != nil {
		return err
	} else if ok {
		rec.BarrierOffset = rec.LastMirroredOffset
		return nil
	}
	if end := p.Offsets().LogEnd; end > rec.LastMirroredOffset {
		// Nothing but the barrier may follow the last mirrored offset.
		if err := p.TruncateTo(rec.LastMirroredOffset); err != nil {
			return err
		}
	}
	if err := m.hook(StepBarrier, k); err != nil {
		return err
	}
	if m.opts.TestHooks.SkipBarrier() {
		m.logger.Warn("NEGATIVE CONTROL: barrier not written", zap.String("topic", k.topic), zap.Int32("partition", k.partition))
		rec.BarrierOffset = -2
		return nil
	}
	off, err := p.WriteBarrier(rt.spec.SourceClusterID)
	if err != nil {
		return fmt.Errorf("write barrier: %w", err)
	}
	if !m.opts.TestHooks.SkipBarrierSync() {
		if err := p.FlushTo(off + 1); err != nil {
			return fmt.Errorf("flush barrier: %w", err)
		}
	}
	rec.BarrierOffset = off
	m.metrics.barriers.WithLabelValues(rt.spec.Name).Inc()
	m.logger.Debug("wrote MIRROR_PID_RESET barrier", zap.String("mirror", rt.spec.Name), zap.String("topic", k.topic),
		zap.Int32("partition", k.partition), zap.Int64("offset", off), zap.Int32("epoch", p.LeaderEpoch()))
	return nil
}

func (m *Manager) hook(step StopStep, k tp) error {
	return m.opts.TestHooks.BeforeStopStep(step, k.topic, k.partition)
}

func (m *Manager) hookLocked(step StopStep, k tp) error { return m.hook(step, k) }
