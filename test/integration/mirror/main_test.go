// Package mirror proves cluster mirroring: the failover barrier, the
// failback guard and loop refusal, the source's identity checks, crashes
// and kill -9 at every STOPPING step, topic filters and config sync,
// group and share-group offset sync, secured sources, the mirror CLI and
// the state topic.
//
// It imports internal/mirror for its status types and the test knobs that
// switch a rule off for a negative control (itest.MirrorHooks),
// internal/partition for a partition's mirrored/writable state,
// internal/batch for barrier and control-record decoding,
// internal/itopic and internal/mirror/staterec to read the state topic's
// records, internal/adminclient for the CLI's client, and
// internal/security/certtest for source certificates.
package mirror

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
