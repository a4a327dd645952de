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
// After a v0 handshake the client sends the SASL tokens as bare
// size-prefixed frames, without Kafka headers, and gets the server's
// tokens back the same way (the pre-KIP-152 framing Kafka's
// SaslServerAuthenticator still serves: Kafka clients before 1.0, sarama
// with Net.SASL.Version = SASLHandshakeV0); a failed token closes the
// connection without an answer, as Kafka. A re-authentication (KIP-368)
// must use v1: v0 then answers ILLEGAL_SASL_STATE and closes.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleSaslHandshake(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms, resp.ErrorCode = r.Session.Handshake(req.Mechanism, req.Version)
	return resp
}
