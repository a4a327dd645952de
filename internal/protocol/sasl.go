package protocol

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// SASL is a listener's SASL configuration: the mechanisms it offers and
// how a conversation in one of them starts.
type SASL struct {
	// Mechanisms are sasl.enabled.mechanisms, in order.
	Mechanisms []string
	// Start begins a server conversation in mechanism (one of Mechanisms).
	Start func(mechanism string) (SASLConversation, error)
}

// SASLConversation is the server side of one SASL exchange.
type SASLConversation interface {
	// Step takes the client's next message and returns the reply; done
	// is true once the client is authenticated. An error fails the
	// authentication: an *AuthError's message goes to the client.
	Step(msg []byte) (reply []byte, done bool, err error)
	// Principal is the authenticated principal, "User:<name>", once done.
	Principal() string
}

// AuthError is a failed authentication; Message is what the client is
// told (Kafka's wording; it never holds a secret).
type AuthError struct{ Message string }

func (e *AuthError) Error() string { return e.Message }

// SASL API keys.
const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// Session is one connection's security state: its listener, and its
// principal once authenticated. Handlers read the principal from it;
// SaslHandshake and SaslAuthenticate drive it. Its SASL state is only
// changed by the connection's processor (requests run in order).
type Session struct {
	c        *conn
	listener *Listener

	authenticated atomic.Bool
	principal     atomic.Pointer[string]

	mu         sync.Mutex // guards the fields below
	mechanism  string     // chosen by the last SaslHandshake, "" before
	conv       SASLConversation
	handshaken bool
	// bare: the tokens of the conversation come as bare size-prefixed
	// frames, not SaslAuthenticate requests (after SaslHandshake v0).
	bare       bool
	expires    time.Time // session end (connections.max.reauth.ms), zero: never
	reauth     bool      // a re-authentication is in progress
	closeAfter bool      // close once the current response is written
}

func newSession(c *conn, l *Listener) *Session {
	s := &Session{c: c, listener: l}
	if !l.usesSASL() {
		s.setPrincipal(AnonymousPrincipal)
	}
	return s
}

func (s *Session) setPrincipal(p string) {
	s.principal.Store(&p)
	s.authenticated.Store(true)
}

// Principal is the connection's principal: "User:alice", or
// User:ANONYMOUS on PLAINTEXT (and SSL without a client certificate);
// "" before a SASL connection authenticates.
func (s *Session) Principal() string {
	if s == nil {
		return AnonymousPrincipal
	}
	if p := s.principal.Load(); p != nil {
		return *p
	}
	return ""
}

// Listener is the name of the listener the connection came through.
func (s *Session) Listener() string {
	if s == nil {
		return Plaintext
	}
	return s.listener.Name
}

// Authenticated reports whether the connection may send any request.
func (s *Session) Authenticated() bool { return s == nil || s.authenticated.Load() }

// allows reports whether a request may be processed now: before
// authentication on a SASL listener only ApiVersions, SaslHandshake and
// SaslAuthenticate (as Kafka's SaslServerAuthenticator); after the session
// expired (KIP-368) only a re-authentication.
func (s *Session) allows(key int16) (ok bool, reason string) {
	if s == nil || !s.listener.usesSASL() {
		return true, ""
	}
	switch key {
	case apiVersionsKey, saslHandshakeKey, saslAuthenticateKey:
		return true, ""
	}
	if !s.authenticated.Load() {
		return false, "request before authentication"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.expires.IsZero() && time.Now().After(s.expires) && !s.reauth {
		return false, "session expired"
	}
	return true, ""
}

// Handshake serves SaslHandshake: it selects mechanism for the
// SaslAuthenticate requests that follow or, after version 0, for the bare
// tokens that follow (pre-KIP-152 framing, as Kafka's
// SaslServerAuthenticator). It answers the enabled mechanisms and an
// error code (0: none).
func (s *Session) Handshake(mechanism string, version int16) (enabled []string, code int16) {
	if s == nil || s.listener.SASL == nil {
		return nil, kerr.IllegalSaslState.Code
	}
	enabled = s.listener.SASL.Mechanisms
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handshaken && !s.authenticated.Load() {
		// A second handshake before authenticating.
		s.closeAfter = true
		return enabled, kerr.IllegalSaslState.Code
	}
	if !slices.Contains(enabled, mechanism) {
		// Kafka answers, then closes (UnsupportedSaslMechanismException).
		s.closeAfter = true
		s.failedLocked(mechanism, "unsupported mechanism")
		return enabled, kerr.UnsupportedSaslMechanism.Code
	}
	if s.authenticated.Load() {
		// KIP-368 re-authentication: the same mechanism as before, with
		// SaslAuthenticate (v1+; bare tokens cannot follow requests that
		// may be pipelined after the handshake).
		if version == 0 {
			s.closeAfter = true
			s.failedLocked(mechanism, "re-authentication with SaslHandshake v0")
			return enabled, kerr.IllegalSaslState.Code
		}
		if mechanism != s.mechanism {
			s.closeAfter = true
			s.failedLocked(mechanism, "re-authentication changed mechanism")
			return enabled, kerr.IllegalSaslState.Code
		}
		s.reauth = true
	}
	conv, err := s.listener.SASL.Start(mechanism)
	if err != nil {
		s.closeAfter = true
		s.failedLocked(mechanism, err.Error())
		return enabled, kerr.UnsupportedSaslMechanism.Code
	}
	s.mechanism, s.conv, s.handshaken, s.bare = mechanism, conv, true, version == 0
	return enabled, 0
}

// bareTokenNext reports whether the next frame is a bare SASL token (the
// conversation a SaslHandshake v0 began is not over).
func (s *Session) bareTokenNext() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bare && s.conv != nil && !s.closeAfter
}

// Authenticate serves SaslAuthenticate: one step of the conversation the
// handshake began. On success it returns the reply and, once done, the
// session lifetime in ms (connections.max.reauth.ms; 0: none). On failure
// it returns Kafka's error code and message, and the connection closes
// after the response.
func (s *Session) Authenticate(msg []byte) (reply []byte, lifetimeMs int64, code int16, message string) {
	if s == nil {
		return nil, 0, kerr.IllegalSaslState.Code, "SASL is not enabled on this listener"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conv == nil {
		if s.listener.SASL == nil || s.authenticated.Load() {
			// Kafka's KafkaApis answers this on a listener without SASL, or
			// after authentication, and keeps the connection open.
			return nil, 0, kerr.IllegalSaslState.Code, "SaslAuthenticate request received after successful authentication"
		}
		// Kafka's SaslServerAuthenticator: IllegalSaslStateException, then close.
		s.closeAfter = true
		return nil, 0, kerr.IllegalSaslState.Code, "Unexpected SaslAuthenticate request before SaslHandshake"
	}
	phase := "authentication"
	if s.reauth {
		phase = "re-authentication"
	}
	reply, done, err := s.conv.Step(msg)
	if err != nil {
		s.closeAfter = true
		s.conv, s.bare = nil, false
		s.failedLocked(s.mechanism, err.Error())
		if ae, ok := err.(*AuthError); ok {
			return nil, 0, kerr.SaslAuthenticationFailed.Code, ae.Message
		}
		return nil, 0, kerr.SaslAuthenticationFailed.Code,
			fmt.Sprintf("Authentication failed during %s due to invalid credentials with SASL mechanism %s", phase, s.mechanism)
	}
	if !done {
		return reply, 0, 0, ""
	}
	principal := s.conv.Principal()
	s.conv, s.bare = nil, false
	if s.reauth {
		s.reauth = false
		if old := s.Principal(); old != principal {
			// KIP-368: re-authenticating as someone else is refused.
			s.closeAfter = true
			s.failedLocked(s.mechanism, "re-authentication changed principal")
			return nil, 0, kerr.SaslAuthenticationFailed.Code,
				fmt.Sprintf("Cannot change principals during re-authentication from %s to %s", old, principal)
		}
	}
	if d := s.listener.ReauthAfter; d > 0 {
		s.expires = time.Now().Add(d)
		lifetimeMs = d.Milliseconds()
	}
	first := !s.authenticated.Load()
	s.setPrincipal(principal)
	s.c.s.metrics.security.AuthSuccesses.WithLabelValues(s.listener.Name, s.mechanism).Inc()
	if first {
		s.c.finishSetup()
		if s.c.authTimer != nil {
			s.c.authTimer.Stop()
		}
	}
	s.c.s.logger.Debug("authenticated", zap.String("listener", s.listener.Name), zap.String("mechanism", s.mechanism),
		zap.String("principal", principal), zap.String("remote", s.c.raw.RemoteAddr().String()), zap.Bool("reauthentication", !first))
	return reply, lifetimeMs, 0, ""
}

// failedLocked counts and logs a failed authentication: the peer address,
// listener, mechanism and reason, never a credential.
func (s *Session) failedLocked(mechanism, reason string) {
	s.c.s.metrics.security.AuthFailures.WithLabelValues(s.listener.Name, metricMechanism(mechanism)).Inc()
	s.c.s.logger.Info("failed authentication", zap.String("listener", s.listener.Name),
		zap.String("remote", s.c.raw.RemoteAddr().String()), zap.String("mechanism", mechanism), zap.String("reason", reason))
}

// metricMechanism bounds the label's values: a client's unknown
// mechanism name is "other".
func metricMechanism(m string) string {
	switch strings.ToUpper(m) {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		return m
	}
	return "other"
}

// takeCloseAfter reports, once, that the connection must close after the
// response being written (a failed authentication).
func (s *Session) takeCloseAfter() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.closeAfter
	s.closeAfter = false
	return v
}

// bareToken makes the inflight of a bare SASL token (after SaslHandshake
// v0): it is counted as a SaslAuthenticate, and answered by a bare token.
func (c *conn) bareToken(frame []byte) *inflight {
	req := &Request{Key: saslAuthenticateKey, Remote: c.raw.RemoteAddr(), Session: c.session}
	return &inflight{start: time.Now(), req: req, bare: true, saslToken: frame}
}

// bareStep runs one step of the conversation on a bare token. A failure
// closes the connection without an answer: the pre-KIP-152 framing has no
// room for an error (Kafka's SaslServerAuthenticator closes too).
func (c *conn) bareStep(in *inflight) {
	reply, _, code, _ := c.session.Authenticate(in.saslToken)
	in.saslToken = nil
	if code != 0 {
		c.session.takeCloseAfter()
		c.fail("authentication failed")
		in.noReply = true
		return
	}
	in.raw = reply
}

// SecurityProtocol is the connection's listener's security protocol
// (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL).
func (s *Session) SecurityProtocol() string {
	if s == nil {
		return Plaintext
	}
	return s.listener.Protocol
}
