package protocol

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A request for a version the handler does not serve closes the
// connection, as in Kafka, and is said once at INFO with the client id,
// the software name and version from the connection's ApiVersions, the
// peer, the key and the version. Before, only a debug line said it.
func TestUnsupportedRequestLoggedAtInfo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	s := NewServer(DefaultConfig(), &testHandler{}, zap.New(core), NewMetrics(nil))
	done := make(chan struct{})
	go func() { s.Serve(ln); close(done) }()
	defer func() {
		s.Shutdown(context.Background())
		<-done
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "old-tool", "0.9.1"
	nc.Write(requestFrameWithClientID(1, "burrow-probe", av))
	if corr, err := readCorr(t, nc); err != nil || corr != 1 {
		t.Fatalf("ApiVersions: corr %d, %v", corr, err)
	}
	// Metadata v13 (the handler serves v0–v12), twice, pipelined.
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 13
	frame := requestFrameWithClientID(2, "burrow-probe", md)
	nc.Write(append(append([]byte{}, frame...), frame...))
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.ReadFull(nc, make([]byte, 4)); err == nil {
		t.Fatalf("read %d bytes: the connection should close", n)
	}
	entries := logs.FilterMessage("unsupported request: closing the connection")
	if entries.Len() != 1 {
		t.Fatalf("%d INFO lines, want 1: %v", entries.Len(), logs.All())
	}
	e := entries.All()[0]
	if e.Level != zapcore.InfoLevel {
		t.Fatalf("level %v", e.Level)
	}
	fields := e.ContextMap()
	want := map[string]any{
		"api_key": int16(3), "api": "Metadata", "api_version": int16(13), "client_id": "burrow-probe",
		"client_software_name": "old-tool", "client_software_version": "0.9.1",
		"peer": nc.LocalAddr().String(),
	}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("%s = %v, want %v", k, fields[k], v)
		}
	}
}

func requestFrameWithClientID(corr int32, clientID string, req kmsg.Request) []byte {
	f := requestFrame(corr, req)
	// Replace the null client id (int16 -1 after key, version, corr);
	// a flexible request's header has tagged fields after it.
	var b bytes.Buffer
	b.Write(f[:12])
	b.Write([]byte{byte(len(clientID) >> 8), byte(len(clientID))})
	b.WriteString(clientID)
	if req.IsFlexible() {
		b.WriteByte(0) // header v2: no tagged fields
	}
	b.Write(f[14:])
	out := b.Bytes()
	n := len(out) - 4
	out[0], out[1], out[2], out[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return out
}
