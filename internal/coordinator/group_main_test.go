package coordinator

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// coordinator goroutine has an owner that stops it and waits for it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
