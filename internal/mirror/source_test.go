package mirror

import (
	"errors"
	"testing"
)

// Once a mirror's runtime is shut down, asking for its source client makes
// none: shutdownRuntime has already taken the client it closes, so one
// made afterwards (by the refresher or a fetcher still finishing) would
// leak its goroutines past the broker's Close. Without the check, source
// hands out a new client here.
func TestNoSourceClientAfterShutdown(t *testing.T) {
	m := &Manager{mirrors: map[string]*liveMirror{}}
	rt, err := m.newRuntime(&mirrorSpec{Name: "m", Source: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	close(rt.done) // no refresher runs
	m.shutdownRuntime(rt)
	src, err := m.source(rt)
	if src != nil {
		src.close()
	}
	if !errors.Is(err, errStopped) {
		t.Fatalf("source after shutdown: %v, want errStopped and no client", err)
	}
}
