// Package compaction proves log compaction: what the cleaner keeps and
// removes, with groups reading across cleaned gaps, over a kill -9 while
// cleaning, on an uncleanable partition, and under mirroring (a mirror
// and a chain over a cleaned log).
//
// It imports internal/logtool to decode segments the way the dump tool
// does, internal/partition to read a partition's state, and
// internal/config for the cleaner's back-off on the brokers it starts
// (itest.StartBroker).
package compaction

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
