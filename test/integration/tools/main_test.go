// Package tools proves the commands around the broker: the binary's
// serve, flags, settings files and signals, listeners, healthcheck, the
// log tools (dump-log, verify-log), the fault CLI, the drill, the
// monitoring rules and dashboard, and a source check on declaration names.
//
// It imports internal/drill to run the drill in process and read its
// report, internal/mirror for the failover modes and test knobs the drill
// scenarios set (itest.MirrorHooks), and internal/config for the one
// broker (itest.StartBroker) whose producer-expiry settings are changed.
package tools

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
