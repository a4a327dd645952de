// Package storage proves durability of the built binary's storage: every
// acknowledged record survives kill -9, topic creation interrupted by a
// kill, many partitions reopened in parallel, and the file-descriptor
// limit. Black-box: it reaches the broker only over TCP, files and the
// built binary.
package storage

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
