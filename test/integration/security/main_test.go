// Package security proves authentication and authorisation: TLS and mutual
// TLS listeners, keystore reloads, SASL PLAIN and SCRAM (v0 and v1
// handshakes, re-authentication, session expiry) and ACLs on every API,
// through kgo, sarama and kafka-python.
//
// It imports internal/security/certtest for certificates and
// internal/mirror for the mirror status one ACL test waits on.
package security

import (
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"
)

func TestMain(m *testing.M) { itest.Main(m) }
