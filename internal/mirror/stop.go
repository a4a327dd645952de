package mirror

import (
	"context"
	"sync"
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
	rt       *liveMirror
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
	rt.mu.Lock()
	if m.closed {
		rt.mu.Unlock()
		return nil, errStopped
	}
	snap := snapshotLocked(rt, selected)
	var tps []tp
	for _, k := range selected {
		rec := rt.spec.Topics[k.topic].Partitions[k.partition]
		// The core's stop: persist, then the effects stopPartitions
		// applies (it recomputes them from the record in its turn).
		next, _, err := stepWith(m.knobs, *rec, coreEvent{Kind: EvStop, Mode: rt.settings().FailoverMode})
		if err != nil {
			continue // STOPPED already
		}
		*rec = next
		tps = append(tps, k)
	}
	// A failover of the whole mirror ends its following of the topic
	// filters (discover.go): the topics the source creates afterwards are
	// not mirrored into the cluster that has taken over.
	stopAuto := len(topics) == 0 && rt.spec.AutoTopics
	rt.spec.AutoTopics = rt.spec.AutoTopics && !stopAuto
	if len(tps) == 0 && stopAuto {
		err = m.saveOrRestoreLocked(rt, snap)
		rt.mu.Unlock()
		if err != nil {
			return nil, err
		}
		close(run.done)
		return run, nil
	}
	if len(tps) == 0 {
		rt.mu.Unlock()
		close(run.done)
		return run, nil
	}
	err = m.saveOrRestoreLocked(rt, snap)
	if err == nil {
		m.stops.Add(1)
	}
	rt.mu.Unlock()
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
	r.rt.mu.Lock()
	defer r.rt.mu.Unlock()
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

// stepFailed is the reason a partition left STOPPING by a failed step
// shows: it stays STOPPING, read-only, until a stop runs its steps again.
func stepFailed(err error) string {
	return "failover step failed (run mirror stop again to resume it): " + err.Error()
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

func (m *Manager) hook(step StopStep, k tp) error {
	return m.knobs.hooks.BeforeStopStep(step, k.topic, k.partition)
}
