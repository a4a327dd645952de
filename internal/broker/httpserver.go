package broker

import (
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// HTTPLimits bound what slow or idle HTTP clients may hold. The HTTP
// listener takes file descriptors from the same budget as the Kafka
// listener, so a client that opens connections and never finishes a
// request, or keeps idle keep-alives open, must not hold them for long.
// Zero fields take the defaults (DefaultHTTPLimits).
type HTTPLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the
	// end of its response; it is long because a mirror's stop (a
	// failover) answers once the barrier is written.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request for
	// this long.
	IdleTimeout time.Duration
	// MaxConnections is how many HTTP connections may be open at once;
	// past it a new connection is accepted and closed at once.
	MaxConnections int

	// headerTimeoutOnly serves with ReadHeaderTimeout alone and no
	// connection cap (no bound on slow clients): the seam for the negative
	// control in TestHTTPSlowClientsClosed.
	headerTimeoutOnly bool
}

// DefaultHTTPLimits are the limits of the HTTP listener unless Options
// sets others.
func DefaultHTTPLimits() HTTPLimits {
	return HTTPLimits{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute,
		IdleTimeout:       60 * time.Second,
		MaxConnections:    128,
	}
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	d := DefaultHTTPLimits()
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = d.ReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = d.WriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = d.MaxConnections
	}
	return l
}

// newHTTPServer returns the server for /metrics, /healthz and the admin
// API with l's timeouts.
func (b *Broker) newHTTPServer(l HTTPLimits) *http.Server {
	if l.headerTimeoutOnly {
		return &http.Server{Handler: b.httpHandler(), ReadHeaderTimeout: l.ReadHeaderTimeout}
	}
	return &http.Server{
		Handler:           b.httpHandler(),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		ErrorLog:          zap.NewStdLog(b.logger.Named("http")),
	}
}

// capListener closes a connection accepted while max are open. Unlike
// the Kafka listener (which holds one past max.connections, as Kafka's
// acceptor does), it does not wait: a full HTTP listener answers a new
// client with a closed connection rather than a hang.
type capListener struct {
	net.Listener
	max      int
	rejected func()

	mu   sync.Mutex // guards open
	open int
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.open >= l.max {
			l.mu.Unlock()
			c.Close()
			if l.rejected != nil {
				l.rejected()
			}
			continue
		}
		l.open++
		l.mu.Unlock()
		return &cappedConn{Conn: c, l: l}, nil
	}
}

type cappedConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}
