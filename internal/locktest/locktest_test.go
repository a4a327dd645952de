package locktest

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and
// ends the calling goroutine, as testing's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls within on a goroutine of its own (Fatalf ends it) and
// returns what Fatalf recorded, "" if it was not called.
func run(fn func(), limit time.Duration) string {
	rec := &fatalRecorder{}
	done := make(chan struct{})
	go func() { defer close(done); within(rec, "the call", fn, limit) }()
	<-done
	return rec.msg
}

func TestWithinPassesAReturningCall(t *testing.T) {
	if msg := run(func() {}, time.Second); msg != "" {
		t.Fatalf("a call that returned failed the test: %q", msg)
	}
}

// The check's point: a call blocked on a lock left held fails the test
// instead of hanging it.
func TestWithinFailsABlockedCall(t *testing.T) {
	var mu sync.Mutex
	mu.Lock() // left held, as by a recovered panic
	msg := run(func() { mu.Lock() }, 50*time.Millisecond)
	if want := "the call did not return: a lock was left held"; msg != want {
		t.Fatalf("Fatalf got %q, want %q", msg, want)
	}
	mu.Unlock() // lets the blocked call end
}
