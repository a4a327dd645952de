package protocol

import (
	"context"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

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
	// Session is the connection's listener and authenticated principal
	// (nil outside a Server: PLAINTEXT, User:ANONYMOUS).
	Session *Session

	// buffers are the pooled buffers handed out by Buffer, returned to
	// the pool by Release.
	buffers [][]byte
	// files are the Fetch record sets to send from files; Release
	// closes them. sendsFiles: the server can (AddFileRecords).
	files      []fileRecords
	sendsFiles bool
	// closeConn: the handler asked for the connection to be closed
	// instead of answering (CloseConnection).
	closeConn bool
	// Size is the request's frame size in bytes, without the size prefix
	// (Kafka's request.sizeInBytes, what producer_byte_rate counts).
	Size int32
	// throttle: mute the connection this long once answered (Throttle).
	throttle time.Duration
}

// Throttle mutes the connection for d once this request is answered, as
// Kafka does to a client over its quota (KIP-219: the response carries
// throttle_time_ms and the broker reads no further request from the
// connection until it has passed). The largest of several calls wins.
// Deviation: Kafka starts the mute when the response has been sent;
// minibroker when it has been handled, before it is written.
func (r *Request) Throttle(d time.Duration) { r.throttle = max(r.throttle, d) }

// FileRecordBytes is the bytes the response will send from files
// (AddFileRecords), which its record sets do not hold.
func (r *Request) FileRecordBytes() int {
	n := 0
	for _, f := range r.files {
		n += f.n
	}
	return n
}

// CloseConnection makes the server close the connection instead of
// answering this request (the broker's fault injection): the handler then
// returns nil. Requests read after it on the connection are not answered.
func (r *Request) CloseConnection() { r.closeConn = true }

// fileRecords is the record set of partition p of topic t of a Fetch
// response: n bytes of f from pos.
type fileRecords struct {
	t, p   int
	f      *os.File
	pos    int64
	n      int
	closer io.Closer // closes f (nil: f.Close)
}

// SendsFiles reports whether AddFileRecords may be used: the server
// writes this request's response to a TCP connection on Linux, where it
// sends files with sendfile(2).
func (r *Request) SendsFiles() bool {
	return r.sendsFiles && heldFiles.Load() < maxHeldFiles
}

// heldFiles counts the files of AddFileRecords not yet closed, across
// requests. Past maxHeldFiles, SendsFiles answers false and record sets
// are copied: descriptors held by responses that clients read slowly must
// not starve the logs of descriptors for their segments.
var heldFiles atomic.Int64

const maxHeldFiles = 1024

// AddFileRecords makes the record set of partition p of topic t (indexes
// into the Fetch response's Topics and their Partitions) the n bytes of f
// from pos, sent with sendfile(2), without copying them through the
// broker, when the response is written (Kafka's zero-copy fetch). That
// partition's RecordBatches in the response must be empty. f now belongs
// to the request: Release closes it, with closer when not nil (which must
// close f; the log's Span also lets truncation proceed).
func (r *Request) AddFileRecords(t, p int, f *os.File, pos int64, n int, closer io.Closer) {
	heldFiles.Add(1)
	r.files = append(r.files, fileRecords{t: t, p: p, f: f, pos: pos, n: n, closer: closer})
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

// Release returns the buffers taken with Buffer to the pool and closes the
// files of AddFileRecords. The server calls it after writing the response;
// a caller of Handler.Handle outside a Server may call it when done with
// the response, or leave the buffers to the GC.
func (r *Request) Release() {
	for i, b := range r.buffers {
		putBuffer(b)
		r.buffers[i] = nil
	}
	r.buffers = r.buffers[:0]
	for i := range r.files {
		if c := r.files[i].closer; c != nil {
			c.Close()
		} else {
			r.files[i].f.Close()
		}
		r.files[i] = fileRecords{}
		heldFiles.Add(-1)
	}
	r.files = r.files[:0]
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
