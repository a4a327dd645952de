// Package share proves share groups (KIP-932): delivery to several
// consumers, acquisition locks and their expiry, read_committed, listing
// and deleting, and acknowledgements kept across a crash and a kill -9.
// It reaches the broker over TCP, through minibrokertest, and through
// itest.ShareBroker for the negative controls.
//
// It imports internal/share for DecodeStateRecord (the records of
// __share_group_state) and for TestHooks, the share coordinator's
// negative controls (lock expiry, release on connection close, the state
// store), which no public option reaches (itest.ShareBroker sets them
// through broker.WithTestHooks); and internal/mirror for the crash
// restart's options (itest.RawCluster.CrashAndRestart).
package share

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
