// Package txn proves transactions and idempotent producers: commit and
// abort through kgo and sarama, TV2 (KIP-890), the __transaction_state
// topic across crashes and older data directories, producer state and its
// expiry.
//
// It imports internal/coordinator for PartitionFor (which
// __transaction_state partition holds a transactional id), and
// internal/vfs, internal/vfs/errorfs and internal/mirror (the restart's
// options) for the one test that injects a write error into the broker's
// file system, which no public option reaches (itest.StartBroker).
package txn

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
