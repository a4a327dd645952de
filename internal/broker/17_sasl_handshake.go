package broker

// SaslHandshake, v0–v1.
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
// Deviation: after a v0 handshake Kafka reads the SASL tokens as bare
// frames without Kafka headers; minibroker expects them in
// SaslAuthenticate requests, as after v1. v0 is advertised because
// librdkafka before 2.x looks for it before it uses SASL at all, and then
// uses v1 with SaslAuthenticate. A client that sends bare tokens (Kafka
// clients before 1.0, sarama with Net.SASL.Version = SASLHandshakeV0) is
// disconnected: its token does not decode as a request.

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
