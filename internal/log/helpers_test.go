package log

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/batch"
)

// testBatch describes a batch to build for tests.
type testBatch struct {
	base      int64
	records   int
	epoch     int32
	ts        int64 // first record's timestamp; record i has ts+i
	valueSize int
	codec     int8 // batch.Codec*; the records section is compressed with it
}

// build encodes an uncompressed v2 batch with a correct CRC.
func (tb testBatch) build() []byte {
	n := max(tb.records, 1)
	var recs []byte
	for i := range n {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, int64(i)) // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // key length (null)
		body = binary.AppendVarint(body, int64(tb.valueSize))
		body = append(body, bytes.Repeat([]byte{byte('a' + i%26)}, tb.valueSize)...)
		body = binary.AppendVarint(body, 0) // headers
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	recs = compress(tb.codec, recs)
	b := make([]byte, batch.HeaderSize, batch.HeaderSize+len(recs))
	binary.BigEndian.PutUint64(b[0:], uint64(tb.base))
	binary.BigEndian.PutUint32(b[8:], uint32(batch.HeaderSize-batch.LogOverhead+len(recs)))
	binary.BigEndian.PutUint32(b[12:], uint32(tb.epoch))
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(tb.codec))
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(tb.ts))
	binary.BigEndian.PutUint64(b[35:], uint64(tb.ts+int64(n-1)))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// testConfig is a small-segment config for tests.
func testConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 16 << 10
	c.IndexIntervalBytes = 512
	return c
}

type fixedClock struct{ t time.Time }

func (c *fixedClock) now() time.Time { return c.t }

func openTest(t *testing.T, dir string, cfg Config, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// appendN appends count batches of recs records each, continuing at the
// log end, and returns the raw batches.
func appendN(t *testing.T, l *Log, count, recs int, epoch int32, ts int64, valueSize int) [][]byte {
	t.Helper()
	var out [][]byte
	for range count {
		leo := l.LogEndOffset()
		b := testBatch{base: leo, records: recs, epoch: epoch, ts: ts, valueSize: valueSize}.build()
		res, err := l.Append(b)
		if err != nil {
			t.Fatalf("Append at %d: %v", leo, err)
		}
		if res.FirstOffset != leo || res.LastOffset != leo+int64(recs)-1 || res.LogEndOffset != leo+int64(recs) {
			t.Fatalf("AppendResult %+v at %d", res, leo)
		}
		out = append(out, b)
		ts += int64(recs)
	}
	return out
}

// headers parses the batches of raw, failing on damage.
func headers(t *testing.T, raw []byte) []batch.Header {
	t.Helper()
	var hs []batch.Header
	for len(raw) > 0 {
		size := int(binary.BigEndian.Uint32(raw[8:])) + batch.LogOverhead
		h, err := batch.Validate(raw[:size])
		if err != nil {
			t.Fatalf("returned batch invalid: %v", err)
		}
		hs = append(hs, h)
		raw = raw[size:]
	}
	return hs
}

// readAll reads the whole log from the start in small steps and returns
// the concatenated bytes.
func readAll(t *testing.T, l *Log) []byte {
	t.Helper()
	var out []byte
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		b, err := l.Read(off, 1000, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		hs := headers(t, b)
		if len(hs) == 0 {
			t.Fatalf("Read(%d) returned nothing below LEO %d", off, l.LogEndOffset())
		}
		out = append(out, b...)
		off = hs[len(hs)-1].LastOffset() + 1
	}
	return out
}

// waitFor polls cond until it holds, failing the test after 30 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30 s")
		}
	}
}
