// Package hostile proves the broker survives adversaries at the socket:
// malformed and mutated frames for every API and version, hostile TLS and
// SASL handshakes, connection and quota limits, slow readers, and faults
// injected into requests (kgo's retries against them).
//
// It imports internal/apisweep, the generator of every request of every
// advertised version the mutation tests walk, and
// internal/security/certtest for TLS certificates.
package hostile

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
