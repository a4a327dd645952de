package protocol

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// conn is one client connection: a reader goroutine (this one, in serve),
// a processor and a writer.
type conn struct {
	s  *Server
	nc net.Conn // raw, or a *tls.Conn over it
	// raw is the TCP connection: closed to end the connection at once
	// (a TLS close_notify could block on a peer that does not read).
	raw net.Conn
	// listener and session: how the connection is secured, and who it
	// authenticated as (listener.go, sasl.go).
	listener  *Listener
	session   *Session
	inSetup   bool // counted in the server's set-ups in progress
	secured   bool // secure already ran (in the accept loop: the knob setupInAcceptLoop)
	setupOnce sync.Once
	authTimer *time.Timer // closes a SASL connection that does not authenticate in time

	ip     string
	ctx    context.Context // cancelled when the connection dies
	cancel context.CancelFunc
	// handlerCtx is also cancelled when the server starts draining.
	handlerCtx context.Context
	stopDrain  func() bool // unregisters the drain hook

	reqs   chan *inflight // decoded, waiting for the processor
	resps  chan *inflight // handled, waiting for the writer
	budget *pipelineBudget
	// processing counts requests queued for or in the processor.
	processing atomic.Int32

	stopOnce sync.Once
	stopped  chan struct{} // closed: read no further requests
	// steps signals the reader that the processor handled a request read
	// before authentication (inflight.stepped).
	steps chan struct{}

	// sendsFiles: responses may send record sets from files (a TCP
	// connection on Linux; see Request.SendsFiles).
	sendsFiles bool

	// softwareName and softwareVersion are what the client said it is
	// in its last ApiVersions v3+ request; loggedUnsupported: the INFO
	// line for an unsupported request was written. The reader goroutine
	// alone uses them (decode).
	softwareName, softwareVersion string
	loggedUnsupported             bool

	// mutedUntil (unix nanoseconds) is when a throttled connection
	// (Request.Throttle) may be read and served again.
	mutedUntil atomic.Int64
}

// waitMuted waits until the connection is no longer muted by a quota
// throttle, or done is closed; false when done was.
func (c *conn) waitMuted(done <-chan struct{}) bool {
	until := c.mutedUntil.Load()
	if until == 0 {
		return true
	}
	d := time.Until(time.Unix(0, until))
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// mute mutes the connection for d from now, unless already muted longer.
func (c *conn) mute(d time.Duration) {
	until := time.Now().Add(d).UnixNano()
	for {
		old := c.mutedUntil.Load()
		if old >= until || c.mutedUntil.CompareAndSwap(old, until) {
			return
		}
	}
}

type inflight struct {
	req     *Request
	resp    kmsg.Response
	start   time.Time
	noReply bool
	token   bool // holds a queued.max.requests token
	// reserved is what the request holds in the connection's budget: its
	// frame until handled, then its response until written.
	reserved int64
	// frameBytes is the request's frame size with its size field.
	frameBytes int64
	// frame is a pooled Produce frame, returned to the pool once the
	// request is handled (see readFrame).
	frame []byte
	// memory is what the frame holds of queued.max.request.bytes until
	// the request is handled (see requestMemory).
	memory int64
	// closeAfter: close the connection once the response is written
	// (a failed authentication, as Kafka).
	closeAfter bool
	// bare: the frame is a bare SASL token (after SaslHandshake v0),
	// saslToken its bytes; raw is the server's bare token, written
	// size-prefixed without a response header.
	bare           bool
	saslToken, raw []byte
	// stepped: the reader waits for the processor to have handled this
	// request before it reads the next frame (see read).
	stepped bool
}

func newConn(s *Server, raw net.Conn, ip string, l *Listener) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	hctx, hcancel := context.WithCancel(ctx)
	stopDrain := context.AfterFunc(s.drain, hcancel)
	nc := raw
	if l.usesTLS() && l.TLS != nil {
		nc = tls.Server(raw, l.TLS)
	}
	c := &conn{
		s: s, nc: nc, raw: raw, listener: l, ip: ip, ctx: ctx, cancel: cancel, handlerCtx: hctx, stopDrain: stopDrain,
		reqs:       make(chan *inflight, s.cfg.PipelineDepth),
		resps:      make(chan *inflight, s.cfg.PipelineDepth),
		budget:     newPipelineBudget(s.cfg.PipelineDepth, s.cfg.private.pipelineBytes),
		stopped:    make(chan struct{}),
		steps:      make(chan struct{}, 1),
		sendsFiles: canSendFile(nc) && !s.cfg.private.copyFileRecords,
	}
	c.session = newSession(c, l)
	return c
}

// stopReading makes the reader stop at the next frame boundary: requests
// already read are still answered (graceful shutdown).
func (c *conn) stopReading() {
	c.stopOnce.Do(func() {
		close(c.stopped)
		// Wake a reader blocked waiting for the next frame's size.
		c.raw.SetReadDeadline(time.Now())
	})
}

func (c *conn) serve() {
	defer c.finishSetup()
	if !c.secured && !c.secure() {
		c.stopDrain()
		c.cancel()
		c.raw.Close()
		return
	}
	if c.authTimer != nil {
		defer c.authTimer.Stop()
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.process() }()
	go func() { defer wg.Done(); c.write() }()
	c.read()
	close(c.reqs)
	wg.Wait()
	c.stopDrain()
	c.cancel()
	c.raw.Close()
}

// fail closes the connection after a protocol violation.
func (c *conn) fail(reason string, fields ...zap.Field) {
	c.s.metrics.ConnectionsClosedOnError.WithLabelValues(reason).Inc()
	c.s.logger.Debug("closing connection", append(fields, zap.String("reason", reason), zap.String("remote", c.raw.RemoteAddr().String()))...)
	c.cancel()
	c.raw.Close()
}

// readBufferSize is the size of a connection's read buffer, which
// batches the reads of small requests.
const readBufferSize = 64 << 10

func (c *conn) read() {
	defer func() {
		if r := recover(); r != nil {
			c.s.metrics.Panics.Inc()
			c.s.logger.Error("panic reading request", zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			c.fail("panic")
		}
	}()
	br := bufio.NewReaderSize(c.nc, readBufferSize)
	var sizeBuf [4]byte
	for {
		select {
		case <-c.stopped:
			return
		case <-c.ctx.Done():
			return
		default:
		}
		// A connection throttled by a quota is not read until the
		// throttle has passed (Kafka mutes the channel, KIP-219).
		if !c.waitMuted(c.handlerCtx.Done()) {
			return
		}
		if c.s.cfg.IdleTimeout > 0 {
			c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		}
		if n, err := io.ReadFull(br, sizeBuf[:]); err != nil {
			select {
			case <-c.stopped:
			default:
				switch {
				case n > 0: // half-open: part of a size prefix, then silence
					c.fail("short frame", zap.Error(err))
				case !errors.Is(err, io.EOF) && !isClosed(err):
					c.fail("read", zap.Error(err))
				}
			}
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		// After SaslHandshake v0 the next frames are bare SASL tokens
		// until the conversation ends; a token may be shorter than a
		// request header.
		bare := c.session.bareTokenNext()
		if (size < 8 && !bare) || size < 0 || size > c.s.cfg.MaxRequestSize {
			c.fail("size", zap.Int32("size", size))
			return
		}
		if !c.session.Authenticated() && c.listener.MaxReceiveBeforeAuth > 0 && size > c.listener.MaxReceiveBeforeAuth {
			c.fail("size before authentication", zap.Int32("size", size))
			return
		}
		// Read no further while the requests and responses this
		// connection holds are over budget (Kafka mutes the channel): a
		// client that never reads its responses stops being read, and
		// holds no queued.max.requests slot.
		if !c.budget.admit(c.ctx, c.stopped, int64(size)) {
			return
		}
		// A frame, once started, must arrive within the idle timeout: a
		// half-open connection that sent part of one is closed.
		if c.s.cfg.IdleTimeout > 0 {
			c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		}
		frame, pooled, memory, err := c.readFrame(br, size)
		if err != nil {
			if errors.Is(err, errMemoryDeadlock) {
				c.fail("request memory", zap.Error(err))
			} else if c.ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				c.fail("short frame", zap.Error(err))
			}
			return
		}
		c.s.metrics.BytesIn.Add(float64(size + 4))
		var in *inflight
		if bare {
			in = c.bareToken(frame)
		} else if in, err = c.decode(frame); err != nil {
			c.s.mem.release(memory)
			c.fail("decode", zap.Error(err))
			return
		}
		in.reserved = int64(size)
		in.frameBytes = int64(size) + 4
		in.memory = memory
		if pooled {
			in.frame = frame
			if c.s.cfg.private.reuseFrameBeforeHandle && !bare {
				in.releaseFrame()
			}
		}
		// Before authentication on a SASL listener each request is handled
		// before the next frame is read, as Kafka's SaslServerAuthenticator
		// reads one at a time: whether the next frame is a request or a
		// bare token depends on the handshake before it.
		in.stepped = c.listener.usesSASL() && !c.session.Authenticated() && !c.s.cfg.private.noPreAuthSteps
		if in.resp == nil {
			// A Fetch that may answer with more than the budget is the
			// last request read until it is answered.
			est := responseEstimate(in.req.Body)
			c.budget.grow(est)
			in.reserved += est
		}
		// queued.max.requests bounds requests waiting for a busy
		// processor, across connections (Kafka's request queue, which
		// holds requests waiting for a handler thread). A request the
		// idle processor takes at once does not wait in it, so one
		// connection's pipeline cannot hold back another's first request.
		if c.processing.Add(1) > 1 {
			select {
			case c.s.queue <- struct{}{}:
				in.token = true
				c.s.metrics.RequestQueue.Inc()
			case <-c.ctx.Done():
				c.releaseMemory(in)
				return
			}
		}
		// Never blocks: the budget admits at most PipelineDepth requests.
		select {
		case c.reqs <- in:
		case <-c.ctx.Done():
			c.release(in)
			c.releaseMemory(in)
			return
		}
		if in.stepped {
			select {
			case <-c.steps:
			case <-c.ctx.Done():
				return
			}
		}
	}
}

// produceKey is the Produce API's key.
const produceKey = 0

// releaseFrame hands a pooled frame back to the pool: the request's body,
// which aliases it, must not be read again.
func (in *inflight) releaseFrame() {
	if in.frame != nil {
		putBuffer(in.frame)
		in.frame = nil
	}
}

// releaseMemory gives back what the request's frame holds of the
// server's request memory (the frame is no longer read).
func (c *conn) releaseMemory(in *inflight) {
	c.s.mem.release(in.memory)
	in.memory = 0
}

func isClosed(err error) bool {
	var ne net.Error
	return errors.Is(err, net.ErrClosed) || (errors.As(err, &ne) && ne.Timeout())
}

// decode parses one frame into a request (see decodeRequest).
func (c *conn) decode(frame []byte) (*inflight, error) {
	req, resp, err := decodeRequest(frame, c.s.handler)
	if err != nil {
		var unsupported *unsupportedError
		if errors.As(err, &unsupported) && !c.loggedUnsupported {
			c.loggedUnsupported = true
			c.logUnsupported(unsupported)
		}
		return nil, err
	}
	if av, ok := req.Body.(*kmsg.ApiVersionsRequest); ok && av.Version >= 3 {
		c.softwareName, c.softwareVersion = av.ClientSoftwareName, av.ClientSoftwareVersion
	}
	req.Remote = c.raw.RemoteAddr()
	req.Size = int32(len(frame))
	req.Session = c.session
	req.sendsFiles = c.sendsFiles
	return &inflight{start: time.Now(), req: req, resp: resp}, nil
}

const apiVersionsKey = 18

// logUnsupported says at INFO that a request for an API or version the
// broker does not serve closes the connection (Kafka closes it too, with
// no answer the client can read), naming who sent it, so an operator can
// tell which application is too old or too new.
func (c *conn) logUnsupported(e *unsupportedError) {
	name := kmsg.NameForKey(e.key)
	if name == "" {
		name = "unknown"
	}
	c.s.logger.Info("unsupported request: closing the connection",
		zap.Int16("api_key", e.key), zap.String("api", name), zap.Int16("api_version", e.version),
		zap.String("client_id", e.clientID),
		zap.String("client_software_name", c.softwareName), zap.String("client_software_version", c.softwareVersion),
		zap.String("peer", c.raw.RemoteAddr().String()), zap.String("listener", c.listener.Name))
}

// unsupportedApiVersions answers an ApiVersions request above the served
// range as Kafka 2.4+ does (KIP-511, ApiVersionsRequest.getErrorResponse):
// UNSUPPORTED_VERSION in a v0 body listing only ApiVersions' own range, so
// the client retries at a version it can use. Listing every API instead
// made kgo (which sends ApiVersions v5) take that v0 answer as final, and
// a v0 answer has no features: it never saw transaction.version.
func unsupportedApiVersions(h Handler) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	lo, hi, _ := h.VersionRange(apiVersionsKey)
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: apiVersionsKey, MinVersion: lo, MaxVersion: hi}}
	return resp
}

// process runs requests strictly in order.
func (c *conn) process() {
	defer close(c.resps)
	for in := range c.reqs {
		c.release(in) // out of the queue: being processed
		// A request read ahead of a throttle (pipelining) is served
		// only once the throttle has passed, as Kafka, which reads it
		// only then; at once when the server drains or the connection
		// closes (the send below then drops it).
		c.waitMuted(c.handlerCtx.Done())
		if ok, reason := c.session.allows(in.req.Key); !ok {
			c.fail(reason, zap.Int16("api_key", in.req.Key))
			in.resp, in.noReply = nil, true
		} else if in.bare {
			c.bareStep(in)
		} else if in.resp == nil {
			in.resp = c.handle(in.req)
			in.noReply = in.resp == nil
			in.closeAfter = c.session.takeCloseAfter()
			if in.req.throttle > 0 && !c.s.cfg.private.noThrottleMute {
				c.mute(in.req.throttle)
			}
		}
		// The frame is no longer needed (the response does not alias
		// it); from here the request holds its response's size.
		in.req.Body = nil
		in.releaseFrame()
		c.releaseMemory(in)
		c.processing.Add(-1)
		if in.stepped {
			select {
			case c.steps <- struct{}{}:
			default: // the reader waits for one step at a time
			}
		}
		size := responseSize(in.resp)
		c.budget.grow(size - in.reserved)
		in.reserved = size
		select {
		case c.resps <- in:
		case <-c.ctx.Done():
			c.release(in)
			in.req.Release() // never written: its buffers and files go now
			for in := range c.reqs {
				c.release(in)
				c.releaseMemory(in)
			}
			return
		}
	}
}

// release gives back a request's queued.max.requests slot.
func (c *conn) release(in *inflight) {
	if in.token {
		in.token = false
		<-c.s.queue
		c.s.metrics.RequestQueue.Dec()
	}
}

// handle calls the handler, turning a panic into a closed connection.
func (c *conn) handle(req *Request) (resp kmsg.Response) {
	defer func() {
		if r := recover(); r != nil {
			c.s.metrics.Panics.Inc()
			c.s.metrics.HandlerPanics.WithLabelValues(apiName(req.Key)).Inc()
			c.s.logger.Error("panic handling request", zap.Int16("api_key", req.Key), zap.Int16("version", req.Version),
				zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			c.fail("panic")
			resp = nil
		}
	}()
	resp = c.s.handler.Handle(c.handlerCtx, req)
	if req.closeConn {
		c.fail("closed by handler")
		return nil
	}
	if resp != nil {
		resp.SetVersion(req.Version)
	}
	return resp
}

// write sends responses in order, flushing when none are waiting.
func (c *conn) write() {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var (
		buf, scratch []byte
		pieces       []piece
	)
	broken := false
	for in := range c.resps {
		if broken {
			in.req.Release() // its files' descriptors with it
			c.budget.done(in.reserved)
			continue
		}
		api := c.s.metrics.forAPI(in.req.Key)
		api.requests.Inc()
		api.bytes.Add(float64(in.frameBytes))
		api.latency.Observe(time.Since(in.start).Seconds())
		if in.noReply {
			in.req.Release() // a handler that panicked may have taken buffers or files
			c.budget.done(in.reserved)
			continue
		}
		if in.bare {
			buf = binary.BigEndian.AppendUint32(buf[:0], uint32(len(in.raw)))
			buf = append(buf, in.raw...)
			pieces = append(pieces[:0], piece{b: buf})
		} else if f, ok := in.resp.(*kmsg.FetchResponse); ok {
			files := in.req.files
			slices.SortFunc(files, func(a, b fileRecords) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.p, b.p)) })
			pieces, buf, scratch = fetchPieces(buf[:0], scratch, in.req.CorrelationID, f, files, pieces[:0])
		} else {
			buf = appendResponse(buf[:0], in.req.CorrelationID, in.resp)
			pieces = append(pieces[:0], piece{b: buf})
		}
		var err error
		n, fromFiles := 0, 0
		for _, p := range pieces {
			if p.file != nil {
				err = c.writeFile(bw, p.file)
				fromFiles += p.file.n
			} else {
				err = c.writeFrame(bw, p.b)
			}
			if err != nil {
				break
			}
			n += p.len()
		}
		clear(pieces)
		in.req.Release() // written: no piece aliases its buffers any more
		in.resp = nil
		if err != nil {
			broken = true
			c.fail("write", zap.Error(err)) // before the reader is let go
			c.budget.done(in.reserved)
			continue
		}
		c.budget.done(in.reserved)
		c.s.metrics.BytesOut.Add(float64(n))
		c.s.metrics.BytesSentFromFiles.Add(float64(fromFiles))
		if in.closeAfter {
			bw.Flush()
			broken = true
			c.fail("authentication failed")
			continue
		}
		if len(c.resps) == 0 {
			if err := bw.Flush(); err != nil {
				broken = true
				c.fail("write", zap.Error(err))
			}
		}
		buf = releaseLarge(buf)
	}
	if !broken {
		bw.Flush()
	}
}

// writeChunk is how much of a response is written under one write
// deadline: a client that reads a large response slowly but steadily is
// not cut off, one that stops reading is (Kafka closes a connection with
// no activity for connections.max.idle.ms).
const writeChunk = 1 << 20

// writeFrame writes one encoded response, each chunk within writeTimeout.
func (c *conn) writeFrame(bw *bufio.Writer, buf []byte) error {
	for len(buf) > 0 {
		n := min(len(buf), writeChunk)
		c.nc.SetWriteDeadline(time.Now().Add(writeTimeout(c.s.cfg)))
		if _, err := bw.Write(buf[:n]); err != nil {
			return err
		}
		buf = buf[n:]
	}
	return nil
}

// writeFile sends a record set from its file with sendfile(2), each chunk
// within writeTimeout, after what the write buffer holds. A file shorter
// than the record set (truncated since the read) fails the write: the
// connection closes with the frame cut short, as Kafka's FileRecords.writeTo
// refuses a truncated file.
func (c *conn) writeFile(bw *bufio.Writer, fr *fileRecords) error {
	if err := bw.Flush(); err != nil {
		return err
	}
	return sendFile(c.nc, fr.f, fr.pos, fr.n, func() {
		c.nc.SetWriteDeadline(time.Now().Add(writeTimeout(c.s.cfg)))
	})
}

// releaseLarge hands a buffer over 1 MiB to the shared pool (nil is
// returned) and keeps a smaller one for the next response: a connection
// does not pin a large buffer while idle, and a consumer's next Fetch does
// not allocate and zero a new one. The buffer must be written out.
func releaseLarge(buf []byte) []byte {
	if cap(buf) > 1<<20 {
		putBuffer(buf)
		return nil
	}
	return buf
}

// appendResponse appends a response frame (size, header, body) to buf.
// A Fetch response is mostly record bytes: buf is grown once to hold them
// all instead of doubling while kmsg copies them in.
func appendResponse(buf []byte, corr int32, resp kmsg.Response) []byte {
	if f, ok := resp.(*kmsg.FetchResponse); ok {
		need := fetchResponseSize(f)
		if len(buf) == 0 && cap(buf) < need {
			buf = getBuffer(need)
		}
		buf = slices.Grow(buf, need)
	}
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	buf = kbin.AppendInt32(buf, corr)
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		buf = append(buf, 0) // response header v1: empty tagged fields
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
	return buf
}

// writeTimeout bounds how long a client that does not read its responses
// can hold a connection's writer.
func writeTimeout(cfg Config) time.Duration {
	if cfg.IdleTimeout > 0 {
		return cfg.IdleTimeout
	}
	return 10 * time.Minute
}

func apiName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return strconv.Itoa(int(key))
}
