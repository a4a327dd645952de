package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fileHandler answers a Fetch with, for each partition asked, the
// PartitionMaxBytes bytes of its file from FetchOffset (a byte position
// here): sent from the file when the server can, read into a buffer
// otherwise. truncate cuts the file to that length after the handler
// added it, as a truncation racing the send would.
type fileHandler struct {
	path     string
	truncate int64 // < 0: no
	sent     atomic.Int32
}

func (h *fileHandler) Handle(ctx context.Context, r *Request) kmsg.Response {
	resp := fileResponse(r.Body.(*kmsg.FetchRequest), func(i, j int, rp kmsg.FetchRequestTopicPartition) []byte {
		f, err := os.Open(h.path)
		if err != nil {
			return nil
		}
		if r.SendsFiles() {
			r.AddFileRecords(i, j, f, rp.FetchOffset, int(rp.PartitionMaxBytes), nil)
			h.sent.Add(1)
			return []byte{}
		}
		defer f.Close()
		b := r.Buffer(int(rp.PartitionMaxBytes))[:rp.PartitionMaxBytes]
		f.ReadAt(b, rp.FetchOffset)
		return b
	})
	if h.truncate >= 0 {
		os.Truncate(h.path, h.truncate)
	}
	return resp
}

func (h *fileHandler) VersionRange(key int16) (int16, int16, bool) { return 4, 18, key == 1 }
func (h *fileHandler) ApiKeys() []kmsg.ApiVersionsResponseApiKey   { return nil }

// fileResponse is the response to a Fetch of fetchOf, each partition's
// record set given by records.
func fileResponse(req *kmsg.FetchRequest, records func(i, j int, rp kmsg.FetchRequestTopicPartition) []byte) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for i, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = rt.Topic
		for j, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.HighWatermark = rp.Partition, int64(i*100+j)
			sp.RecordBatches = records(i, j, rp)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// fetchOf asks for the given (position, length) ranges, two partitions per
// topic; version 12 and below, so that the test's request header is right.
func fetchOf(v int16, ranges [][2]int) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = v
	for i := 0; i < len(ranges); i += 2 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = fmt.Sprintf("t%d", i/2)
		for j, r := range ranges[i:min(i+2, len(ranges))] {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(j), int64(r[0]), int32(r[1])
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestSendFileFrameEqualsCopy: a Fetch response whose record sets are sent
// from a file with sendfile(2) is, byte for byte, the response with the
// bytes in it as kmsg encodes it, across chunks (record sets larger than
// writeChunk), small and large sets, and Fetch versions; and the copying
// path (the seam) gives the same bytes.
func TestSendFileFrameEqualsCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data, path := noiseFile(t, rng, 4<<20)
	ranges := [][2]int{{0, 70 << 10}, {100, 1}, {5000, 3<<20 + 17}, {1 << 20, 0}, {123, splitMin}}
	for _, copying := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.private.copyFileRecords = copying
		h := &fileHandler{path: path, truncate: -1}
		_, _, addr := serve(t, cfg, h)
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		for _, v := range []int16{4, 11} {
			req := fetchOf(v, ranges)
			corr := rng.Int32()
			if _, err := nc.Write(requestFrame(corr, req)); err != nil {
				t.Fatal(err)
			}
			want := fileResponse(req, func(_, _ int, rp kmsg.FetchRequestTopicPartition) []byte {
				return data[rp.FetchOffset : rp.FetchOffset+int64(rp.PartitionMaxBytes)]
			})
			got := readFrame(t, nc)
			if w := appendResponse(nil, corr, want); !bytes.Equal(got, w) {
				t.Fatalf("copying=%v v%d: frame of %d bytes, want kmsg's %d", copying, v, len(got), len(w))
			}
		}
		if sent := h.sent.Load(); copying != (sent == 0) {
			t.Fatalf("copying=%v: %d record sets sent from files", copying, sent)
		}
	}
}

// readFrame reads one whole response frame, size field included.
func readFrame(t *testing.T, nc net.Conn) []byte {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	size := make([]byte, 4)
	if _, err := io.ReadFull(nc, size); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size))
	if _, err := io.ReadFull(nc, body); err != nil {
		t.Fatal(err)
	}
	return append(size, body...)
}

// TestSendFileTruncatedClosesConnection: a file cut short before its
// record set is sent closes the connection with the frame incomplete (as
// Kafka refuses a truncated FileRecords), rather than sending fewer bytes
// than the frame announced, or waiting for bytes that will not come.
func TestSendFileTruncatedClosesConnection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "segment")
	if err := os.WriteFile(path, bytes.Repeat([]byte{7}, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &fileHandler{path: path, truncate: 200 << 10}
	_, _, addr := serve(t, DefaultConfig(), h)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(requestFrame(1, fetchOf(4, [][2]int{{100 << 10, 300 << 10}}))); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(nc)
	if err != nil {
		t.Fatalf("the connection was not closed: %v", err)
	}
	if len(got) < 4 || int(binary.BigEndian.Uint32(got))+4 <= len(got) {
		t.Fatalf("%d bytes, a whole frame", len(got))
	}
	if h.sent.Load() != 1 {
		t.Fatal("the record set was not sent from the file")
	}
}

// TestHeldFilesCapped: once maxHeldFiles files are held by responses not
// yet written, requests copy their record sets; a release makes room.
func TestHeldFilesCapped(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	holder, r := &Request{sendsFiles: true}, &Request{sendsFiles: true}
	for i := range maxHeldFiles {
		if !r.SendsFiles() {
			t.Fatalf("no file sent with %d held", i)
		}
		g, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		holder.AddFileRecords(0, i, g, 0, 1, nil)
	}
	if r.SendsFiles() {
		t.Fatalf("files sent with %d held", heldFiles.Load())
	}
	holder.Release()
	if !r.SendsFiles() || heldFiles.Load() != 0 {
		t.Fatalf("after the release: %d held", heldFiles.Load())
	}
}

// panicAfterFile adds a file's record set to the response, then panics.
type panicAfterFile struct{ fileHandler }

func (h *panicAfterFile) Handle(ctx context.Context, r *Request) kmsg.Response {
	h.fileHandler.Handle(ctx, r)
	panic("after AddFileRecords")
}

// TestFilesReleasedWithoutResponse: the files a handler added are closed
// when no response is written: here the handler panics after adding them
// (the connection closes). A span left open would hold a log's
// truncation for 30 s and its descriptor until a GC.
func TestFilesReleasedWithoutResponse(t *testing.T) {
	_, path := noiseFile(t, rand.New(rand.NewPCG(5, 6)), 1<<20)
	h := &panicAfterFile{fileHandler{path: path, truncate: -1}}
	_, _, addr := serve(t, DefaultConfig(), h)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	before := heldFiles.Load()
	if _, err := nc.Write(requestFrame(1, fetchOf(4, [][2]int{{0, 100 << 10}, {0, 200 << 10}}))); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(nc); err != nil {
		t.Fatalf("the connection was not closed after the panic: %v", err)
	}
	if h.sent.Load() != 2 {
		t.Fatalf("%d files added, want 2", h.sent.Load())
	}
	for deadline := time.Now().Add(5 * time.Second); heldFiles.Load() != before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d files still held after the connection closed", heldFiles.Load()-before)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
