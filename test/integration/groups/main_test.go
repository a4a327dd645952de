// Package groups proves consumer groups: the classic protocol and
// KIP-848's, static members, migration between them, committed offsets
// (the __consumer_offsets topic) across crashes and kill -9, and the
// coordinator's bounds.
//
// It imports internal/coordinator only for PartitionFor, the hash that
// places a group on an __consumer_offsets partition, which the tests must
// compute exactly as the broker does to find the group's records.
package groups

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
