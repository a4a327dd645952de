package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ErrMalformedRecords is a batch whose records section does not hold
// the records its header declares: a record that does not parse, a
// count that does not match, bytes left over, or compressed bytes that
// do not decompress.
var ErrMalformedRecords = errors.New("malformed records")

// Rules are what a topic asks of each record a client produces, beyond
// parsing: Kafka's LogValidator.validateRecord (key, then timestamp).
type Rules struct {
	// NeedKey refuses records without a key (a compacted topic).
	NeedKey bool
	// CreateTime is a topic that keeps its producers' timestamps
	// (message.timestamp.type=CreateTime): a record's timestamp, unless
	// it is -1 (none), must lie within [MinTimestamp, MaxTimestamp] (see
	// TimestampBounds). On either kind of topic a batch whose producer
	// set the LogAppendTime type is refused, unless the topic is
	// CreateTime and the batch's max timestamp, which Kafka then reads
	// as every record's, is within the bounds.
	CreateTime                 bool
	MinTimestamp, MaxTimestamp int64
}

// TimestampBounds are the timestamps a CreateTime topic accepts at now
// (ms): message.timestamp.before.max.ms before it and
// message.timestamp.after.max.ms after it, saturating at the int64
// range (both default to no bound but after, which Kafka 4.0 made an
// hour, KIP-1030).
func TimestampBounds(now, beforeMaxMs, afterMaxMs int64) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if beforeMaxMs >= 0 && now-beforeMaxMs <= now {
		lo = now - beforeMaxMs
	}
	if afterMaxMs >= 0 && now+afterMaxMs >= now {
		hi = now + afterMaxMs
	}
	return lo, hi
}

// RecordError is one refused record: its position in the batch (the
// Produce response's batch_index) and why.
type RecordError struct {
	Index   int
	Message string
}

// RecordErrors are records that parse but that the topic refuses.
type RecordErrors struct {
	Records []RecordError
	// Timestamp is set when at least one was refused for its timestamp:
	// Kafka then answers INVALID_TIMESTAMP for the partition (and lists
	// every refused record), INVALID_RECORD otherwise.
	Timestamp bool
}

func (e *RecordErrors) Error() string {
	if e.Timestamp {
		return fmt.Sprintf("%d records refused, at least one for its timestamp (first: record %d: %s)",
			len(e.Records), e.Records[0].Index, e.Records[0].Message)
	}
	return fmt.Sprintf("%d records refused (first: record %d: %s)", len(e.Records), e.Records[0].Index, e.Records[0].Message)
}

// CheckRecords walks every record of a v2 batch the way Kafka's leader
// does before it appends a client's batch (LogValidator iterating
// DefaultRecord.readFrom): each record must parse and fill exactly its
// declared length, the batch must hold NumRecords records and nothing
// after them, and a compressed batch is decompressed to check that, as
// a stream, so it never needs its inflated size in memory. Each record
// is then held to the topic's rules (a key, a timestamp in bounds).
// Keys, values and headers are skipped, not read.
//
// It returns the largest record timestamp (-1 if none has one: what
// Kafka writes as the batch's max timestamp, whatever the producer
// wrote) and nil, an error wrapping ErrMalformedRecords, or a
// *RecordErrors listing every record the rules refuse.
func CheckRecords(raw []byte, h *Header, rules Rules) (maxTimestamp int64, err error) {
	if len(raw) < HeaderSize || h.Size() != len(raw) {
		return -1, fmt.Errorf("%w: batch of %d bytes", ErrMalformedRecords, len(raw))
	}
	c := newRuleCheck(h, rules)
	err = c.check(raw[HeaderSize:], h)
	return c.maxTs, err
}

func (c *ruleCheck) check(section []byte, h *Header) error {
	switch h.Codec() {
	case CodecNone:
		return c.walk(section, h.NumRecords)
	case CodecSnappy:
		buf := inflatedBufs.Get().(*[]byte)
		inflated, err := unsnappyAppend((*buf)[:0], section)
		if err == nil {
			err = c.walk(inflated, h.NumRecords)
		} else {
			err = fmt.Errorf("%w: %v", ErrMalformedRecords, err)
		}
		if cap(inflated) > cap(*buf) && cap(inflated) <= maxPooledInflated {
			*buf = inflated[:0] // grown; on an error inflated is nil and *buf stays
		}
		inflatedBufs.Put(buf)
		return err
	}
	streamSlots <- struct{}{}
	defer func() { <-streamSlots }()
	src, done, err := inflater(h.Codec(), section)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedRecords, err)
	}
	defer done()
	win := windows.Get().(*[]byte)
	defer windows.Put(win)
	s := scanner{src: src, win: *win}
	for i := range int(h.NumRecords) {
		keyed, tsDelta, err := s.record()
		if err != nil {
			return fmt.Errorf("%w: record %d of %d: %v", ErrMalformedRecords, i, h.NumRecords, err)
		}
		c.record(i, keyed, tsDelta)
	}
	if s.more() {
		return fmt.Errorf("%w: bytes after the last of %d records", ErrMalformedRecords, h.NumRecords)
	}
	if s.err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedRecords, s.err)
	}
	return c.result()
}

// ruleCheck holds one batch's records to a topic's Rules.
type ruleCheck struct {
	Rules
	first, max int64 // the batch's first and max timestamps
	maxTs      int64 // the largest record timestamp so far
	// lo and hi bound first+delta on the fast path: a record within them
	// that has a key when one is needed passes without a closer look.
	lo, hi    int64
	lat       bool // the producer set the LogAppendTime type
	refused   []RecordError
	timestamp bool // one of refused is for its timestamp
}

func newRuleCheck(h *Header, r Rules) ruleCheck {
	c := ruleCheck{Rules: r, first: h.BaseTimestamp, max: h.MaxTimestamp, maxTs: -1, lat: h.LogAppendTimeType(),
		lo: math.MinInt64, hi: math.MaxInt64}
	if r.CreateTime {
		c.lo, c.hi = r.MinTimestamp, r.MaxTimestamp
	}
	if c.lat {
		c.lo, c.hi = 0, -1 // every record takes the slow path
		// DefaultRecordBatch gives every record of such a batch its max
		// timestamp.
		c.maxTs = max(h.MaxTimestamp, -1)
	}
	return c
}

// record checks record i, which has a key or not and the timestamp delta.
func (c *ruleCheck) record(i int, keyed bool, tsDelta int64) {
	ts := c.first + tsDelta
	if !c.lat {
		c.maxTs = max(c.maxTs, ts)
	}
	if ts < c.lo || ts > c.hi || !keyed && c.NeedKey {
		c.slow(i, keyed, tsDelta)
	}
}

// slow is record's exact rule, as LogValidator.validateRecord: the key
// first, then the timestamp, at most one error per record.
func (c *ruleCheck) slow(i int, keyed bool, tsDelta int64) {
	if c.NeedKey && !keyed {
		c.refused = append(c.refused, RecordError{i, "compacted topic cannot accept a record without a key"})
		return
	}
	ts := c.first + tsDelta
	if c.lat {
		ts = c.max // DefaultRecordBatch gives every record of such a batch its max timestamp
	}
	switch {
	case c.CreateTime && ts != -1:
		if ts < c.MinTimestamp || ts > c.MaxTimestamp {
			c.refuse(i, fmt.Sprintf("timestamp %d is out of range: it should be within [%d, %d] (message.timestamp.before.max.ms and message.timestamp.after.max.ms)",
				ts, c.MinTimestamp, c.MaxTimestamp))
		}
	case c.lat:
		c.refuse(i, "a producer may not set the timestamp type to LogAppendTime")
	}
}

func (c *ruleCheck) refuse(i int, msg string) {
	c.refused = append(c.refused, RecordError{i, msg})
	c.timestamp = true
}

func (c *ruleCheck) result() error {
	if c.refused == nil {
		return nil
	}
	return &RecordErrors{Records: c.refused, Timestamp: c.timestamp}
}

var errRecordEOF = errors.New("premature end of the records")

// walk is CheckRecords over a records section held whole in memory: the
// same rules as the scanner below, on a slice, without a call per byte
// (it is the produce path of every uncompressed batch).
func (c *ruleCheck) walk(b []byte, count int32) error {
	first, lo, hi, needKey, maxTs := c.first, c.lo, c.hi, c.NeedKey, c.maxTs // record's fast path, in registers
	for i := range int(count) {
		length, n := zigzag(b)
		if n == 0 {
			length, n = zigzagLong(b, 5)
		}
		if n == 0 || length < 0 || length > int64(len(b)-n) {
			return fmt.Errorf("%w: record %d of %d: length %d with %d bytes left", ErrMalformedRecords, i, count, length, len(b)-max(n, 0))
		}
		r := b[n : n+int(length)]
		keyed, tsDelta, ok := plainBody(r)
		if !ok {
			var err error
			if keyed, tsDelta, err = recordBody(r); err != nil {
				return fmt.Errorf("%w: record %d of %d: %v", ErrMalformedRecords, i, count, err)
			}
		}
		ts := first + tsDelta
		maxTs = max(maxTs, ts)
		if ts < lo || ts > hi || !keyed && needKey {
			c.slow(i, keyed, tsDelta)
		}
		b = b[n+int(length):]
	}
	if !c.lat {
		c.maxTs = maxTs
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrMalformedRecords, len(b), count)
	}
	return c.result()
}

// zigzag decodes a zigzag varint of one or two bytes (most lengths and
// deltas) from the start of b, inlined; n == 0 when it is longer, short
// or b is empty: then zigzagLong decides.
func zigzag(b []byte) (v int64, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		return int64(b[0]>>1) ^ -int64(b[0]&1), 1
	}
	if len(b) > 1 && b[1] < 0x80 {
		u := uint64(b[0]&0x7f) | uint64(b[1])<<7
		return int64(u>>1) ^ -int64(u&1), 2
	}
	return 0, 0
}

// zigzagLong decodes a zigzag varint of at most maxLen bytes (5 for
// Kafka's varint, 10 for its varlong, as ByteUtils reads them); n == 0
// when b ends first or the varint is longer.
func zigzagLong(b []byte, maxLen int) (v int64, n int) {
	var u uint64
	for i, c := range b[:min(maxLen, len(b))] {
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, 0
}

// small decodes the zigzag varint of one or two bytes at r[p] and
// returns it and the position after it; q < 0 when it is longer or r
// ends first.
func small(r []byte, p int) (v int64, q int) {
	if p < len(r) && r[p] < 0x80 {
		return int64(r[p]>>1) ^ -int64(r[p]&1), p + 1
	}
	if p+1 < len(r) && r[p+1] < 0x80 {
		u := uint64(r[p]&0x7f) | uint64(r[p+1])<<7
		return int64(u>>1) ^ -int64(u&1), p + 2
	}
	return 0, -1
}

// plainBody is recordBody's fast path for the common record: varints of
// one or two bytes (the offset delta up to three) and no headers. ok is
// false for anything else, which recordBody then reads.
func plainBody(r []byte) (keyed bool, tsDelta int64, ok bool) {
	tsDelta, p := small(r, 1)
	if p < 0 {
		return false, 0, false
	}
	if _, q := small(r, p); q > 0 {
		p = q
	} else if p+2 < len(r) && r[p+2] < 0x80 {
		p += 3 // an offset delta of 8,192 or more
	} else {
		return false, 0, false
	}
	key, p := small(r, p)
	if p < 0 || key < -1 {
		return false, 0, false
	}
	p += int(max(key, 0))
	value, p := small(r, p)
	if p < 0 || value < -1 {
		return false, 0, false
	}
	p += int(max(value, 0))
	if p != len(r)-1 || r[p] != 0 { // no headers, nothing after
		return false, 0, false
	}
	return key >= 0, tsDelta, true
}

// recordBody checks one record's body (the bytes its length counts) and
// reports whether it has a key and its timestamp delta. Each field is
// read by the inlined zigzag, or by zigzagLong when that declines.
func recordBody(r []byte) (keyed bool, tsDelta int64, err error) {
	if len(r) == 0 {
		return false, 0, errors.New("empty record")
	}
	p := 1 // attributes
	// The timestamp delta (a varlong) and the offset delta.
	v, n := zigzag(r[p:])
	if n == 0 {
		if v, n = zigzagLong(r[p:], 10); n == 0 {
			return false, 0, errRecordEOF
		}
	}
	p += n
	tsDelta = v
	if _, n = zigzag(r[p:]); n == 0 { // the offset delta: not needed here
		if _, n = zigzagLong(r[p:], 5); n == 0 {
			return false, 0, errRecordEOF
		}
	}
	p += n
	// The key, then the value: a length (-1: null) and the bytes.
	var key int64
	for field := range 2 {
		if v, n = zigzag(r[p:]); n == 0 {
			if v, n = zigzagLong(r[p:], 5); n == 0 {
				return false, 0, errRecordEOF
			}
		}
		p += n
		if v < -1 || v > int64(len(r)-p) {
			return false, 0, fmt.Errorf("%s length %d with %d bytes left in the record", [...]string{"key", "value"}[field], v, len(r)-p)
		}
		if field == 0 {
			key = v
		}
		p += int(max(v, 0))
	}
	if v, n = zigzag(r[p:]); n == 0 {
		if v, n = zigzagLong(r[p:], 5); n == 0 {
			return false, 0, errRecordEOF
		}
	}
	p += n
	if v != 0 {
		if v < 0 || v > int64(len(r)-p) {
			return false, 0, fmt.Errorf("%d headers", v)
		}
		if p, err = recordHeaders(r, p, int(v)); err != nil {
			return false, 0, err
		}
	}
	if p != len(r) {
		return false, 0, fmt.Errorf("record of %d bytes holds %d", len(r), p)
	}
	return key >= 0, tsDelta, nil
}

// recordHeaders checks count headers at p in a record's body r: a key
// (length ≥ 0) and a value (length ≥ -1) each.
func recordHeaders(r []byte, p, count int) (int, error) {
	for range count {
		for part := range 2 {
			v, n := zigzagLong(r[p:], 5)
			if n == 0 {
				return p, errRecordEOF
			}
			p += n
			if v < int64(-part) || v > int64(len(r)-p) {
				return p, fmt.Errorf("header %s length %d with %d bytes left in the record", [...]string{"key", "value"}[part], v, len(r)-p)
			}
			p += int(max(v, 0))
		}
	}
	return p, nil
}

// scanner reads a records section: b is what is left of it, or, for a
// compressed batch, of the window last read from src.
type scanner struct {
	b   []byte
	src io.Reader // nil: b is all there is
	win []byte
	n   int // bytes consumed so far
	err error
}

// fill reads the next window from src; false at the end or on an error.
func (s *scanner) fill() bool {
	if s.src == nil || s.err != nil {
		return false
	}
	for {
		n, err := s.src.Read(s.win)
		if n > 0 {
			s.b = s.win[:n]
			return true
		}
		if err != nil {
			if err != io.EOF {
				s.err = err
			}
			s.src = nil
			return false
		}
	}
}

// more reports whether any byte is left.
func (s *scanner) more() bool { return len(s.b) > 0 || s.fill() }

func (s *scanner) byte() (byte, bool) {
	if len(s.b) == 0 && !s.fill() {
		return 0, false
	}
	c := s.b[0]
	s.b = s.b[1:]
	s.n++
	return c, true
}

// varint reads a zigzag varint of at most maxLen bytes (5 for Kafka's
// varint, 10 for its varlong, as ByteUtils reads them).
func (s *scanner) varint(maxLen int) (int64, error) {
	var u uint64
	for i := range maxLen {
		c, ok := s.byte()
		if !ok {
			return 0, errRecordEOF
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	return 0, errors.New("varint too long")
}

// skip consumes n bytes.
func (s *scanner) skip(n int64) error {
	for n > 0 {
		if len(s.b) == 0 && !s.fill() {
			return errRecordEOF
		}
		k := min(n, int64(len(s.b)))
		s.b = s.b[k:]
		s.n += int(k)
		n -= k
	}
	return nil
}

// record parses one record (see the layout in internal/logtool's Record)
// and reports whether it has a key and its timestamp delta.
func (s *scanner) record() (keyed bool, tsDelta int64, err error) {
	length, err := s.varint(5)
	if err != nil {
		return false, 0, err
	}
	if length < 0 {
		return false, 0, fmt.Errorf("negative record length %d", length)
	}
	start := s.n
	// body reads one field of the body, failing once the body is overrun.
	body := func(maxLen int) int64 {
		if err != nil {
			return 0
		}
		var v int64
		if v, err = s.varint(maxLen); err == nil && int64(s.n-start) > length {
			err = fmt.Errorf("record of %d bytes overrun", length)
		}
		return v
	}
	span := func(n int64, what string) {
		if err != nil {
			return
		}
		if n < -1 || n > length-int64(s.n-start) {
			err = fmt.Errorf("%s length %d in a record of %d bytes", what, n, length)
			return
		}
		if n > 0 {
			err = s.skip(n)
		}
	}
	if _, ok := s.byte(); !ok || length < 1 { // attributes
		return false, 0, fmt.Errorf("record of %d bytes: no attributes", length)
	}
	tsDelta = body(10)
	body(5)
	key := body(5)
	span(key, "key")
	span(body(5), "value")
	headers := body(5)
	if err == nil && headers < 0 {
		return false, 0, fmt.Errorf("%d headers", headers)
	}
	for range headers {
		hk := body(5)
		if err == nil && hk < 0 {
			return false, 0, fmt.Errorf("header key length %d", hk)
		}
		span(hk, "header key")
		span(body(5), "header value")
		if err != nil {
			return false, 0, err
		}
	}
	if err != nil {
		return false, 0, err
	}
	if read := int64(s.n - start); read != length {
		return false, 0, fmt.Errorf("record of %d bytes holds %d", length, read)
	}
	return key >= 0, tsDelta, nil
}

// inflatedBufs hold snappy records sections while they are walked (kgo's
// default codec): a producer's batches inflate to about the same size
// each time, so the buffer is reused rather than made per batch. Those
// past maxPooledInflated are left to the collector.
var inflatedBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledInflated = 8 << 20

// streamSlots bounds the gzip, lz4 and zstd walks running at once to the
// CPUs, which they keep busy anyway. A produce request of 20 KB can hold
// a zstd frame that inflates to 200 MiB and makes its decoder take a
// 128 MiB window (the most zstd-jni and minibroker allow): each such walk
// costs its window and about half a second of CPU, so without a bound a
// few hundred connections could take the broker's memory. Kafka
// decompresses the same way, bounded by its request handler threads
// (num.io.threads, 8 by default).
var streamSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// windows are the scanners' read buffers for compressed batches.
var windows = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

var (
	gzipReaders sync.Pool // *gzip.Reader
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdReaders = sync.Pool{New: func() any {
		// A window beyond libzstd's default limit (2^27) is refused, as
		// zstd-jni would refuse it in Kafka, so a crafted frame cannot
		// claim gigabytes.
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(1<<27))
		if err != nil {
			panic(err) // only for invalid options
		}
		return d
	}}
)

// inflater returns a stream of the decompressed records section and a
// func that returns the decompressor to its pool.
func inflater(codec int8, src []byte) (io.Reader, func(), error) {
	switch codec {
	case CodecGzip:
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = zr.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, func() { gzipReaders.Put(zr) }, nil
	case CodecSnappy:
		out, err := Unsnappy(src)
		if err != nil {
			return nil, nil, err
		}
		return bytes.NewReader(out), func() {}, nil
	case CodecLZ4:
		zr := lz4Readers.Get().(*lz4.Reader)
		zr.Reset(bytes.NewReader(src))
		return zr, func() { lz4Readers.Put(zr) }, nil
	case CodecZstd:
		d := zstdReaders.Get().(*zstd.Decoder)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			zstdReaders.Put(d)
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		return d, func() { d.Reset(nil); zstdReaders.Put(d) }, nil
	}
	return nil, nil, fmt.Errorf("unknown codec %d", codec)
}

// snappyMaxRatio bounds what a snappy block may claim to inflate to: no
// snappy element writes more than 64 bytes for its 3, so a block whose
// header claims more is not snappy (s2, which also decodes snappy, has
// elements that repeat further).
const snappyMaxRatio = 32

// xerialMagic starts the framing the Java client's snappy stream writes:
// 8 magic bytes, two int32 versions, then blocks of (int32 length, raw
// snappy block). Producers other than Java write one raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// Unsnappy decompresses a snappy records section in either framing.
func Unsnappy(src []byte) ([]byte, error) { return unsnappyAppend(nil, src) }

// unsnappyAppend appends the decompressed records section to out.
func unsnappyAppend(out, src []byte) ([]byte, error) {
	if len(src) < 16 || !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(out, src)
	}
	for rest := src[16:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errors.New("snappy: truncated xerial block length")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, fmt.Errorf("snappy: xerial block of %d bytes, %d left", n, len(rest))
		}
		var err error
		if out, err = snappyBlock(out, rest[:n]); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

// snappyBlock appends the decoding of one raw snappy block to dst.
func snappyBlock(dst, block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if n > snappyMaxRatio*len(block)+64 {
		return nil, fmt.Errorf("snappy: a block of %d bytes claims %d", len(block), n)
	}
	dst = slices.Grow(dst, n)[:len(dst)+n] // s2.Decode writes all n bytes
	if _, err := s2.Decode(dst[len(dst)-n:], block); err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	return dst, nil
}

// RecordIter walks the records of a records section held whole and
// decompressed (RecordsSection, inflated when the batch is compressed)
// for each record's offset and timestamp deltas. It reads a record's
// length, attributes and the two deltas and skips the rest; it does not
// check the key, value or headers (CheckRecords does).
type RecordIter struct {
	b    []byte
	left int32
	err  error
}

// NewRecordIter walks the count records (the batch's NumRecords) at the
// start of section.
func NewRecordIter(section []byte, count int32) RecordIter {
	return RecordIter{b: section, left: count}
}

// Next is the next record's offset delta (from the batch's BaseOffset)
// and timestamp delta (from its BaseTimestamp). ok is false after the
// last record and at a record that does not parse; Err tells which.
func (it *RecordIter) Next() (offsetDelta int32, timestampDelta int64, ok bool) {
	if it.left <= 0 || it.err != nil {
		return 0, 0, false
	}
	length, n := zigzagLong(it.b, 5)
	if n == 0 || length < 0 || length > int64(len(it.b)-n) {
		it.err = fmt.Errorf("%w: record length %d with %d bytes left", ErrMalformedRecords, length, len(it.b)-n)
		return 0, 0, false
	}
	r := it.b[n : n+int(length)]
	it.b = it.b[n+int(length):]
	if len(r) == 0 {
		it.err = fmt.Errorf("%w: empty record", ErrMalformedRecords)
		return 0, 0, false
	}
	ts, m := zigzagLong(r[1:], 10)
	if m == 0 {
		it.err = fmt.Errorf("%w: timestamp delta: %v", ErrMalformedRecords, errRecordEOF)
		return 0, 0, false
	}
	off, k := zigzagLong(r[1+m:], 5)
	if k == 0 || off != int64(int32(off)) {
		it.err = fmt.Errorf("%w: offset delta: %v", ErrMalformedRecords, errRecordEOF)
		return 0, 0, false
	}
	it.left--
	return int32(off), ts, true
}

// Err is why Next stopped before count records, or nil.
func (it *RecordIter) Err() error { return it.err }
