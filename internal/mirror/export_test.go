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
