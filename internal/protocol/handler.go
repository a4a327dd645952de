package protocol

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded request with its header.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      string
	Body          kmsg.Request
	Remote        net.Addr

	// buffers are the pooled buffers handed out by Buffer, returned to
	// the pool by Release.
	buffers [][]byte
}

// Buffer returns an empty byte slice with capacity >= n for bytes the
// response will alias (a Fetch's record batches), taken from a pool shared
// by all connections. It stays valid until Release: the server calls
// Release once the response is written (a Fetch response's large record
// sets are written from these buffers, not copied into the frame), so the
// handler must not keep the response, or the buffer, past its write.
func (r *Request) Buffer(n int) []byte {
	b := getBuffer(n)
	if cap(b) > 1<<minPooledShift {
		r.buffers = append(r.buffers, b)
	}
	return b
}

// Release returns the buffers taken with Buffer to the pool. The server
// calls it after writing the response; a caller of Handler.Handle outside
// a Server may call it when done with the response, or leave the buffers
// to the GC.
func (r *Request) Release() {
	for i, b := range r.buffers {
		putBuffer(b)
		r.buffers[i] = nil
	}
	r.buffers = r.buffers[:0]
}

// Handler serves decoded requests. The broker implements it.
type Handler interface {
	// Handle returns the response to req, or nil when the request gets no
	// response (Produce with acks=0). It must not retain req.Body's
	// buffers past the call (they alias the frame; a large Produce frame
	// is reused for another request once Handle returns). ctx is
	// cancelled when the connection closes or the server shuts down.
	Handle(ctx context.Context, req *Request) kmsg.Response
	// VersionRange reports the versions of an API the handler serves.
	VersionRange(key int16) (min, max int16, ok bool)
	// ApiKeys lists every served API with its range, for ApiVersions.
	ApiKeys() []kmsg.ApiVersionsResponseApiKey
}
