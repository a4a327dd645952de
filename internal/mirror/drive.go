package mirror

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/psm"
)

// The driver of STOPPING: it runs a failover's partitions through the
// core (core.go) and applies the effects the core answers, in each
// partition's order, persisting before it acts. A failover of many
// partitions runs each effect for all of them before the next: one save
// per persist (three in all, whatever the partition count: the stop,
// the last mirrored offsets, STOPPED), one clamp of group offsets, and the
// per-partition I/O (fetcher teardown, truncation, barrier) 64 at a time.
// The events that report effects done are stepped for all partitions
// together, which makes the next round of effects.

// stopDriver is one failover's partitions and where each stands.
type stopDriver struct {
	m     *Manager
	rt    *liveMirror
	tps   []tp
	parts []*partition.Partition
	errs  []error        // a partition's failed effect: it leaves the run
	snap  recordSnapshot // the records before the last step, for a failed save
}

// stopPartitions runs the STOPPING steps of the partitions of tps still
// STOPPING, from the first step each record does not say is done (so a
// crash anywhere resumes here on restart, and never writes a second
// barrier).
func (m *Manager) stopPartitions(rt *liveMirror, tps []tp) error {
	// One failover at a time: a stop asked again while one runs, or
	// resumed at start-up, waits here, then goes on with what is still
	// STOPPING (a partition STOPPED meanwhile must not be clamped again:
	// its group offsets are local ones now).
	m.stopMu.Lock()
	defer m.stopMu.Unlock()
	rt.mu.Lock()
	tps = slices.DeleteFunc(slices.Clone(tps), func(k tp) bool {
		return rt.spec.Topics[k.topic].Partitions[k.partition].State != Stopping
	})
	pending := make([][]effect, len(tps))
	for i, k := range tps {
		pending[i] = stopEffects(m.knobs, *rt.spec.Topics[k.topic].Partitions[k.partition])
	}
	rt.mu.Unlock()
	if len(tps) == 0 {
		return nil
	}
	d := &stopDriver{m: m, rt: rt, tps: tps, parts: make([]*partition.Partition, len(tps)), errs: make([]error, len(tps))}
	for i, k := range tps {
		ps := m.local.Partitions(k.topic)
		if int(k.partition) >= len(ps) {
			return fmt.Errorf("mirror: %s-%d missing locally", k.topic, k.partition)
		}
		d.parts[i] = ps[k.partition]
	}
	for {
		events, err := d.apply(pending)
		if err != nil {
			return err
		}
		var more bool
		if pending, more = d.step(events); !more {
			break
		}
	}
	return d.finish()
}

// apply applies every partition's effects, column by column (the first
// effect of each, then the second, …), and answers the events they report.
// It answers an error when a save fails (the records are put back) or a
// crash hook stops the fetchers' step.
func (d *stopDriver) apply(pending [][]effect) ([]*coreEvent, error) {
	events := make([]*coreEvent, len(d.tps))
	for col := 0; ; col++ {
		byKind := map[effectKind][]int{}
		for i, effs := range pending {
			if d.errs[i] == nil && col < len(effs) {
				byKind[effs[col].Kind] = append(byKind[effs[col].Kind], i)
			}
		}
		if len(byKind) == 0 {
			return events, nil
		}
		for kind := effPersist; kind <= effAbortTxn; kind++ {
			if idx := byKind[kind]; len(idx) > 0 {
				if err := d.applyKind(kind, idx, col, pending, events); err != nil {
					return nil, err
				}
			}
		}
	}
}

func (d *stopDriver) applyKind(kind effectKind, idx []int, col int, pending [][]effect, events []*coreEvent) error {
	m, rt := d.m, d.rt
	switch kind {
	case effPersist:
		rt.mu.Lock()
		err := m.saveOrRestoreLocked(rt, d.snap)
		rt.mu.Unlock()
		return err
	case effDisarmRetry:
		rt.mu.Lock()
		for _, i := range idx {
			if t := rt.retries[d.tps[i]]; t != nil {
				t.Stop()
				delete(rt.retries, d.tps[i])
			}
		}
		rt.mu.Unlock()
	case effStopFetcher:
		for _, i := range idx {
			if err := m.hook(StepStopFetcher, d.tps[i]); err != nil {
				return err
			}
		}
		d.stopFetchers(idx)
	case effFindLSO:
		for _, i := range idx {
			o := d.parts[i].Offsets()
			ev := &coreEvent{Kind: EvLSO, End: o.LastStable, Lost: o.LogEnd - o.LastStable, Open: int64(openTxns(d.parts[i]))}
			if m.knobs.hooks.SkipAbortMarkers() && ev.Open > 0 {
				m.logger.Warn("NEGATIVE CONTROL: open transactions not aborted", zap.String("topic", d.tps[i].topic),
					zap.Int32("partition", d.tps[i].partition), zap.Int64("open", ev.Open))
				ev.Open = 0
			}
			events[i] = ev
		}
	case effTruncate:
		parallel(len(idx), func(j int) {
			i := idx[j]
			d.errs[i] = d.truncate(d.tps[i], d.parts[i], pending[i][col].At)
		})
	case effClampGroups:
		ends := map[coordinator.TopicPartition]int64{}
		for _, i := range idx {
			if d.errs[i] = m.hook(StepClamp, d.tps[i]); d.errs[i] == nil {
				ends[coordinator.TopicPartition{Topic: d.tps[i].topic, Partition: d.tps[i].partition}] = pending[i][col].At
			}
		}
		n, err := m.clampGroupOffsets(ends)
		if n > 0 {
			m.logger.Info("failover lowered group offsets past the cut to it", zap.String("mirror", rt.spec.Name), zap.Int("offsets", n))
		}
		for _, i := range idx {
			switch {
			case d.errs[i] != nil:
			case err != nil:
				d.errs[i] = fmt.Errorf("clamp group offsets: %w", err)
			default:
				events[i] = &coreEvent{Kind: EvClamped}
			}
		}
	case effWriteBarrier:
		parallel(len(idx), func(j int) {
			i := idx[j]
			off, err := d.writeBarrier(d.tps[i], d.parts[i], pending[i][col].At)
			if d.errs[i] = err; err == nil {
				events[i] = &coreEvent{Kind: EvStopped, Offset: off}
			}
		})
	case effSetMode:
		for _, i := range idx {
			applyMode(d.parts[i], pending[i][col].Mode, rt.spec.Name)
		}
	case effAbortTxn:
		parallel(len(idx), func(j int) {
			i := idx[j]
			d.errs[i] = d.abortTxn(d.tps[i], d.parts[i], pending[i][col])
		})
	default:
		for _, i := range idx {
			d.errs[i] = fmt.Errorf("mirror: effect %s in STOPPING", kind)
		}
	}
	return nil
}

// stopFetchers stops the fetchers of the partitions idx (and those
// failIdentity stopped without waiting) and waits for them: once it
// returns, nothing more is appended to those partitions.
func (d *stopDriver) stopFetchers(idx []int) {
	rt := d.rt
	stopping := make(map[tp]bool, len(idx))
	rt.mu.Lock()
	var fetchers []*fetcher
	for _, i := range idx {
		k := d.tps[i]
		stopping[k] = true
		if f := rt.fetchers[k]; f != nil {
			fetchers = append(fetchers, f)
			delete(rt.fetchers, k)
		}
	}
	rt.closing = slices.DeleteFunc(rt.closing, func(f *fetcher) bool {
		if stopping[f.k] {
			fetchers = append(fetchers, f)
			return true
		}
		return false
	})
	rt.mu.Unlock()
	var wg sync.WaitGroup
	for _, f := range fetchers {
		wg.Add(1)
		go func() { defer wg.Done(); f.close() }()
	}
	wg.Wait()
}

// step steps every partition with an event through the core and answers
// their next effects (false when none is left).
func (d *stopDriver) step(events []*coreEvent) ([][]effect, bool) {
	m, rt := d.m, d.rt
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var ks []tp
	for i, ev := range events {
		if ev != nil && d.errs[i] == nil {
			ks = append(ks, d.tps[i])
		}
	}
	d.snap = snapshotLocked(rt, ks)
	pending := make([][]effect, len(d.tps))
	more := false
	for i, ev := range events {
		if ev == nil || d.errs[i] != nil {
			continue
		}
		k := d.tps[i]
		if ev.Kind == EvStopped {
			if d.errs[i] = m.hook(StepStopped, k); d.errs[i] != nil {
				continue
			}
		}
		rec := rt.spec.Topics[k.topic].Partitions[k.partition]
		next, effs, err := stepWith(m.knobs, *rec, *ev)
		if err != nil {
			d.errs[i] = err
			continue
		}
		if ev.Kind == EvLSO && ev.Lost > 0 {
			m.logger.Info("failover truncates records past the LSO", zap.String("topic", k.topic),
				zap.Int32("partition", k.partition), zap.Int64("records", ev.Lost))
		}
		*rec, pending[i] = next, effs
		more = more || len(effs) > 0
	}
	return pending, more
}

// finish records why the partitions whose step failed are still
// STOPPING, and answers their errors.
func (d *stopDriver) finish() error {
	m, rt := d.m, d.rt
	var failed []error
	rt.mu.Lock()
	var ks []tp
	for i, err := range d.errs {
		if err != nil {
			ks = append(ks, d.tps[i])
		}
	}
	snap := snapshotLocked(rt, ks)
	for i, err := range d.errs {
		if err == nil {
			continue
		}
		k := d.tps[i]
		failed = append(failed, fmt.Errorf("%s-%d: %w", k.topic, k.partition, err))
		rec := rt.spec.Topics[k.topic].Partitions[k.partition]
		if next, _, serr := step(*rec, coreEvent{Kind: EvStepFailed, Reason: err.Error()}); serr == nil {
			*rec = next
		}
	}
	if len(ks) > 0 {
		if err := m.saveOrRestoreLocked(rt, snap); err != nil {
			failed = append(failed, err)
		}
	}
	rt.mu.Unlock()
	if n := len(d.tps) - len(ks); n > 0 {
		m.logger.Info("failover complete", zap.String("mirror", rt.spec.Name), zap.Int("partitions", n))
	}
	return errors.Join(failed...)
}

// truncate cuts the log to at (the last mirrored offset, persisted).
func (d *stopDriver) truncate(k tp, p *partition.Partition, at int64) error {
	if err := d.m.hook(StepTruncate, k); err != nil {
		return err
	}
	if p.Offsets().LogEnd <= at {
		return nil
	}
	if err := p.TruncateTo(at); err != nil {
		return fmt.Errorf("truncate to LSO %d: %w", at, err)
	}
	if end := p.Offsets().LogEnd; end != at {
		// The LSO starts a batch (an open transaction's first, or the
		// high watermark): a cut elsewhere would put the barrier where
		// the record does not say.
		return fmt.Errorf("truncate to LSO %d left the log ending at %d", at, end)
	}
	return nil
}

// openTxns is how many producers have a transaction open in p.
func openTxns(p *partition.Partition) int {
	n := 0
	for _, e := range p.Producers() {
		if e.CurrentTxnFirstOffset >= 0 {
			n++
		}
	}
	return n
}

// abortTxn writes the ABORT marker at e.At for the transaction open in
// the partition that began first (abort-open-transactions), unless a
// marker is there already (a crash after writing it): never a second
// one. Past the last mirrored offset the log holds only this failover's
// markers, in order, so the offset says which are written.
func (d *stopDriver) abortTxn(k tp, p *partition.Partition, e effect) error {
	m := d.m
	end := p.Offsets().LogEnd
	if end > e.At {
		if _, ok, err := p.AbortMarkerAt(e.At); err != nil {
			return err
		} else if !ok && !m.knobs.barrierBeforeAborts {
			return fmt.Errorf("abort open transactions: offset %d is not the failover's ABORT marker", e.At)
		}
		return nil
	}
	if end < e.At {
		return fmt.Errorf("abort open transactions: the log ends at %d, before the marker's offset %d", end, e.At)
	}
	var first *psm.Entry
	for _, pe := range p.Producers() {
		if pe.CurrentTxnFirstOffset >= 0 && (first == nil || pe.CurrentTxnFirstOffset < first.CurrentTxnFirstOffset) {
			first = &pe
		}
	}
	if first == nil {
		if m.knobs.barrierBeforeAborts {
			return nil // negative control: the barrier cleared them
		}
		return fmt.Errorf("abort open transactions: none left open for the marker at %d", e.At)
	}
	if err := m.hook(StepAbort, k); err != nil {
		return err
	}
	off, err := p.WriteFailoverAbort(first.ProducerID, first.Epoch, first.CoordinatorEpoch, e.NewEpoch)
	if err != nil {
		return fmt.Errorf("abort open transaction of producer %d: %w", first.ProducerID, err)
	}
	m.logger.Info("failover aborted a transaction open in the mirrored log", zap.String("topic", k.topic),
		zap.Int32("partition", k.partition), zap.Int64("producer_id", first.ProducerID),
		zap.Int64("first_offset", first.CurrentTxnFirstOffset), zap.Int64("marker_offset", off))
	return nil
}

// writeBarrier writes the MIRROR_PID_RESET barrier at the last mirrored
// offset at, flushed, unless one is already there (a crash after writing
// it): never a second one. Anything past at (a crash before the cut) is
// cut first: nothing but the barrier may follow the last mirrored offset.
// at < 0 (a negative control only) writes it at the log end.
func (d *stopDriver) writeBarrier(k tp, p *partition.Partition, at int64) (int64, error) {
	m, rt := d.m, d.rt
	if at >= 0 {
		if ok, err := p.BarrierAt(at); err != nil {
			return 0, err
		} else if ok {
			return at, nil
		}
		if end := p.Offsets().LogEnd; end > at {
			if err := p.TruncateTo(at); err != nil {
				return 0, err
			}
		}
	}
	if err := m.hook(StepBarrier, k); err != nil {
		return 0, err
	}
	if m.knobs.hooks.SkipBarrier() {
		m.logger.Warn("NEGATIVE CONTROL: barrier not written", zap.String("topic", k.topic), zap.Int32("partition", k.partition))
		return at, nil
	}
	off, err := p.WriteBarrier(rt.spec.SourceClusterID)
	if err != nil {
		return 0, fmt.Errorf("write barrier: %w", err)
	}
	if !m.knobs.hooks.SkipBarrierSync() {
		if err := p.FlushTo(off + 1); err != nil {
			return 0, fmt.Errorf("flush barrier: %w", err)
		}
	}
	m.metrics.barriers.WithLabelValues(rt.spec.Name).Inc()
	m.logger.Debug("wrote MIRROR_PID_RESET barrier", zap.String("mirror", rt.spec.Name), zap.String("topic", k.topic),
		zap.Int32("partition", k.partition), zap.Int64("offset", off), zap.Int32("epoch", p.LeaderEpoch()))
	return off, nil
}
