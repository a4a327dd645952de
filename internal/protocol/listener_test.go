package protocol

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/minibroker/minibroker/internal/security/certtest"
)

// serveTLS runs a Server with one SSL listener.
func serveTLS(t *testing.T, cfg Config) (*Server, *Metrics, string, *certtest.CA) {
	t.Helper()
	ca := certtest.NewCA(t, "ca")
	cert := ca.Server(t, "broker").TLSCertificate(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(nil)
	s := NewServer(cfg, &testHandler{}, nil, m)
	l := &Listener{Name: "SSL", Protocol: SSL, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}}
	done := make(chan struct{})
	go func() { s.ServeListener(ln, l); close(done) }()
	t.Cleanup(func() {
		s.Shutdown(context.Background())
		<-done
	})
	return s, m, ln.Addr().String(), ca
}

// stall opens a connection that sends part of a TLS ClientHello record.
func stall(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00})
	return nc
}

// legitServed: a TLS client completes its handshake within 3 s and is
// answered.
func legitServed(t *testing.T, addr string, ca *certtest.CA) bool {
	t.Helper()
	raw, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		return false
	}
	defer raw.Close()
	tc := tls.Client(raw, ca.ClientTLS(t, nil))
	tc.SetDeadline(time.Now().Add(3 * time.Second))
	if err := tc.Handshake(); err != nil {
		return false
	}
	return served(t, tc)
}

// TestStalledHandshakesDoNotBlockAccept: connections stalled mid-TLS
// handshake do not hold up the accept loop: a legitimate client is served
// at once. Negative control: with the handshake in the accept loop, the
// legitimate client waits behind the stalled one.
func TestStalledHandshakesDoNotBlockAccept(t *testing.T) {
	for _, inLoop := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.SetupTimeout = 30 * time.Second
		cfg.private.setupInAcceptLoop = inLoop
		_, _, addr, ca := serveTLS(t, cfg)
		for i := 0; i < 20; i++ {
			stall(t, addr)
		}
		if got := legitServed(t, addr, ca); got == inLoop {
			t.Fatalf("handshake in accept loop %v: legitimate client served %v", inLoop, got)
		}
	}
}

// TestSetupTimeout: a connection that stalls mid-handshake is closed
// after the set-up timeout; one that never starts it too.
func TestSetupTimeout(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SetupTimeout = 300 * time.Millisecond
	_, m, addr, ca := serveTLS(t, cfg)
	a, b := stall(t, addr), stall(t, addr)
	if !closedByServer(a) || !closedByServer(b) {
		t.Fatal("stalled handshakes not closed")
	}
	// crypto/tls closes the connection when the handshake's context
	// expires, before the failed handshake is counted: wait for the count.
	waitFor(t, "two handshake failures counted", func() bool {
		return testutil.ToFloat64(m.security.TLSHandshakeFailures.WithLabelValues("SSL")) >= 2
	})
	if !legitServed(t, addr, ca) {
		t.Fatal("legitimate client")
	}
}

// TestMaxSetupsInProgress: past the bound, a new connection is closed at
// once; once the stalled ones go, clients are served again.
func TestMaxSetupsInProgress(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SetupTimeout = 30 * time.Second
	cfg.MaxSetupsInProgress = 3
	_, m, addr, ca := serveTLS(t, cfg)
	var stalled []net.Conn
	for i := 0; i < 3; i++ {
		stalled = append(stalled, stall(t, addr))
	}
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(m.security.SetupsInProgress) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if legitServed(t, addr, ca) {
		t.Fatal("served past the bound")
	}
	if testutil.ToFloat64(m.security.SetupsRejected) < 1 {
		t.Fatal("rejection not counted")
	}
	for _, nc := range stalled {
		nc.Close()
	}
	deadline = time.Now().Add(5 * time.Second)
	for !legitServed(t, addr, ca) {
		if time.Now().After(deadline) {
			t.Fatal("not served after the stalled connections closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
