package protocol

import (
	"context"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// emfileListener fails its first n Accepts as accept(2) does when the
// process is out of file descriptors (the connection stays queued).
type emfileListener struct {
	net.Listener
	n, calls atomic.Int32
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.calls.Add(1) <= l.n.Load() {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(),
			Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// Out of file descriptors, the accept loop backs off, logs the failure
// once rather than on every attempt (it was 20 warnings a second for as
// long as it lasted), and serves the waiting connection once accept
// succeeds again.
func TestAcceptEMFILEBacksOffAndRecovers(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &emfileListener{Listener: inner}
	const failures = 8
	ln.n.Store(failures)
	core, logs := observer.New(zapcore.DebugLevel)
	s := NewServer(DefaultConfig(), &testHandler{}, zap.New(core), NewMetrics(nil))
	done := make(chan struct{})
	go func() { s.Serve(ln); close(done) }()
	defer func() {
		s.Shutdown(context.Background())
		<-done
	}()

	nc, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write(metadataFrame(7, "t"))
	corr, err := readCorr(t, nc)
	if err != nil || corr != 7 {
		t.Fatalf("the connection waiting while accept failed: corr %d, %v", corr, err)
	}
	if calls := ln.calls.Load(); calls <= failures {
		t.Fatalf("served after %d accepts, %d of them failing", calls, failures)
	}
	if n := logs.FilterMessage("accept failed").Len(); n != 1 {
		t.Errorf("%d accept failures logged for %d in a row, want 1", n, failures)
	}
	if n := logs.FilterMessage("accepting again").Len(); n != 1 {
		t.Errorf("recovery logged %d times, want 1", n)
	}
}
