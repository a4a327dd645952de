// Package apisweep drives a broker through every API it advertises, at
// every version, over a raw connection (PLAINTEXT, or SASL PLAIN with a
// principal), for the tests that hold "no request panics a handler":
// Sweep sends each request filled with names (a topic, a group, a
// transactional id) so that the authorization rules and handlers read
// their lists, and decodes every answer; Mutate sends those frames with
// bytes changed and does not care about the answers. Tests only: the
// integration sweeps use it on in-process brokers, and the broker's
// negative control on a broker whose handler panics on purpose.
package apisweep

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Target is a broker listener and who to be on it.
type Target struct {
	Addr string
	// User and Password authenticate with SASL PLAIN ("": PLAINTEXT,
	// no authentication).
	User, Password string
	// Names are what the requests name.
	Names Names
}

// Names are the resources the filled requests name.
type Names struct {
	Topic   string // an existing topic (read, written, described)
	Absent  string // a topic that does not exist (deleted)
	Group   string // a group id prefix
	TxnID   string // a transactional id
	NodeID  string // the broker's node id, for BROKER config resources
	TopicID [16]byte
}

const timeout = 5 * time.Second

// mutatedWait is how long Mutate waits for the answer to a mutated frame
// before it moves on, on a new connection.
const mutatedWait = 300 * time.Millisecond

// conn is a raw connection.
type conn struct {
	nc   net.Conn
	corr int32
}

func dial(t Target) (*conn, error) {
	nc, err := net.DialTimeout("tcp", t.Addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &conn{nc: nc}
	if t.User == "" {
		return c, nil
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	resp, err := c.roundTrip(hs)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("SaslHandshake: %w", err)
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		nc.Close()
		return nil, fmt.Errorf("SaslHandshake: error code %d", code)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, []byte("\x00"+t.User+"\x00"+t.Password)
	if resp, err = c.roundTrip(auth); err != nil {
		nc.Close()
		return nil, fmt.Errorf("SaslAuthenticate: %w", err)
	}
	if code := resp.(*kmsg.SASLAuthenticateResponse).ErrorCode; code != 0 {
		nc.Close()
		return nil, fmt.Errorf("SaslAuthenticate as %s: error code %d", t.User, code)
	}
	return c, nil
}

// frameOf is req's frame: size, header v1 (v2 when flexible), body.
func frameOf(req kmsg.Request, corr int32) []byte {
	b := []byte{0, 0, 0, 0}
	b = kbin.AppendInt16(b, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, kmsg.StringPtr("apisweep"))
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// roundTrip sends req and decodes its answer at its version.
func (c *conn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	c.corr++
	c.nc.SetDeadline(time.Now().Add(timeout))
	if _, err := c.nc.Write(frameOf(req, c.corr)); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, fmt.Errorf("no answer (connection closed?): %w", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.nc, body); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	r := kbin.Reader{Src: body}
	if got := r.Int32(); got != c.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, c.corr)
	}
	if req.IsFlexible() && req.Key() != 18 { // ApiVersions answers with header v0
		for n := r.Uvarint(); n > 0; n-- {
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
	}
	if !r.Ok() {
		return nil, errors.New("response header cut short")
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("response does not decode: %w", err)
	}
	return resp, nil
}

// advertised is the broker's ApiVersions answer.
func advertised(c *conn) ([]kmsg.ApiVersionsResponseApiKey, error) {
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 0
	resp, err := c.roundTrip(av)
	if err != nil {
		return nil, fmt.Errorf("ApiVersions: %w", err)
	}
	return resp.(*kmsg.ApiVersionsResponse).ApiKeys, nil
}

// skipped reports whether an API is left out on t: SaslHandshake and
// SaslAuthenticate on an authenticated connection would start a
// re-authentication, not answer a request.
func skipped(t Target, key int16) bool {
	return t.User != "" && (key == 17 || key == 36)
}

// Sweep sends every advertised API at every version, filled (Fill), and
// decodes each answer. It returns how many were answered and one line
// per failure (no answer, a closed connection, an answer that does not
// decode); after a failure it reconnects and goes on.
func Sweep(t Target) (int, []string) {
	c, err := dial(t)
	if err != nil {
		return 0, []string{err.Error()}
	}
	defer func() { c.nc.Close() }()
	keys, err := advertised(c)
	if err != nil {
		return 0, []string{err.Error()}
	}
	var failures []string
	n := 0
	for _, k := range keys {
		if skipped(t, k.ApiKey) {
			continue
		}
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			req := kmsg.RequestForKey(k.ApiKey)
			if req == nil {
				failures = append(failures, fmt.Sprintf("advertised key %d unknown to kmsg", k.ApiKey))
				break
			}
			req.SetVersion(v)
			Fill(req, t.Names)
			if _, err := c.roundTrip(req); err != nil {
				failures = append(failures, fmt.Sprintf("%s v%d: %v", kmsg.NameForKey(k.ApiKey), v, err))
				c.nc.Close()
				if c, err = dial(t); err != nil {
					return n, append(failures, "reconnect: "+err.Error())
				}
				continue
			}
			n++
		}
	}
	return n, failures
}

// Mutate sends, rounds times for every advertised API and version, the
// filled request's frame with its body changed (bytes flipped, set to
// 0xff or 0x00, cut short, or lengthened with garbage), seeded by seed;
// answers are read and dropped, a closed connection is reopened. It
// returns the frames sent, and an error only when it cannot connect.
func Mutate(t Target, seed uint64, rounds int) (int, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c, err := dial(t)
	if err != nil {
		return 0, err
	}
	defer func() { c.nc.Close() }()
	keys, err := advertised(c)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, k := range keys {
		if skipped(t, k.ApiKey) {
			continue
		}
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			req := kmsg.RequestForKey(k.ApiKey)
			if req == nil {
				continue
			}
			req.SetVersion(v)
			Fill(req, t.Names)
			for range rounds {
				c.corr++
				f := mutate(rng, frameOf(req, c.corr), req.IsFlexible())
				// A mutated request may be one the broker holds (a long
				// poll, a join waiting for its group): not waited for.
				c.nc.SetDeadline(time.Now().Add(mutatedWait))
				_, err := c.nc.Write(f)
				if err == nil {
					err = drainOne(c.nc)
				}
				sent++
				if err != nil {
					c.nc.Close()
					if c, err = dial(t); err != nil {
						return sent, err
					}
				}
			}
		}
	}
	return sent, nil
}

// mutate changes the body of frame (after size and header) and fixes the
// size prefix.
func mutate(rng *rand.Rand, frame []byte, flexible bool) []byte {
	head := 4 + 2 + 2 + 4 + 2 + len("apisweep")
	if flexible {
		head++
	}
	out := append([]byte(nil), frame...)
	body := len(out) - head
	switch op := rng.IntN(5); {
	case body == 0 || op == 4: // lengthen with garbage
		for range 1 + rng.IntN(16) {
			out = append(out, byte(rng.Uint32()))
		}
	case op == 3: // cut short
		out = out[:head+rng.IntN(body)]
	default: // change 1–4 bytes: flipped, 0xff (huge lengths) or 0x00
		for range 1 + rng.IntN(4) {
			i := head + rng.IntN(body)
			switch op {
			case 0:
				out[i] ^= byte(1 + rng.IntN(255))
			case 1:
				out[i] = 0xff
			case 2:
				out[i] = 0
			}
		}
	}
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

// drainOne reads one answer or fails (closed, or nothing within the
// deadline: a request the broker does not answer).
func drainOne(nc net.Conn) error {
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 {
		return errors.New("absurd answer size")
	}
	_, err := io.CopyN(io.Discard, nc, int64(n))
	return err
}

// Frames are the filled requests (Fill) of every API t's broker
// advertises, at every version, as frames (the fuzzers' seeds).
func Frames(t Target) ([][]byte, error) {
	c, err := dial(t)
	if err != nil {
		return nil, err
	}
	defer c.nc.Close()
	keys, err := advertised(c)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, k := range keys {
		if skipped(t, k.ApiKey) {
			continue
		}
		for v := k.MinVersion; v <= k.MaxVersion; v++ {
			if req := kmsg.RequestForKey(k.ApiKey); req != nil {
				req.SetVersion(v)
				Fill(req, t.Names)
				out = append(out, frameOf(req, 1))
			}
		}
	}
	return out, nil
}

// Send sends frame (its size prefix set from its length) on a new
// connection to t and reads one answer, waiting a short while; what the
// broker answers does not matter, only whether it can connect.
func Send(t Target, frame []byte) error {
	if len(frame) < 4 {
		return nil
	}
	c, err := dial(t)
	if err != nil {
		return err
	}
	defer c.nc.Close()
	f := append([]byte(nil), frame...)
	binary.BigEndian.PutUint32(f, uint32(len(f)-4))
	c.nc.SetDeadline(time.Now().Add(mutatedWait))
	if _, err := c.nc.Write(f); err == nil {
		drainOne(c.nc)
	}
	return nil
}
