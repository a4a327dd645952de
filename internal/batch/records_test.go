package batch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/logtool"
)

// encodeRecord is one record as a v2 batch holds it.
func encodeRecord(delta int32, key, value []byte, headers ...kmsg.Header) []byte {
	r := kmsg.Record{OffsetDelta: delta, Key: key, Value: value, Headers: headers}
	// Length counts the bytes after itself: measure with Length 0, a
	// one-byte varint.
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	return r.AppendTo(nil)
}

// compress encodes a records section with a codec the way producers do:
// snappy as one raw block (kgo, librdkafka) or xerial-framed (Java).
func compress(t testing.TB, codec string, records []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	switch codec {
	case "none":
		return records
	case "gzip":
		w := gzip.NewWriter(&out)
		w.Write(records)
		w.Close()
	case "snappy":
		return s2.EncodeSnappy(nil, records)
	case "snappy-xerial":
		out.Write([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1})
		for rest := records; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			block := s2.EncodeSnappy(nil, rest[:n])
			out.Write(binary.BigEndian.AppendUint32(nil, uint32(len(block))))
			out.Write(block)
			rest = rest[n:]
		}
	case "lz4":
		w := lz4.NewWriter(&out)
		w.Write(records)
		w.Close()
	case "zstd":
		return zstdEncoder.EncodeAll(records, nil)
	default:
		t.Fatalf("codec %q", codec)
	}
	return out.Bytes()
}

var zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))

var codecNumbers = map[string]int16{"none": 0, "gzip": 1, "snappy": 2, "snappy-xerial": 2, "lz4": 3, "zstd": 4}

// buildBatch wraps a records section (compressed by codec) in a batch
// header declaring count records, with a good CRC.
func buildBatch(t testing.TB, codec string, count int32, records []byte) ([]byte, batch.Header) {
	t.Helper()
	body := compress(t, codec, records)
	rb := kmsg.RecordBatch{Magic: 2, Attributes: codecNumbers[codec], LastOffsetDelta: max(count-1, 0),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: count, Records: body}
	rb.Length = int32(batch.HeaderSize - batch.LogOverhead + len(body))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], batch.ComputeCRC(raw))
	h, err := batch.ParseHeader(raw)
	if err != nil {
		t.Fatal(err)
	}
	return raw, h
}

func goodRecords(n int) []byte {
	var recs []byte
	for i := range n {
		var key []byte
		if i%3 != 0 {
			key = []byte{byte(i)}
		}
		var value []byte
		if i%5 != 0 {
			value = bytes.Repeat([]byte{'v'}, i*7)
		}
		var hs []kmsg.Header
		if i%4 == 1 {
			hs = []kmsg.Header{{Key: "h", Value: []byte("x")}, {Key: "", Value: nil}}
		}
		recs = append(recs, encodeRecord(int32(i), key, value, hs...)...)
	}
	return recs
}

func TestCheckRecordsAcceptsWhatProducersWrite(t *testing.T) {
	recs := goodRecords(300)
	for _, codec := range []string{"none", "gzip", "snappy", "snappy-xerial", "lz4", "zstd"} {
		raw, h := buildBatch(t, codec, 300, recs)
		if _, err := batch.CheckRecords(raw, &h, batch.Rules{}); err != nil {
			t.Errorf("%s: %v", codec, err)
		}
		// One record in three has no key: a compacted topic refuses those
		// and names each.
		var refused *batch.RecordErrors
		if _, err := batch.CheckRecords(raw, &h, batch.Rules{NeedKey: true}); !errors.As(err, &refused) {
			t.Fatalf("%s, compacted: %v", codec, err)
		}
		var want []int
		for i := 0; i < 300; i += 3 {
			want = append(want, i)
		}
		if got := refusedIndexes(refused); !slices.Equal(got, want) || refused.Timestamp {
			t.Errorf("%s: refused %v (timestamp %v), want %v", codec, got, refused.Timestamp, want)
		}
	}
	// Values larger than the streaming window (32 KiB) are skipped across
	// several reads; one byte short of the count is still caught.
	big := append(encodeRecord(0, []byte("k"), bytes.Repeat([]byte("x"), 100<<10)),
		encodeRecord(1, nil, bytes.Repeat([]byte("y"), 70<<10), kmsg.Header{Key: "h", Value: make([]byte, 40<<10)})...)
	for _, codec := range []string{"gzip", "lz4", "zstd", "snappy", "none"} {
		raw, h := buildBatch(t, codec, 2, big)
		if _, err := batch.CheckRecords(raw, &h, batch.Rules{}); err != nil {
			t.Errorf("%s, large values: %v", codec, err)
		}
		raw, h = buildBatch(t, codec, 2, big[:len(big)-1])
		if _, err := batch.CheckRecords(raw, &h, batch.Rules{}); !errors.Is(err, batch.ErrMalformedRecords) {
			t.Errorf("%s, large values cut by a byte: %v", codec, err)
		}
	}
	// An empty key is a key.
	raw, h := buildBatch(t, "none", 1, encodeRecord(0, []byte{}, []byte("v")))
	if _, err := batch.CheckRecords(raw, &h, batch.Rules{NeedKey: true}); err != nil {
		t.Errorf("empty key: %v", err)
	}
}

func TestCheckRecordsRefusesMalformed(t *testing.T) {
	one := encodeRecord(0, []byte("k"), []byte("value"))
	two := append(slices.Clone(one), encodeRecord(1, []byte("k"), []byte("value"))...)
	withLength := func(rec []byte, length int64) []byte {
		_, n := binary.Varint(rec)
		return append(binary.AppendVarint(nil, length), rec[n:]...)
	}
	// A record of: attributes, timestamp delta, offset delta, then the
	// given tail (key, value, headers), with its true length.
	raw := func(tail ...byte) []byte {
		body := append([]byte{0, 0, 0}, tail...)
		return append(binary.AppendVarint(nil, int64(len(body))), body...)
	}
	cases := []struct {
		name    string
		count   int32
		records []byte
	}{
		{"count above the records", 3, two},
		{"bytes after the records", 1, two},
		{"length longer than the record", 1, withLength(one, int64(len(one)))},
		{"length shorter than the record", 1, withLength(one, int64(len(one)-3))},
		{"negative length", 1, withLength(one, -5)},
		{"key past the record", 1, raw(40, 'k', 0, 0)},     // key length 20
		{"value past the record", 1, raw(1, 6, 'v', 0)},    // null key, value length 3 with 2 bytes left
		{"negative key length", 1, raw(3, 1, 'v', 0)},      // key length -2
		{"negative header count", 1, raw(1, 1, 1)},         // headers -1
		{"negative header key length", 1, raw(1, 1, 2, 1)}, // one header, key length -1
		{"varint longer than 5 bytes", 1, raw(0x81, 0x80, 0x80, 0x80, 0x80, 0, 1, 0)},
		{"empty records section", 1, nil},
		{"truncated record", 1, one[:len(one)-2]},
	}
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		for _, c := range cases {
			b, h := buildBatch(t, codec, c.count, c.records)
			_, err := batch.CheckRecords(b, &h, batch.Rules{})
			if !errors.Is(err, batch.ErrMalformedRecords) {
				t.Errorf("%s, %s: %v", codec, c.name, err)
			}
		}
	}
}

func TestCheckRecordsRefusesBadCompression(t *testing.T) {
	recs := goodRecords(50)
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		b, h := buildBatch(t, codec, 50, recs)
		body := b[batch.HeaderSize:]
		// Cut the compressed bytes short, then flip bytes in the middle;
		// either way CheckRecords must refuse, not panic.
		cut := slices.Clone(b[:batch.HeaderSize+len(body)/2])
		binary.BigEndian.PutUint32(cut[8:], uint32(len(cut)-batch.LogOverhead))
		hc, err := batch.ParseHeader(cut)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := batch.CheckRecords(cut, &hc, batch.Rules{}); !errors.Is(err, batch.ErrMalformedRecords) {
			t.Errorf("%s cut: %v", codec, err)
		}
		garbled := slices.Clone(b)
		for i := batch.HeaderSize + 2; i < len(garbled); i += 7 {
			garbled[i] ^= 0x5a
		}
		_, _ = batch.CheckRecords(garbled, &h, batch.Rules{}) // may parse by chance; must not panic
	}
	// A snappy block claiming far more than snappy can encode is refused
	// before anything is allocated for it.
	bomb := binary.AppendUvarint(nil, 1<<24)
	bomb = append(bomb, 0)
	b, h := buildBatch(t, "none", 1, nil)
	b = append(b[:batch.HeaderSize], bomb...)
	binary.BigEndian.PutUint16(b[21:], 2)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-batch.LogOverhead))
	h, _ = batch.ParseHeader(b)
	if _, err := batch.CheckRecords(b, &h, batch.Rules{}); err == nil || !strings.Contains(err.Error(), "claims") {
		t.Errorf("snappy bomb: %v", err)
	}
}

// The pooled decompressors, windows and snappy buffers are never shared
// between walks at the same time: good and malformed batches of every
// codec walked from several goroutines (make test runs this under -race)
// get their own answers.
func TestCheckRecordsConcurrent(t *testing.T) {
	type job struct {
		raw  []byte
		h    batch.Header
		good bool
	}
	var jobs []job
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		recs := goodRecords(200)
		raw, h := buildBatch(t, codec, 200, recs)
		jobs = append(jobs, job{raw, h, true})
		raw, h = buildBatch(t, codec, 200, recs[:len(recs)-3])
		jobs = append(jobs, job{raw, h, false})
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				j := jobs[(g+i)%len(jobs)]
				if _, err := batch.CheckRecords(j.raw, &j.h, batch.Rules{}); (err == nil) != j.good {
					t.Errorf("job %d: %v, want good=%v", (g+i)%len(jobs), err, j.good)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestUnsnappyBothFramings(t *testing.T) {
	recs := bytes.Repeat([]byte("0123456789"), 5000)
	framed := compress(t, "snappy-xerial", recs)
	for _, src := range [][]byte{framed, compress(t, "snappy", recs)} {
		if got, err := batch.Unsnappy(src); err != nil || !bytes.Equal(got, recs) {
			t.Fatalf("Unsnappy: %v", err)
		}
	}
	if _, err := batch.Unsnappy(framed[:30]); err == nil {
		t.Fatal("truncated xerial accepted")
	}
}

// FuzzCheckRecords: whatever the records section (in any codec),
// CheckRecords answers
// without panicking, and a batch it accepts decodes with the log tool's
// decoder (a second, independent reader of the format) into exactly the
// declared records, with the same keys present.
func FuzzCheckRecords(f *testing.F) {
	f.Add(goodRecords(5), int32(5), uint8(0))
	f.Add(goodRecords(20), int32(20), uint8(1))
	f.Add(goodRecords(20), int32(20), uint8(3))
	f.Add(encodeRecord(0, nil, nil), int32(1), uint8(0))
	f.Add([]byte{2, 0, 0}, int32(1), uint8(4))
	codecs := []string{"none", "snappy", "lz4", "zstd", "gzip"}
	f.Fuzz(func(t *testing.T, records []byte, count int32, codec uint8) {
		if count < 0 || count > 1<<16 {
			return
		}
		// none and snappy are walked in memory, the others as a stream.
		raw, h := buildBatch(t, codecs[int(codec)%len(codecs)], count, records)
		// Timestamps are the deltas (the base is 0): the bounds refuse
		// some of what the fuzzer writes.
		maxTs, err := batch.CheckRecords(raw, &h, batch.Rules{NeedKey: true, CreateTime: true, MinTimestamp: -5, MaxTimestamp: 1000})
		var refused *batch.RecordErrors
		if err != nil && !errors.Is(err, batch.ErrMalformedRecords) && !errors.As(err, &refused) {
			t.Fatalf("unexpected error type: %v", err)
		}
		if err != nil && refused == nil {
			return
		}
		decoded, derr := logtool.DecodeRecords(raw, &h, 1<<24)
		if derr != nil || len(decoded) != int(count) {
			t.Fatalf("accepted, but the log tool decodes %d of %d: %v", len(decoded), count, derr)
		}
		var bad []int
		wantMax := int64(-1)
		for i, r := range decoded {
			if r.Key == nil || r.Timestamp != -1 && (r.Timestamp < -5 || r.Timestamp > 1000) {
				bad = append(bad, i)
			}
			wantMax = max(wantMax, r.Timestamp)
		}
		if maxTs != wantMax {
			t.Fatalf("max timestamp %d, the records' %d", maxTs, wantMax)
		}
		if got := refusedIndexes(refused); !slices.Equal(bad, got) {
			t.Fatalf("keyless or out of bounds %v, refused %v", bad, got)
		}
	})
}

func refusedIndexes(e *batch.RecordErrors) []int {
	if e == nil {
		return nil
	}
	var is []int
	for _, r := range e.Records {
		is = append(is, r.Index)
	}
	return is
}

// BenchmarkCheckRecords walks a 1 MiB batch of 100 B or 10 KiB records,
// uncompressed and in each codec. Allocations must not grow with the
// record count (snappy inflates the block whole; the others stream).
func BenchmarkCheckRecords(b *testing.B) {
	for _, size := range []int{100, 10 << 10} {
		var recs []byte
		n := int32(0)
		value := bytes.Repeat([]byte("minibroker "), size/11+1)[:size]
		for len(recs) < 1<<20 {
			recs = append(recs, encodeRecord(n, nil, value)...)
			n++
		}
		for _, codec := range []string{"none", "snappy", "lz4", "zstd", "gzip"} {
			b.Run(fmt.Sprintf("value=%d/%s", size, codec), func(b *testing.B) {
				raw, h := buildBatch(b, codec, n, recs)
				b.SetBytes(int64(len(recs)))
				b.ReportAllocs()
				// The produce path's rules on a CreateTime topic (the
				// records' timestamps are 0, the bounds an hour each way).
				rules := batch.Rules{CreateTime: true, MinTimestamp: -3_600_000, MaxTimestamp: 3_600_000}
				for b.Loop() {
					if _, err := batch.CheckRecords(raw, &h, rules); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// A zstd frame whose header asks for a window beyond 2^27 (libzstd's
// default limit, which zstd-jni applies in Kafka) is refused rather than
// given the memory; one at the limit is walked. The encoder sizes the
// window to the content, so the test rewrites the window descriptor.
func TestCheckRecordsZstdWindowLimit(t *testing.T) {
	recs := goodRecords(50)
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithSingleSegment(false), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(recs)
	w.Close()
	frame := buf.Bytes()
	if frame[4]&0x20 != 0 {
		t.Fatal("single-segment frame: no window descriptor to rewrite")
	}
	for _, c := range []struct {
		windowLog byte
		ok        bool
	}{{27, true}, {29, false}} {
		frame[5] = (c.windowLog - 10) << 3 // exponent, mantissa 0
		raw, _ := buildBatch(t, "none", 50, nil)
		raw = append(raw[:batch.HeaderSize], frame...)
		binary.BigEndian.PutUint16(raw[21:], 4)
		binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-batch.LogOverhead))
		h, _ := batch.ParseHeader(raw)
		if _, err := batch.CheckRecords(raw, &h, batch.Rules{}); c.ok != (err == nil) {
			t.Errorf("window 2^%d: %v", c.windowLog, err)
		}
	}
}

// timedRecord is a record with a key and a timestamp delta.
func timedRecord(delta int32, tsDelta int64, key []byte) []byte {
	r := kmsg.Record{OffsetDelta: delta, TimestampDelta64: tsDelta, Key: key, Value: []byte("v")}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	return r.AppendTo(nil)
}

// stamp sets a built batch's base and max timestamps and, with lat, the
// LogAppendTime type bit, and recomputes the CRC.
func stamp(t *testing.T, raw []byte, base, maxTs int64, lat bool) batch.Header {
	t.Helper()
	binary.BigEndian.PutUint64(raw[27:], uint64(base))
	binary.BigEndian.PutUint64(raw[35:], uint64(maxTs))
	if lat {
		binary.BigEndian.PutUint16(raw[21:], binary.BigEndian.Uint16(raw[21:])|batch.AttrTimestampType)
	}
	binary.BigEndian.PutUint32(raw[17:], batch.ComputeCRC(raw))
	h, err := batch.ParseHeader(raw)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestCheckRecordsTimestamps: a CreateTime topic refuses records outside
// [now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms],
// names each, and skips records without a timestamp (-1); a batch whose
// producer set the LogAppendTime type is read and refused as Kafka's
// LogValidator reads and refuses it.
func TestCheckRecordsTimestamps(t *testing.T) {
	const now, hour, day = int64(1_780_000_000_000), int64(3_600_000), int64(86_400_000)
	lo, hi := batch.TimestampBounds(now, day, hour) // Kafka 4.0's after default, a day before
	if lo != now-day || hi != now+hour {
		t.Fatalf("bounds %d, %d", lo, hi)
	}
	if lo, hi := batch.TimestampBounds(now, math.MaxInt64, math.MaxInt64); lo != now-math.MaxInt64 || hi != math.MaxInt64 {
		t.Fatalf("unbounded: %d, %d", lo, hi)
	}
	createTime := batch.Rules{CreateTime: true, MinTimestamp: lo, MaxTimestamp: hi}
	k := []byte("k")
	recs := slices.Concat(
		timedRecord(0, 0, k),        // now: in
		timedRecord(1, hour, k),     // the upper bound itself: in
		timedRecord(2, hour+1, k),   // 1 ms past it: out
		timedRecord(3, -day-1, k),   // a day and 1 ms ago: out
		timedRecord(4, -now-1, k),   // -1, no timestamp: skipped
		timedRecord(5, 30*day, nil), // keyless and far ahead
		timedRecord(6, -2*hour, k),  // in
	)
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		raw, _ := buildBatch(t, codec, 7, recs)
		h := stamp(t, raw, now, now+30*day, false)
		var refused *batch.RecordErrors
		maxTs, err := batch.CheckRecords(raw, &h, createTime)
		if !errors.As(err, &refused) {
			t.Fatalf("%s: %v", codec, err)
		}
		if maxTs != now+30*day {
			t.Errorf("%s: max timestamp %d, want the records' %d", codec, maxTs, now+30*day)
		}
		if got := refusedIndexes(refused); !slices.Equal(got, []int{2, 3, 5}) || !refused.Timestamp {
			t.Errorf("%s: refused %v (timestamp %v), want [2 3 5], timestamp", codec, got, refused.Timestamp)
		}
		if !strings.Contains(refused.Records[0].Message, fmt.Sprint(now+hour+1)) {
			t.Errorf("%s: message %q does not name the timestamp", codec, refused.Records[0].Message)
		}
		// On a compacted topic the keyless record is refused for its key
		// (one error per record, the key first).
		keyed := createTime
		keyed.NeedKey = true
		if _, err := batch.CheckRecords(raw, &h, keyed); !errors.As(err, &refused) || !strings.Contains(refused.Records[2].Message, "key") {
			t.Errorf("%s, compacted: %v", codec, err)
		}
		// A LogAppendTime topic keeps no producer timestamps: nothing to bound.
		if _, err := batch.CheckRecords(raw, &h, batch.Rules{}); err != nil {
			t.Errorf("%s, LogAppendTime topic: %v", codec, err)
		}
	}
	// Only a key refused: INVALID_RECORD, not INVALID_TIMESTAMP.
	raw, _ := buildBatch(t, "none", 1, timedRecord(0, 30*day, nil))
	h := stamp(t, raw, now, now+30*day, false)
	var refused *batch.RecordErrors
	if _, err := batch.CheckRecords(raw, &h, batch.Rules{NeedKey: true, CreateTime: true, MinTimestamp: lo, MaxTimestamp: hi}); !errors.As(err, &refused) || refused.Timestamp {
		t.Errorf("keyless, far ahead, compacted: %v", err)
	}

	// The max timestamp is the records', whatever the header says; -1
	// when none has a timestamp.
	raw, _ = buildBatch(t, "none", 2, slices.Concat(timedRecord(0, 0, k), timedRecord(1, 5, k)))
	h = stamp(t, raw, now, now-7, false)
	if maxTs, err := batch.CheckRecords(raw, &h, createTime); err != nil || maxTs != now+5 {
		t.Errorf("a header claiming max %d: %d, %v; want the records' %d", now-7, maxTs, err, now+5)
	}
	h = stamp(t, raw, -1, 17, false)
	if maxTs, err := batch.CheckRecords(raw, &h, batch.Rules{}); err != nil || maxTs != 4 {
		t.Errorf("base -1, deltas 0 and 5: %d, %v; want 4", maxTs, err)
	}
	raw, _ = buildBatch(t, "none", 2, slices.Concat(timedRecord(0, 0, k), timedRecord(1, 0, k)))
	h = stamp(t, raw, -1, 99, false)
	if maxTs, err := batch.CheckRecords(raw, &h, createTime); err != nil || maxTs != -1 {
		t.Errorf("no timestamps: %d, %v; want -1", maxTs, err)
	}

	// The producer set LogAppendTime: every record reads the max timestamp.
	raw, _ = buildBatch(t, "none", 2, slices.Concat(timedRecord(0, 0, k), timedRecord(1, 30*day, k)))
	h = stamp(t, raw, now, now, true)
	if maxTs, err := batch.CheckRecords(raw, &h, createTime); err != nil || maxTs != now {
		t.Errorf("LogAppendTime type, max timestamp in bounds, CreateTime topic: %d, %v", maxTs, err)
	}
	h = stamp(t, raw, now, now+2*hour, true)
	if _, err := batch.CheckRecords(raw, &h, createTime); !errors.As(err, &refused) || !slices.Equal(refusedIndexes(refused), []int{0, 1}) {
		t.Errorf("LogAppendTime type, max timestamp out of bounds: %v", err)
	}
	for name, rules := range map[string]batch.Rules{"CreateTime topic, no max timestamp": createTime, "LogAppendTime topic": {}} {
		maxTs := now
		if rules.CreateTime {
			maxTs = -1
		}
		h = stamp(t, raw, now, maxTs, true)
		if _, err := batch.CheckRecords(raw, &h, rules); !errors.As(err, &refused) || !refused.Timestamp ||
			!slices.Equal(refusedIndexes(refused), []int{0, 1}) || !strings.Contains(refused.Records[0].Message, "LogAppendTime") {
			t.Errorf("LogAppendTime type, %s: %v", name, err)
		}
	}
}
