// Package share proves share groups (KIP-932): delivery to several
// consumers, acquisition locks and their expiry, read_committed, listing
// and deleting, and acknowledgements kept across a crash and a kill -9.
// Black-box: it reaches the broker only over TCP and through
// minibrokertest.
package share

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
