// Package locktest holds the check the lock-hygiene tests share: that a
// call returns, so a lock a recovered panic left held shows as a failure
// instead of a hung test run.
package locktest

import (
	"testing"
	"time"
)

// Within runs fn and fails the test if it has not returned in 10 s (a
// lock left held).
func Within(t testing.TB, what string, fn func()) {
	t.Helper()
	within(t, what, fn, 10*time.Second)
}

func within(t testing.TB, what string, fn func(), limit time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not return: a lock was left held", what)
	}
}
