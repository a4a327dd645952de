package broker

// SaslHandshake, v1.
//
// Selects the SASL mechanism of the SaslAuthenticate requests that
// follow (KIP-152) on a SASL_PLAINTEXT or SASL_SSL listener, answering
// the listener's sasl.enabled.mechanisms. An unknown mechanism answers
// UNSUPPORTED_SASL_MECHANISM and the connection is closed, as Kafka's
// SaslServerAuthenticator does; a handshake on a listener without SASL, or
// a second one before authenticating, answers ILLEGAL_SASL_STATE and
// closes. A handshake after authentication starts a KIP-368
// re-authentication with the same mechanism.
//
// Deviation: v0, after which the SASL tokens travel as bare frames
// without Kafka headers, is not served; every maintained client uses v1
// with SaslAuthenticate (sarama: Net.SASL.Version = SASLHandshakeV1).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleSaslHandshake(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms, resp.ErrorCode = r.Session.Handshake(req.Mechanism)
	return resp
}
