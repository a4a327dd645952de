// Package protocol is minibroker's Kafka wire front end: it accepts TCP
// connections, reads size-prefixed frames, decodes request headers and
// bodies with kmsg, hands typed requests to a Handler, and writes typed
// responses back in request order on each connection.
//
// It knows nothing of topics or partitions. Per connection, a reader
// decodes requests ahead (pipelining) into a small queue, one processor
// runs them strictly in order, and a writer sends responses; so a client's
// responses always come back in the order it sent the requests, as Kafka
// guarantees. Those three goroutines are all a connection ever has.
//
// Limits, as Kafka's socket server has them: socket.request.max.bytes per
// frame; max.connections (at the limit, the accept loop holds the next
// connection until one closes); max.connections.per.ip and its overrides
// (a connection over them is closed at once); connections.max.idle.ms for
// idle and half-open connections and for a write that makes no progress;
// queued.max.requests for requests waiting behind a busy processor across
// connections. Where Kafka mutes a connection until its one request is
// answered, minibroker reads ahead within a per-connection budget (see
// defaultPipelineBytes), so a client that never reads its responses holds
// one response at most and stops being read.
package protocol

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Config holds the listener's limits, named after Kafka's settings.
type Config struct {
	// MaxRequestSize is socket.request.max.bytes: a larger frame closes the
	// connection before anything is allocated for it.
	MaxRequestSize int32
	// MaxConnections is max.connections (0 = unlimited). As Kafka's
	// acceptor (ConnectionQuotas.waitForConnectionSlot), a connection past
	// it is accepted and held, unread, until another closes.
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip (0 = unlimited;
	// NoConnections = none, except from the overrides' addresses, which
	// is what Kafka's max.connections.per.ip=0 means).
	MaxConnectionsPerIP int
	// MaxConnectionsPerIPOverrides is max.connections.per.ip.overrides:
	// per client IP (net.IP.String form), a limit that replaces
	// MaxConnectionsPerIP.
	MaxConnectionsPerIPOverrides map[string]int
	// IdleTimeout is connections.max.idle.ms.
	IdleTimeout time.Duration
	// QueuedMaxRequests is queued.max.requests: decoded requests waiting
	// for a busy processor, across all connections (a request its idle
	// processor takes at once does not wait in the queue).
	QueuedMaxRequests int
	// PipelineDepth is how many requests one connection may have read
	// and not yet answered.
	PipelineDepth int
	// QueuedMaxRequestBytes is queued.max.request.bytes: the bytes of
	// request frames read, in part or in full, and not yet handled,
	// across connections (0: defaultQueuedMaxRequestBytes; negative:
	// unbounded, Kafka's default). Past it, readers stop reading their
	// sockets until memory is freed; it must be at least
	// MinQueuedMaxRequestBytes(MaxRequestSize) or larger requests are
	// never read.
	QueuedMaxRequestBytes int64

	// ConnectionThrottle, when set, records a new connection from ip
	// against its connection_creation_rate quota (KIP-612) and returns how
	// long to hold it: a connection over the quota is held that long,
	// unread, then closed, as Kafka's acceptor closes a throttled socket
	// after the throttle (DelayedCloseSocket).
	ConnectionThrottle func(ip string) time.Duration

	// SetupTimeout bounds a connection's TLS handshake and SASL
	// authentication together (0: defaultSetupTimeout).
	SetupTimeout time.Duration
	// MaxSetupsInProgress bounds the connections in their TLS handshake
	// or SASL authentication at once; past it, a new one is closed at
	// once (0: defaultMaxSetups).
	MaxSetupsInProgress int

	// private are the test seams (knobs.go): unexported, so no config
	// file, flag or API sets them; the zero value is production. Only
	// this package's tests set them.
	private knobs
}

// NoConnections as MaxConnectionsPerIP admits no client whose address has
// no override.
const NoConnections = -1

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		MaxRequestSize:    100 << 20,
		IdleTimeout:       10 * time.Minute,
		QueuedMaxRequests: 500,
		PipelineDepth:     8,
	}
}

// Server accepts Kafka connections and serves them with a Handler.
type Server struct {
	cfg     Config
	handler Handler
	logger  *zap.Logger
	metrics *Metrics
	queue   chan struct{} // queued.max.requests tokens
	mem     *requestMemory

	ctx    context.Context // cancelled at hard stop
	cancel context.CancelFunc
	// drain is cancelled when Shutdown starts: handlers waiting (Fetch long
	// polls) answer at once with what they have.
	drain       context.Context
	cancelDrain context.CancelFunc

	mu        sync.Mutex // guards the fields below
	listeners []net.Listener
	conns     map[*conn]struct{}
	perIP     map[string]int
	delayed   map[net.Conn]*time.Timer // connections throttled, to be closed
	closed    bool
	slotFreed chan struct{}  // closed and replaced when a connection ends
	wg        sync.WaitGroup // accept loops and connections

	setups atomic.Int64 // connections in their TLS handshake or SASL authentication
}

// NewServer returns a server; call Serve with a listener.
func NewServer(cfg Config, h Handler, logger *zap.Logger, metrics *Metrics) *Server {
	if logger == nil {
		logger = zap.NewNop()
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	if cfg.MaxRequestSize <= 0 {
		cfg.MaxRequestSize = DefaultConfig().MaxRequestSize
	}
	if cfg.QueuedMaxRequests <= 0 {
		cfg.QueuedMaxRequests = DefaultConfig().QueuedMaxRequests
	}
	if cfg.PipelineDepth <= 0 {
		cfg.PipelineDepth = DefaultConfig().PipelineDepth
	}
	if cfg.private.pipelineBytes == 0 {
		cfg.private.pipelineBytes = defaultPipelineBytes
	}
	if cfg.QueuedMaxRequestBytes == 0 {
		cfg.QueuedMaxRequestBytes = max(defaultQueuedMaxRequestBytes, MinQueuedMaxRequestBytes(cfg.MaxRequestSize))
	}
	metrics.RequestMemoryLimit.Set(float64(max(cfg.QueuedMaxRequestBytes, -1)))
	ctx, cancel := context.WithCancel(context.Background())
	drain, cancelDrain := context.WithCancel(ctx)
	return &Server{
		drain: drain, cancelDrain: cancelDrain,
		cfg: cfg, handler: h, logger: logger, metrics: metrics,
		queue: make(chan struct{}, cfg.QueuedMaxRequests),
		mem:   newRequestMemory(cfg.QueuedMaxRequestBytes, metrics.RequestMemory),
		ctx:   ctx, cancel: cancel,
		conns: make(map[*conn]struct{}), perIP: make(map[string]int), delayed: map[net.Conn]*time.Timer{}, slotFreed: make(chan struct{}),
	}
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("protocol: server closed")

// ServeListener accepts connections on ln until Shutdown, securing them as
// l says. It takes ownership of ln.
func (s *Server) ServeListener(ln net.Listener, l *Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners = append(s.listeners, ln)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	// A failing accept (EMFILE when the process is out of descriptors:
	// the connection stays in the backlog and the listener stays ready)
	// is retried with a backoff doubling to a second, as net/http does;
	// it is logged once, then once a minute while it lasts, not on every
	// attempt.
	var (
		backoff  time.Duration
		failures int
		loggedAt time.Time
	)
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			failures++
			if time.Since(loggedAt) >= acceptLogInterval {
				s.logger.Warn("accept failed", zap.Error(err), zap.Int("failures", failures))
				loggedAt = time.Now()
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(backoff):
				continue
			case <-s.ctx.Done():
				return ErrServerClosed
			}
		}
		if failures > 0 {
			s.logger.Info("accepting again", zap.Int("failures", failures))
			failures, loggedAt = 0, time.Time{}
		}
		backoff = 0
		s.admit(nc, l)
	}
}

// acceptLogInterval is how often a lasting accept failure is logged.
const acceptLogInterval = time.Minute

// admit applies the connection limits and starts serving nc, as Kafka's
// ConnectionQuotas.inc: first wait for a max.connections slot (the accept
// loop blocks; later connections wait in the listen backlog), then a
// connection over its address's limit is closed at once, before anything
// is read from it (TooManyConnectionsException).
func (s *Server) admit(nc net.Conn, l *Listener) {
	ip := remoteIP(nc)
	s.mu.Lock()
	for !s.closed && s.cfg.MaxConnections > 0 && len(s.conns) >= s.cfg.MaxConnections {
		freed := s.slotFreed
		s.mu.Unlock()
		select {
		case <-freed:
		case <-s.ctx.Done():
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			break
		}
	}
	if s.closed || s.ctx.Err() != nil {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if s.overIPLimitLocked(ip) {
		s.mu.Unlock()
		s.metrics.ConnectionsRejected.Inc()
		s.logger.Debug("connection rejected", zap.String("remote", nc.RemoteAddr().String()))
		nc.Close()
		return
	}
	if s.cfg.ConnectionThrottle != nil {
		if d := s.cfg.ConnectionThrottle(ip); d > 0 {
			s.metrics.ConnectionsThrottled.Inc()
			s.logger.Debug("connection throttled", zap.String("remote", nc.RemoteAddr().String()), zap.Duration("throttle", d))
			s.delayed[nc] = time.AfterFunc(d, func() {
				s.mu.Lock()
				delete(s.delayed, nc)
				s.mu.Unlock()
				nc.Close()
			})
			s.mu.Unlock()
			return
		}
	}
	c := newConn(s, nc, ip, l)
	s.conns[c] = struct{}{}
	s.perIP[ip]++
	s.wg.Add(1)
	s.mu.Unlock()
	s.metrics.Connections.Inc()
	s.metrics.ConnectionsTotal.Inc()
	if s.cfg.private.setupInAcceptLoop {
		c.secure()
		c.secured = true
	}
	go func() {
		defer s.wg.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		if s.perIP[ip]--; s.perIP[ip] <= 0 {
			delete(s.perIP, ip)
		}
		close(s.slotFreed)
		s.slotFreed = make(chan struct{})
		s.mu.Unlock()
		s.metrics.Connections.Dec()
	}()
}

// overIPLimitLocked reports whether ip already has as many connections
// as its limit: its override, else max.connections.per.ip.
func (s *Server) overIPLimitLocked(ip string) bool {
	limit, ok := s.cfg.MaxConnectionsPerIPOverrides[ip]
	if !ok {
		limit = s.cfg.MaxConnectionsPerIP
	}
	switch {
	case limit == 0:
		return false
	case limit < 0:
		return true
	}
	return s.perIP[ip] >= limit
}

func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// Shutdown stops accepting, lets in-flight requests finish and their
// responses be written (until ctx is done), then closes every connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	close(s.slotFreed) // an accept loop waiting for a slot gives up
	s.slotFreed = make(chan struct{})
	for _, ln := range s.listeners {
		ln.Close()
	}
	for nc, t := range s.delayed {
		t.Stop()
		nc.Close()
		delete(s.delayed, nc)
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.cancelDrain()
	for _, c := range conns {
		c.stopReading()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	s.cancel() // wake long polls and anything still blocked
	s.mu.Lock()
	for c := range s.conns {
		c.raw.Close()
	}
	s.mu.Unlock()
	<-done
	return nil
}

// Context is cancelled when the server is shutting down for good.
func (s *Server) Context() context.Context { return s.ctx }
