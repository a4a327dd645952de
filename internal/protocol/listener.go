package protocol

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"go.uber.org/zap"
)

// Security protocols of a listener, by Kafka's names.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// AnonymousPrincipal is the principal of a connection that did not
// authenticate (Kafka's KafkaPrincipal.ANONYMOUS).
const AnonymousPrincipal = "User:ANONYMOUS"

// Listener is how connections accepted on one socket are secured: a named
// Kafka listener with its security protocol.
type Listener struct {
	// Name is the listener's name (PLAINTEXT, SECURE, ...), as in
	// `listeners`; handlers answer with its advertised address.
	Name string
	// Protocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	Protocol string
	// TLS is the server's TLS configuration (SSL, SASL_SSL). A client
	// certificate verified against its ClientCAs names the principal on
	// SSL listeners.
	TLS *tls.Config
	// SASL serves SaslHandshake / SaslAuthenticate (SASL_PLAINTEXT,
	// SASL_SSL).
	SASL *SASL
	// MaxReceiveBeforeAuth is sasl.server.max.receive.size: a larger frame
	// before authentication closes the connection.
	MaxReceiveBeforeAuth int32
	// ReauthAfter is connections.max.reauth.ms (KIP-368); 0: never.
	ReauthAfter time.Duration
}

func (l *Listener) usesTLS() bool  { return l.Protocol == SSL || l.Protocol == SASLSSL }
func (l *Listener) usesSASL() bool { return l.Protocol == SASLPlaintext || l.Protocol == SASLSSL }

// plaintextListener is what Serve uses: one PLAINTEXT listener.
var plaintextListener = &Listener{Name: Plaintext, Protocol: Plaintext}

// Serve accepts PLAINTEXT connections on ln until Shutdown. It takes
// ownership of ln.
func (s *Server) Serve(ln net.Listener) error { return s.ServeListener(ln, plaintextListener) }

// Default bounds of the connection set-up (TLS handshake and SASL
// authentication): how long it may take, and how many may be in progress
// at once. Kafka has neither (its handshakes are non-blocking on network
// threads, bounded by connections.max.idle.ms); minibroker bounds both so
// that stalled handshakes hold neither goroutines nor memory for long.
const (
	defaultSetupTimeout  = 10 * time.Second
	defaultMaxSetups     = 4096
	setupRejectLogPeriod = time.Minute
)

// setupTimeout and maxSetups are the effective bounds.
func (s *Server) setupTimeout() time.Duration {
	if s.cfg.SetupTimeout > 0 {
		return s.cfg.SetupTimeout
	}
	return defaultSetupTimeout
}

func (s *Server) maxSetups() int64 {
	if s.cfg.MaxSetupsInProgress > 0 {
		return int64(s.cfg.MaxSetupsInProgress)
	}
	return defaultMaxSetups
}

// beginSetup counts a connection whose TLS handshake or SASL
// authentication is in progress; false: too many are, close it.
func (s *Server) beginSetup() bool {
	if s.setups.Add(1) > s.maxSetups() {
		s.setups.Add(-1)
		return false
	}
	s.metrics.security.SetupsInProgress.Inc()
	return true
}

func (s *Server) endSetup() {
	s.setups.Add(-1)
	s.metrics.security.SetupsInProgress.Dec()
}

// secure runs the connection's set-up before it serves requests: the TLS
// handshake on SSL and SASL_SSL listeners (within the set-up timeout),
// then, on SASL listeners, a timer that closes the connection unless it
// authenticates in time. It reports whether the connection may go on.
func (c *conn) secure() bool {
	l := c.listener
	if !l.usesTLS() && !l.usesSASL() {
		return true
	}
	if !c.s.beginSetup() {
		c.s.metrics.security.SetupsRejected.Inc()
		c.fail("set-ups in progress")
		return false
	}
	c.inSetup = true
	deadline := time.Now().Add(c.s.setupTimeout())
	if tc, ok := c.nc.(*tls.Conn); ok {
		ctx, cancel := context.WithDeadline(c.ctx, deadline)
		c.raw.SetDeadline(deadline)
		err := tc.HandshakeContext(ctx)
		cancel()
		c.raw.SetDeadline(time.Time{})
		if err != nil {
			c.s.metrics.security.TLSHandshakeFailures.WithLabelValues(l.Name).Inc()
			c.s.logger.Info("TLS handshake failed", zap.String("listener", l.Name),
				zap.String("remote", c.raw.RemoteAddr().String()), zap.Error(err))
			c.finishSetup()
			c.fail("tls handshake")
			return false
		}
		if l.Protocol == SSL {
			c.session.setPrincipal(certPrincipal(tc.ConnectionState()))
		}
	}
	if !l.usesSASL() {
		c.finishSetup()
		return true
	}
	// SASL: authenticate before the deadline, or be closed.
	c.authTimer = time.AfterFunc(time.Until(deadline), func() {
		if !c.session.Authenticated() {
			c.s.metrics.security.AuthFailures.WithLabelValues(l.Name, "timeout").Inc()
			c.s.logger.Info("authentication timed out", zap.String("listener", l.Name),
				zap.String("remote", c.raw.RemoteAddr().String()))
			c.fail("authentication timeout")
		}
	})
	return true
}

// finishSetup ends the connection's set-up count, once.
func (c *conn) finishSetup() {
	c.setupOnce.Do(func() {
		if c.inSetup {
			c.s.endSetup()
		}
	})
}

// certPrincipal is an SSL connection's principal: as Kafka's default
// ssl.principal.mapping.rules, User:<the client certificate's subject
// distinguished name> (RFC 2253 order) when the client sent a verified
// certificate, else User:ANONYMOUS.
func certPrincipal(cs tls.ConnectionState) string {
	if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
		return AnonymousPrincipal
	}
	return "User:" + cs.PeerCertificates[0].Subject.String()
}
