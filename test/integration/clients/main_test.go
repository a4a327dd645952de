// Package clients proves that each client library minibroker supports
// (kgo, sarama, kafka-go, confluent-kafka-go and kcat, at several
// protocol versions) produces, fetches, commits and administers through
// it, and holds the compatibility matrix docs/COMPATIBILITY.md prints
// (TestCompatMatrix).
//
// It imports three internal packages where no public form exists:
// internal/batch for the codec numbers and control-record decoding the
// matrix checks stored batches with, internal/config and internal/broker
// for the proxied broker the client-version tests start (its advertised
// address is the recording proxy's; itest.StartBroker), and
// internal/security/certtest for TLS certificates.
package clients

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
