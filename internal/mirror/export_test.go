package mirror

import "time"

// Seams for the tests of package mirror_test (knobs, hooks.go).

// SetBeforeFetcherExit makes every fetcher goroutine of m call fn as it
// exits. Set it before the fetchers start.
func SetBeforeFetcherExit(m *Manager, fn func(topic string, partition int32)) {
	m.knobs.beforeFetcherExit = fn
}

// SetAppendGate makes the broker loops of m call fn before each append.
// Set it before the fetchers start.
func SetAppendGate(m *Manager, fn func(topic string, partition int32)) {
	m.knobs.appendGate = fn
}

// SetNoFetchEpoch makes m's fetches send CurrentLeaderEpoch -1. Set it
// before the mirrors start.
func SetNoFetchEpoch(m *Manager) { m.knobs.noFetchEpoch = true }

// EpochFences is how many fetches of the partition's fetcher the source
// fenced (FENCED_LEADER_EPOCH); -1 when it has no fetcher.
func EpochFences(m *Manager, name, topic string, partition int32) int64 {
	rt, err := m.runtime(name)
	if err != nil {
		return -1
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.fetchers[tp{topic, partition}] == nil {
		return -1
	}
	return rt.fetchers[tp{topic, partition}].epochFences.Load()
}

// SetDropFailSaveError makes m's fetchers drop the error of persisting
// FAILED and exit (the defect, for a negative control).
func SetDropFailSaveError(m *Manager) { m.knobs.dropFailSaveError = true }

// SetBeforeSave makes every save of m's state call fn first, holding the
// mirror's lock and the store's. Set it before the mirrors are used.
func SetBeforeSave(m *Manager, fn func(mirror string)) { m.knobs.beforeSave = fn }

// SetOneLock gives every mirror of m one shared lock (no per-mirror lock). Set
// it before any mirror is created.
func SetOneLock(m *Manager) { m.knobs.oneLock = true }

// SetAsyncStreakReset makes m end a failure streak in a goroutine of its
// own after d (the defect, for a negative control).
func SetAsyncStreakReset(m *Manager, d time.Duration) { m.knobs.asyncStreakReset = d }
