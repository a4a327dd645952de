package fault

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoPair dials a listener through the registry's dialer for mirror m
// and returns the client side and the server side.
func echoPair(t *testing.T, r *Registry, m string) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := r.SourceDialer(m)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// A paused link holds bytes already sent until it is resumed, and a read
// waiting on it times out at its deadline, as on a stalled network.
func TestLinkPauseHoldsBytes(t *testing.T) {
	r := NewRegistry(nil)
	c, s := echoPair(t, r, "m")
	st, _ := r.Set(Spec{Kind: MirrorPause, Mirror: "m"})
	s.Write([]byte("hello"))
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	buf := make([]byte, 5)
	if n, err := c.Read(buf); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("paused read: %d %v, want a deadline error", n, err)
	}
	c.SetReadDeadline(time.Time{})
	done := make(chan error, 1)
	go func() { _, err := io.ReadFull(c, buf); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("read through a paused link: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	r.Clear(st.ID)
	if err := <-done; err != nil || string(buf) != "hello" {
		t.Fatalf("after resume: %q %v", buf, err)
	}
	// A pause on another mirror does not touch this one.
	r.Set(Spec{Kind: MirrorPause, Mirror: "other"})
	s.Write([]byte("x"))
	if _, err := c.Read(buf[:1]); err != nil {
		t.Fatal(err)
	}
}

// An unreachable source cuts live connections and refuses new ones.
func TestLinkUnreachable(t *testing.T) {
	r := NewRegistry(nil)
	c, _ := echoPair(t, r, "m")
	st, _ := r.Set(Spec{Kind: MirrorUnreachable}) // every mirror
	if _, err := c.Write([]byte("x")); !errors.Is(err, errUnreachable) {
		t.Fatalf("write to an unreachable source: %v", err)
	}
	if _, err := r.SourceDialer("m")(context.Background(), "tcp", "127.0.0.1:1"); !errors.Is(err, errUnreachable) {
		t.Fatalf("dial: %v", err)
	}
	r.Clear(st.ID)
	echoPair(t, r, "m") // reachable again
}

// A throttle paces reads: 64 KiB at 256 KiB/s take about 250 ms (a lower
// bound is checked; an unthrottled read takes well under it).
func TestLinkThrottle(t *testing.T) {
	r := NewRegistry(nil)
	c, s := echoPair(t, r, "m")
	r.Set(Spec{Kind: MirrorThrottle, Mirror: "m", BytesPerSecond: 256 << 10})
	go s.Write(make([]byte, 64<<10))
	start := time.Now()
	if _, err := io.ReadFull(c, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("64 KiB at 256 KiB/s in %v", d)
	}
	r.ClearAll()
	go s.Write(make([]byte, 64<<10))
	start = time.Now()
	if _, err := io.ReadFull(c, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	t.Logf("unthrottled: %v", time.Since(start))
}
