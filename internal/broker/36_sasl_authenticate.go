package broker

// SaslAuthenticate, v0–v2.
//
// One step of the SASL exchange the handshake began (KIP-152): PLAIN in
// one step, SCRAM-SHA-256/512 in two (RFC 5802, xdg-go/scram's server).
// A refusal answers SASL_AUTHENTICATION_FAILED with Kafka's message
// ("Authentication failed: Invalid username or password" for PLAIN,
// "Authentication failed during authentication due to invalid credentials
// with SASL mechanism SCRAM-SHA-512" for SCRAM) and the connection is
// closed once it is written. v1+ carries SessionLifetimeMs: the
// listener's connections.max.reauth.ms (KIP-368), after which a client
// that has not re-authenticated is disconnected at its next request.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleSaslAuthenticate(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	reply, lifetime, code, msg := r.Session.Authenticate(req.SASLAuthBytes)
	resp.SASLAuthBytes, resp.ErrorCode = reply, code
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	if req.Version >= 1 {
		resp.SessionLifetimeMillis = lifetime
	}
	return resp
}
