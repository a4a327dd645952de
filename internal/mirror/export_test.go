package mirror

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
	m.mu.Lock()
	defer m.mu.Unlock()
	rt := m.mirrors[name]
	if rt == nil || rt.fetchers[tp{topic, partition}] == nil {
		return -1
	}
	return rt.fetchers[tp{topic, partition}].epochFences.Load()
}

// SetDropFailSaveError makes m's fetchers drop the error of persisting
// FAILED and exit (the defect, for a negative control).
func SetDropFailSaveError(m *Manager) { m.knobs.dropFailSaveError = true }
