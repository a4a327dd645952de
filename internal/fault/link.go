package fault

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// linkState is what the link faults of one mirror say now.
type linkState struct {
	paused, unreachable bool
	rate                int64 // bytes/s; 0: unlimited
	changed             <-chan struct{}
}

// link returns a mirror's link state: the faults naming it or every
// mirror. The slowest throttle wins.
func (r *Registry) link(mirror string) linkState {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := linkState{changed: r.changed}
	for _, e := range r.faults {
		if !e.active || !e.spec.Kind.IsLink() || (e.spec.Mirror != "" && e.spec.Mirror != mirror) {
			continue
		}
		switch e.spec.Kind {
		case MirrorPause:
			st.paused = true
		case MirrorUnreachable:
			st.unreachable = true
		case MirrorThrottle:
			if st.rate == 0 || e.spec.BytesPerSecond < st.rate {
				st.rate = e.spec.BytesPerSecond
			}
		}
	}
	return st
}

// errUnreachable is what a mirror sees of a source made unreachable.
var errUnreachable = errors.New("source unreachable (fault injected)")

// SourceDialer returns the dial function of a mirror's connections to its
// source: with no link fault set it dials directly; the connections it
// returns stall while the link is paused, are read no faster than a
// throttle allows, and fail (closed) while the source is unreachable.
// A nil registry returns nil (dial directly).
func (r *Registry) SourceDialer(mirror string) func(ctx context.Context, network, host string) (net.Conn, error) {
	if r == nil {
		return nil
	}
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		for {
			st := r.link(mirror)
			if st.unreachable {
				return nil, &net.OpError{Op: "dial", Net: network, Err: errUnreachable}
			}
			if !st.paused {
				break
			}
			select {
			case <-st.changed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, host)
		if err != nil {
			return nil, err
		}
		return &linkConn{Conn: nc, r: r, mirror: mirror, closed: make(chan struct{})}, nil
	}
}

// linkConn is a source connection under link faults. It keeps its
// deadlines so that a stalled read or write times out as the client
// asked, as it would on a stalled network.
type linkConn struct {
	net.Conn
	r      *Registry
	mirror string

	closeOnce sync.Once
	closed    chan struct{}

	mu                      sync.Mutex // guards the deadlines
	readDeadline, writeDead time.Time
}

func (c *linkConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func (c *linkConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline, c.writeDead = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *linkConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.readDeadline = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *linkConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeDead = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// await returns when the link lets op through: at once when no fault
// holds it, after a pause is cleared, or with an error when the source is
// unreachable (the connection is closed), the connection closes, or the
// deadline passes while paused.
func (c *linkConn) await(op string, write bool) (linkState, error) {
	for {
		st := c.r.link(c.mirror)
		if st.unreachable {
			c.Close()
			return st, &net.OpError{Op: op, Net: "tcp", Addr: c.RemoteAddr(), Err: errUnreachable}
		}
		if !st.paused {
			return st, nil
		}
		c.mu.Lock()
		dl := c.readDeadline
		if write {
			dl = c.writeDead
		}
		c.mu.Unlock()
		var timeout <-chan time.Time
		var timer *time.Timer
		if !dl.IsZero() {
			timer = time.NewTimer(time.Until(dl))
			timeout = timer.C
		}
		var err error
		select {
		case <-st.changed:
		case <-c.closed:
			err = net.ErrClosed
		case <-timeout:
			err = &net.OpError{Op: op, Net: "tcp", Addr: c.RemoteAddr(), Err: os.ErrDeadlineExceeded}
		}
		if timer != nil {
			timer.Stop()
		}
		if err != nil {
			return st, err
		}
	}
}

func (c *linkConn) Read(p []byte) (int, error) {
	st, err := c.await("read", false)
	if err != nil {
		return 0, err
	}
	if st.rate > 0 {
		// At most a tenth of a second's worth at a time, so a throttle
		// paces the bytes instead of letting a burst through.
		p = p[:min(int64(len(p)), max(st.rate/10, 1))]
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		// A fault set while the read waited for bytes applies to them
		// as if they arrived now: held while paused, lost when the
		// source is unreachable, paced by a throttle.
		now, ferr := c.await("read", false)
		if ferr != nil {
			return 0, ferr
		}
		if now.rate > 0 {
			c.throttle(n, now)
		}
	}
	return n, err
}

func (c *linkConn) Write(p []byte) (int, error) {
	if _, err := c.await("write", true); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// throttle sleeps until n more bytes fit the mirror's rate: every
// connection of a mirror shares one schedule. A change of the faults
// ends the wait early (a cleared throttle stops slowing at once).
func (c *linkConn) throttle(n int, st linkState) {
	r := c.r
	r.mu.Lock()
	now := time.Now()
	next := r.linkNext[c.mirror]
	if next.Before(now) {
		next = now
	}
	next = next.Add(time.Duration(float64(n) / float64(st.rate) * float64(time.Second)))
	r.linkNext[c.mirror] = next
	r.mu.Unlock()
	wait := time.Until(next)
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-st.changed:
	case <-c.closed:
	}
}
