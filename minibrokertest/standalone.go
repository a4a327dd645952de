package minibrokertest

import (
	"fmt"
	"os"
	"sync"
)

// New starts a cluster outside a test (an example, a benchmark harness, a
// main): its temporary data directory is removed by Close, which the
// caller must call.
func New(opts ...Option) (*Cluster, error) {
	return StartE(&standalone{}, opts...)
}

// standalone is the TB of a cluster started by New.
type standalone struct {
	mu       sync.Mutex
	dirs     []string
	cleanups []func()
}

func (s *standalone) Helper() {}

func (s *standalone) TempDir() string {
	dir, err := os.MkdirTemp("", "minibroker-")
	if err != nil {
		panic(fmt.Sprintf("minibrokertest: temp dir: %v", err))
	}
	s.mu.Lock()
	s.dirs = append(s.dirs, dir)
	s.mu.Unlock()
	return dir
}

// Cleanup runs f at Close, then removes the temp dirs.
func (s *standalone) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *standalone) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("minibrokertest: "+format, args...))
}

func (s *standalone) Logf(string, ...any) {}

func (s *standalone) removeDirs() {
	s.mu.Lock()
	dirs := s.dirs
	s.dirs = nil
	s.mu.Unlock()
	for _, d := range dirs {
		os.RemoveAll(d)
	}
}
