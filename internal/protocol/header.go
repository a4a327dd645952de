package protocol

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request frame, after its int32 size prefix (big endian):
//
//	0  2  ApiKey
//	2  2  ApiVersion
//	4  4  CorrelationId
//	8  2+n ClientId: int16 length (-1 = null), then bytes   (header v1+)
//	…  u  tagged fields: uvarint count, then tags           (header v2: flexible APIs)
//	…     the request body, decoded by kmsg at ApiVersion
//
// A response is the size prefix, the CorrelationId, an empty tagged-field
// byte for flexible responses (header v1) except ApiVersions (always v0),
// then the body.

// decodeRequest parses a request header and body. An unknown API or a
// version the handler does not serve is an error (the connection closes),
// except ApiVersions above its range, which is answered (second result)
// with UNSUPPORTED_VERSION in a v0 body as Kafka does, so clients can learn
// what is supported.
// unsupportedError is a request for an API or a version the handler does
// not serve: the connection closes, as in Kafka, and the server says so
// at INFO once per connection (conn.decode).
type unsupportedError struct {
	key, version int16
	clientID     string
}

func (e *unsupportedError) Error() string {
	return fmt.Sprintf("unsupported api key %d version %d", e.key, e.version)
}

func decodeRequest(frame []byte, h Handler) (*Request, kmsg.Response, error) {
	r := kbin.Reader{Src: frame}
	key := r.Int16()
	version := r.Int16()
	corr := r.Int32()
	clientID := r.NullableString()
	if !r.Ok() {
		return nil, nil, errors.New("truncated request header")
	}
	req := &Request{Key: key, Version: version, CorrelationID: corr}
	if clientID != nil {
		req.ClientID = *clientID
	}
	minV, maxV, ok := h.VersionRange(key)
	if ok && key == apiVersionsKey && version > maxV {
		return req, unsupportedApiVersions(h), nil
	}
	if !ok || version < minV || version > maxV {
		return nil, nil, &unsupportedError{key: key, version: version, clientID: req.ClientID}
	}
	body := kmsg.RequestForKey(key)
	if body == nil {
		return nil, nil, fmt.Errorf("unknown api key %d", key)
	}
	body.SetVersion(version)
	if body.IsFlexible() {
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return nil, nil, errors.New("truncated request header tags")
		}
	}
	if err := body.ReadFrom(r.Src); err != nil {
		return nil, nil, fmt.Errorf("api key %d v%d body: %w", key, version, err)
	}
	req.Body = body
	return req, nil, nil
}
