package protocol

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frameHandler serves Produce v7. It tells entered about every request
// (the topic's name and the address of its record bytes), and a request
// for topic "hold" waits for proceed, then reports whether its record
// bytes are still all 'h'.
type frameHandler struct {
	entered chan frameSeen
	proceed chan struct{}
	intact  chan bool
}

type frameSeen struct {
	topic string
	data  *byte
}

func (h *frameHandler) Handle(_ context.Context, r *Request) kmsg.Response {
	req := r.Body.(*kmsg.ProduceRequest)
	records := req.Topics[0].Partitions[0].Records
	h.entered <- frameSeen{req.Topics[0].Topic, unsafe.SliceData(records)}
	if req.Topics[0].Topic == "hold" {
		<-h.proceed
		h.intact <- bytes.Count(records, []byte{'h'}) == len(records)
	}
	return req.ResponseKind()
}

func (h *frameHandler) VersionRange(key int16) (int16, int16, bool) { return 7, 7, key == produceKey }

func (h *frameHandler) ApiKeys() []kmsg.ApiVersionsResponseApiKey {
	return []kmsg.ApiVersionsResponseApiKey{{ApiKey: produceKey, MinVersion: 7, MaxVersion: 7}}
}

// sizedProduceFrame is a Produce v7 frame for topic whose one partition's
// records are n bytes of fill (the handler does not parse them).
func sizedProduceFrame(corr int32, topic string, fill byte, n int) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 7, 1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = bytes.Repeat([]byte{fill}, n)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return requestFrame(corr, req)
}

// A large Produce frame is read into a pooled buffer, which goes back to
// the pool only once the request is handled: while one connection's
// request is being handled, another connection's request of the same size
// is read into a different buffer, and the first request's record bytes
// are intact when its handler reads them. The next request of that size
// then reuses one of the two buffers. The negative control returns the
// frame to the pool before its request is handled: the second request is
// read into the first one's buffer and its handler sees the second
// request's bytes.
func TestProduceFrameReusedAfterHandle(t *testing.T) {
	for _, early := range []bool{false, true} {
		name := "reused after handle"
		if early {
			name = "negative control: reused before handle"
		}
		t.Run(name, func(t *testing.T) {
			const size = 256 << 10 // a pooled size class
			h := &frameHandler{entered: make(chan frameSeen, 4), proceed: make(chan struct{}), intact: make(chan bool, 1)}
			cfg := DefaultConfig()
			cfg.private.reuseFrameBeforeHandle = early
			_, _, addr := serve(t, cfg, h)
			dial := func() net.Conn {
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { nc.Close() })
				return nc
			}
			send := func(nc net.Conn, frame []byte) {
				nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err := nc.Write(frame); err != nil {
					t.Fatal(err)
				}
			}
			seen := func(want string) frameSeen {
				select {
				case f := <-h.entered:
					if f.topic != want {
						t.Fatalf("handled %q, want %q", f.topic, want)
					}
					return f
				case <-time.After(10 * time.Second):
					t.Fatalf("%q was not handled", want)
				}
				return frameSeen{}
			}

			a, b := dial(), dial()
			send(a, sizedProduceFrame(1, "hold", 'h', size))
			held := seen("hold")
			send(b, sizedProduceFrame(2, "pass", 'o', size))
			other := seen("pass")
			close(h.proceed)
			intact := <-h.intact
			if _, err := readCorr(t, a); err != nil {
				t.Fatal(err)
			}
			if _, err := readCorr(t, b); err != nil {
				t.Fatal(err)
			}
			if early {
				if intact || held.data != other.data {
					t.Fatalf("negative control: the held request's bytes were intact (%v) or the two requests had different buffers (%v): the seam did not reuse the frame early", intact, held.data != other.data)
				}
				return
			}
			if !intact {
				t.Fatal("the held Produce request's record bytes changed while it was handled")
			}
			if held.data == other.data {
				t.Fatal("two Produce requests in handling shared one frame buffer")
			}
			send(a, sizedProduceFrame(3, "next", 'n', size))
			if next := seen("next"); next.data != held.data && next.data != other.data {
				t.Error("the next Produce frame of that size did not reuse a pooled frame")
			}
			if _, err := readCorr(t, a); err != nil {
				t.Fatal(err)
			}
		})
	}
}
