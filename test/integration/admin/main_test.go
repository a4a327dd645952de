// Package admin proves the admin APIs real admin clients (kadm, sarama's
// ClusterAdmin, kafka-python) call: topics, partitions, records, configs
// (topic, broker, group, dynamic), quotas, internal and reserved topics,
// and the KRaft-only APIs a single node answers. Black-box: it reaches the
// broker only over TCP and through minibrokertest.
package admin

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
