package broker

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/config"
)

func newHTTPTestBroker(t *testing.T, lim HTTPLimits) *Broker {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
	b, err := New(Options{Config: cfg, HTTP: lim})
	if err != nil {
		t.Fatal(err)
	}
	b.Serve()
	t.Cleanup(func() { closeBroker(t, b) })
	return b
}

// closedWithin reports whether the server closes c within d (EOF or a
// reset; any response bytes before it are read and ignored).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
			return false
		}
		return true // io.EOF, ECONNRESET
	}
}

// dialStalledBody sends a request's headers promising a body, a byte of
// it, and nothing more.
func dialStalledBody(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "POST /v1/mirrors HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	return c
}

// dialIdleKeepAlive makes one request and keeps the connection open.
func dialIdleKeepAlive(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("healthz: %d close=%v", resp.StatusCode, resp.Close)
	}
	return c
}

// A stalled request body is closed within ReadTimeout, an idle
// keep-alive within IdleTimeout, and a connection past MaxConnections at
// once. Negative control: with ReadHeaderTimeout alone (the server as it
// was), none of them is closed.
func TestHTTPSlowClientsClosed(t *testing.T) {
	const timeout = 400 * time.Millisecond
	lim := HTTPLimits{ReadHeaderTimeout: timeout, ReadTimeout: timeout, WriteTimeout: 5 * time.Second,
		IdleTimeout: timeout, MaxConnections: 3}
	// The slack is for a loaded machine; closing takes ~timeout.
	const slack = 5 * time.Second
	for _, tc := range []struct {
		name   string
		closes bool
	}{{"limits", true}, {"header-timeout-only", false}} {
		t.Run(tc.name, func(t *testing.T) {
			l := lim
			l.headerTimeoutOnly = !tc.closes
			b := newHTTPTestBroker(t, l)
			addr := b.HTTPAddr()
			start := time.Now()
			stalled := dialStalledBody(t, addr)
			idle := dialIdleKeepAlive(t, addr)
			third := dialIdleKeepAlive(t, addr)
			wait := timeout + slack
			if !tc.closes {
				wait = 3 * timeout // long enough to see them stay open
			}
			// The cap: a fourth connection while three are open.
			fourth, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer fourth.Close()
			if got := closedWithin(fourth, timeout/2); got != tc.closes {
				t.Errorf("connection past the cap closed at once = %v, want %v", got, tc.closes)
			}
			if got := closedWithin(stalled, wait); got != tc.closes {
				t.Errorf("stalled body closed = %v, want %v", got, tc.closes)
			}
			if got := closedWithin(idle, wait); got != tc.closes {
				t.Errorf("idle keep-alive closed = %v, want %v", got, tc.closes)
			}
			third.Close()
			t.Logf("%s: checked in %v", tc.name, time.Since(start).Round(time.Millisecond))
			if tc.closes {
				// Closed connections free the cap: a new client is served.
				c := dialIdleKeepAlive(t, addr)
				c.Close()
			}
		})
	}
}

// queued.max.request.bytes below what the largest request needs while its
// buffer grows is refused at start-up, naming the setting and the rule.
func TestQueuedMaxRequestBytesTooSmallRefused(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", ""
	if err := cfg.Set("queued.max.request.bytes", "104857600"); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "queued.max.request.bytes=104857600") || !strings.Contains(err.Error(), "at least") {
		t.Fatalf("New = %v, want a refusal naming queued.max.request.bytes", err)
	}
	cfg.Set("queued.max.request.bytes", "-1")
	b, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	closeBroker(t, b)
}
