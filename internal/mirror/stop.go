package mirror

import (
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/partition"
)

// Stop fails over the named topics (all of the mirror's when none): every
// mirrored partition goes through STOPPING to STOPPED and becomes
// writable. It returns when all are STOPPED.
func (m *Manager) Stop(name string, topics []string) error {
	rt, err := m.runtime(name)
	if err != nil {
		return err
	}
	tps, err := m.partitionsOf(rt, topics, Preparing, Mirroring, Paused, Stopping, Failed)
	if err != nil {
		return err
	}
	if len(tps) == 0 {
		return nil
	}
	// Persist STOPPING for all at once before touching any log, so a crash
	// from here on resumes the failover instead of the mirroring.
	m.mu.Lock()
	for _, k := range tps {
		rec := rt.spec.Topics[k.topic].Partitions[k.partition]
		next, err := transition(rec.State, EvStop)
		if err != nil {
			continue // partitionsOf chose only states a stop applies in
		}
		if rec.State != Stopping {
			rec.Reason, rec.SecurityFailure = "", false
			rec.Retriable, rec.RetryAt, rec.AllowTruncate = false, 0, nil
		}
		rec.State = next
	}
	err = m.saveLocked()
	m.mu.Unlock()
	if err != nil {
		return err
	}
	return m.stopPartitions(rt, tps)
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
	for i, k := range tps {
		if errs[i] == nil {
			r := rt.spec.Topics[k.topic].Partitions[k.partition]
			r.LastMirroredOffset, r.LostAtFailover = records[i].LastMirroredOffset, records[i].LostAtFailover
		}
	}
	err := m.saveLocked()
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
	for i, k := range tps {
		if errs[i] != nil {
			failed = append(failed, fmt.Errorf("%s-%d: %w", k.topic, k.partition, errs[i]))
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
	err = m.saveLocked()
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
