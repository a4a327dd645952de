package mirror

import (
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/batch"
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
		if rec.State != Stopping {
			rec.State, rec.Reason = Stopping, ""
		}
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
//  3. persist the last mirrored offset (the log end after 2);
//  4. write the MIRROR_PID_RESET barrier at an epoch above every epoch in
//     the log, and flush it; skipped when a barrier already sits at the
//     last mirrored offset (a crash after the write);
//  5. persist STOPPED and make the partition writable.
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

	// 2–4 per partition, in parallel (bounded).
	errs := make([]error, len(tps))
	sem := make(chan struct{}, 16)
	for i := range tps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = m.stopOne(rt, tps[i], parts[i], &records[i])
		}()
	}
	wg.Wait()

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
		rec.State = Stopped
	}
	err := m.saveLocked()
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

// stopOne runs steps 2–4 for one partition, updating rec and persisting
// the last mirrored offset before the barrier is written.
func (m *Manager) stopOne(rt *runtime, k tp, p *partition.Partition, rec *partitionRecord) error {
	if rec.LastMirroredOffset < 0 {
		if err := m.hook(StepTruncate, k); err != nil {
			return err
		}
		lso := p.Offsets().LastStable
		if err := p.TruncateTo(lso); err != nil {
			return fmt.Errorf("truncate to LSO %d: %w", lso, err)
		}
		rec.LastMirroredOffset = p.Offsets().LogEnd
		if err := m.setRecord(rt, k, func(r *partitionRecord) { r.LastMirroredOffset = rec.LastMirroredOffset }); err != nil {
			return err
		}
	}
	if rec.BarrierOffset >= 0 {
		return nil
	}
	if off, ok, err := barrierAt(p, rec.LastMirroredOffset); err != nil {
		return err
	} else if ok {
		rec.BarrierOffset = off // written before a crash: never a second one
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
	if m.opts.SkipBarrier {
		m.logger.Warn("NEGATIVE CONTROL: barrier not written", zap.String("topic", k.topic), zap.Int32("partition", k.partition))
		rec.BarrierOffset = -2
		return nil
	}
	off, err := p.WriteBarrier(rt.spec.SourceClusterID)
	if err != nil {
		return fmt.Errorf("write barrier: %w", err)
	}
	if err := p.Log().Flush(); err != nil {
		return fmt.Errorf("flush barrier: %w", err)
	}
	rec.BarrierOffset = off
	m.metrics.barriers.WithLabelValues(rt.spec.Name).Inc()
	m.logger.Info("wrote MIRROR_PID_RESET barrier", zap.String("mirror", rt.spec.Name), zap.String("topic", k.topic),
		zap.Int32("partition", k.partition), zap.Int64("offset", off), zap.Int32("epoch", p.LeaderEpoch()))
	return nil
}

// barrierAt reports whether the batch at offset is a MIRROR_PID_RESET.
func barrierAt(p *partition.Partition, offset int64) (int64, bool, error) {
	if offset >= p.Offsets().LogEnd {
		return -1, false, nil
	}
	raw, err := p.Log().Read(offset, 1, true)
	if err != nil {
		return -1, false, err
	}
	it := batch.NewIter(raw)
	b, h, ok := it.Next()
	if !ok || h.BaseOffset != offset {
		return -1, false, nil
	}
	return offset, batch.IsBarrier(&h, b), nil
}

func (m *Manager) hook(step StopStep, k tp) error {
	if m.opts.StopStepHook == nil {
		return nil
	}
	return m.opts.StopStepHook(step, k.topic, k.partition)
}

func (m *Manager) hookLocked(step StopStep, k tp) error { return m.hook(step, k) }
