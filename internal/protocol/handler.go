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
}

// Handler serves decoded requests. The broker implements it.
type Handler interface {
	// Handle returns the response to req, or nil when the request gets no
	// response (Produce with acks=0). It must not retain req.Body's
	// buffers past the call (they alias the frame). ctx is cancelled when
	// the connection closes or the server shuts down.
	Handle(ctx context.Context, req *Request) kmsg.Response
	// VersionRange reports the versions of an API the handler serves.
	VersionRange(key int16) (min, max int16, ok bool)
	// ApiKeys lists every served API with its range, for ApiVersions.
	ApiKeys() []kmsg.ApiVersionsResponseApiKey
}
