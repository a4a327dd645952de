package protocol

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// everyAPI claims every API kmsg knows at every version, so the fuzzers
// reach every body decoder. It answers what it can and nothing else.
type everyAPI struct{ testHandler }

func (*everyAPI) VersionRange(key int16) (int16, int16, bool) {
	r := kmsg.RequestForKey(key)
	if r == nil {
		return 0, 0, false
	}
	return 0, r.MaxVersion(), true
}

func (e *everyAPI) Handle(ctx context.Context, r *Request) kmsg.Response {
	switch r.Body.(type) {
	case *kmsg.MetadataRequest, *kmsg.ApiVersionsRequest:
		return e.testHandler.Handle(ctx, r)
	}
	return r.Body.ResponseKind()
}

func seedFrames() [][]byte {
	var out [][]byte
	for _, req := range []kmsg.Request{kmsg.NewPtrMetadataRequest(), kmsg.NewPtrApiVersionsRequest(),
		kmsg.NewPtrProduceRequest(), kmsg.NewPtrFetchRequest(), kmsg.NewPtrJoinGroupRequest()} {
		for _, v := range []int16{0, req.MaxVersion()} {
			req.SetVersion(v)
			b := kbin.AppendInt16(nil, req.Key())
			b = kbin.AppendInt16(b, v)
			b = kbin.AppendInt32(b, 7)
			b = kbin.AppendNullableString(b, nil)
			if req.IsFlexible() {
				b = append(b, 0)
			}
			out = append(out, req.AppendTo(b))
		}
	}
	return out
}

// FuzzDecodeRequest: any frame body is decoded or refused, never a panic,
// and what decodes is a request of the key and version it claims.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Add([]byte{0, 18, 0, 99, 0, 0, 0, 1, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, resp, err := decodeRequest(frame, &everyAPI{})
		if err != nil {
			return
		}
		if resp == nil && (req.Body == nil || req.Body.Key() != req.Key || req.Body.GetVersion() != req.Version) {
			t.Fatalf("decoded %+v", req)
		}
	})
}

// FuzzConnection writes arbitrary bytes (many frames, partial frames,
// absurd sizes) to a real server connection: the server never panics, and
// it answers or closes that connection.
func FuzzConnection(f *testing.F) {
	var all []byte
	for _, s := range seedFrames() {
		all = binary.BigEndian.AppendUint32(all, uint32(len(s)))
		all = append(all, s...)
	}
	f.Add(all)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		m := NewMetrics(nil)
		cfg := DefaultConfig()
		cfg.MaxRequestSize = 1 << 20
		s := NewServer(cfg, &everyAPI{}, nil, m)
		client, server := net.Pipe()
		s.admit(server, plaintextListener)
		drained := make(chan struct{})
		go func() { // read responses until the server closes
			defer close(drained)
			buf := make([]byte, 64<<10)
			for {
				if _, err := client.Read(buf); err != nil {
					return
				}
			}
		}()
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		client.Write(in) // returns once the server read it all or closed
		client.Close()
		<-drained
		s.Shutdown(context.Background())
		if p := testutil.ToFloat64(m.Panics); p != 0 {
			t.Fatalf("%v panics", p)
		}
	})
}
