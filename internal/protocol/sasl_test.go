package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// saslHandler is testHandler plus SaslHandshake, which it serves after
// a delay, so that a frame the client sent right after it is read
// before the handshake is handled unless the reader waits.
type saslHandler struct{ testHandler }

func (h *saslHandler) Handle(ctx context.Context, r *Request) kmsg.Response {
	if req, ok := r.Body.(*kmsg.SASLHandshakeRequest); ok {
		time.Sleep(200 * time.Millisecond)
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms, resp.ErrorCode = r.Session.Handshake(req.Mechanism, req.Version)
		return resp
	}
	return h.testHandler.Handle(ctx, r)
}

func (h *saslHandler) VersionRange(key int16) (int16, int16, bool) {
	if key == saslHandshakeKey {
		return 0, 1, true
	}
	return h.testHandler.VersionRange(key)
}

// plainOnce accepts the token "\x00u\x00p".
type plainOnce struct{}

func (plainOnce) Step(msg []byte) ([]byte, bool, error) {
	if !bytes.Equal(msg, []byte("\x00u\x00p")) {
		return nil, false, &AuthError{Message: "Authentication failed: Invalid username or password"}
	}
	return nil, true, nil
}
func (plainOnce) Principal() string { return "User:u" }

// TestBareTokenAfterPipelinedHandshake: a client that sends SaslHandshake
// v0 and its bare PLAIN token in one write, and Metadata after, is
// authenticated and answered, because before authentication the reader
// reads a frame only once the request before it is handled. With that
// wait removed, the token is read as a request while the slow handshake
// is handled and the connection is closed.
func TestBareTokenAfterPipelinedHandshake(t *testing.T) {
	for _, noWait := range []bool{false, true} {
		cfg := Config{PipelineDepth: 4}
		cfg.private.noPreAuthSteps = noWait
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := NewServer(cfg, &saslHandler{}, nil, NewMetrics(nil))
		l := &Listener{Name: "SASL", Protocol: SASLPlaintext, SASL: &SASL{Mechanisms: []string{"PLAIN"},
			Start: func(string) (SASLConversation, error) { return plainOnce{}, nil }}}
		done := make(chan struct{})
		go func() { s.ServeListener(ln, l); close(done) }()

		nc, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 0, "PLAIN"
		token := []byte("\x00u\x00p")
		var out []byte
		out = append(out, requestFrame(1, hs)...)
		out = append(binary.BigEndian.AppendUint32(out, uint32(len(token))), token...)
		out = append(out, metadataFrame(2, "t")...)
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		nc.Write(out)
		// handshake response, empty bare frame, Metadata response
		var frames [][]byte
		for range 3 {
			var size [4]byte
			if _, err := io.ReadFull(nc, size[:]); err != nil {
				break
			}
			b := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(nc, b); err != nil {
				break
			}
			frames = append(frames, b)
		}
		nc.Close()
		s.Shutdown(context.Background())
		<-done
		served := len(frames) == 3 && len(frames[1]) == 0 && binary.BigEndian.Uint32(frames[2]) == 2
		if served == noWait {
			t.Fatalf("reader waits %v: served %v (%d frames)", !noWait, served, len(frames))
		}
	}
}
