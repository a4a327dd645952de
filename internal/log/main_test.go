package log

import (
	"testing"

	"go.uber.org/goleak"
)

// Every Log's flusher goroutine must be stopped by Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
