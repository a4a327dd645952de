package logtool

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/minibroker/minibroker/internal/batch"
)

// Record is one decoded record of a v2 batch. A record inside a batch:
//
//	varint    Length (bytes after this field)
//	int8      Attributes (unused, 0)
//	varlong   TimestampDelta (from the batch's BaseTimestamp)
//	varint    OffsetDelta    (from the batch's BaseOffset)
//	varint    KeyLength (-1: null key), then the key
//	varint    ValueLength (-1: null value), then the value
//	varint    HeaderCount, then per header:
//	            varint key length, key (string), varint value length (-1: null), value
//
// All varints are zigzag encoded, as encoding/binary.Varint reads them.
type Record struct {
	Offset     int64
	Timestamp  int64
	Sequence   int32 // -1 for a batch without sequences
	Attributes int8
	Key        []byte // nil: null key
	Value      []byte // nil: null value
	Headers    []RecordHeader
}

// RecordHeader is one record header.
type RecordHeader struct {
	Key   string
	Value []byte // nil: null value
}

var errRecords = errors.New("malformed records")

// DecodeRecords decompresses a whole batch's records section (at most
// maxBytes after decompression) and decodes every record. It returns the
// records decoded before an error, if any.
func DecodeRecords(raw []byte, h *batch.Header, maxBytes int) ([]Record, error) {
	if len(raw) < batch.HeaderSize || h.Size() != len(raw) {
		return nil, fmt.Errorf("%w: batch of %d bytes", errRecords, len(raw))
	}
	section, _ := batch.RecordsSection(raw) // raw holds the header: checked above
	data, err := batch.Inflate(h.Codec(), section, maxBytes)
	if err != nil {
		return nil, err
	}
	var out []Record
	for i := int32(0); i < h.NumRecords; i++ {
		if len(data) == 0 {
			return out, fmt.Errorf("%w: %d of %d records present", errRecords, i, h.NumRecords)
		}
		r, rest, err := decodeRecord(data, h)
		if err != nil {
			return out, fmt.Errorf("record %d: %w", i, err)
		}
		out = append(out, r)
		data = rest
	}
	if len(data) != 0 {
		return out, fmt.Errorf("%w: %d bytes after the last of %d records", errRecords, len(data), h.NumRecords)
	}
	return out, nil
}

// recReader reads zigzag varints and spans, remembering the first error.
type recReader struct {
	b   []byte
	err error
}

func (r *recReader) varlong() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad varint", errRecords)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) varint() int32 {
	v := r.varlong()
	if r.err == nil && (v < -1<<31 || v > 1<<31-1) {
		r.err = fmt.Errorf("%w: varint %d out of range", errRecords, v)
	}
	return int32(v)
}

// bytes reads a varint length and that many bytes; -1 is null.
func (r *recReader) bytes() []byte {
	n := r.varint()
	if r.err != nil || n == -1 {
		return nil
	}
	if n < -1 || int64(n) > int64(len(r.b)) {
		r.err = fmt.Errorf("%w: length %d with %d bytes left", errRecords, n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func decodeRecord(data []byte, h *batch.Header) (Record, []byte, error) {
	var rec Record
	r := recReader{b: data}
	length := r.varint()
	if r.err != nil {
		return rec, nil, r.err
	}
	if length < 0 || int64(length) > int64(len(r.b)) {
		return rec, nil, fmt.Errorf("%w: record length %d with %d bytes left", errRecords, length, len(r.b))
	}
	rest := r.b[length:]
	r.b = r.b[:length]
	if len(r.b) < 1 {
		return rec, nil, fmt.Errorf("%w: empty record", errRecords)
	}
	rec.Attributes = int8(r.b[0])
	r.b = r.b[1:]
	tsDelta := r.varlong()
	offDelta := r.varint()
	rec.Key = r.bytes()
	rec.Value = r.bytes()
	nh := r.varint()
	if r.err == nil && (nh < 0 || int64(nh) > int64(len(r.b))) {
		r.err = fmt.Errorf("%w: %d headers in %d bytes", errRecords, nh, len(r.b))
	}
	for i := int32(0); i < nh && r.err == nil; i++ {
		k := r.bytes()
		v := r.bytes()
		rec.Headers = append(rec.Headers, RecordHeader{Key: string(k), Value: v})
	}
	if r.err != nil {
		return rec, nil, r.err
	}
	if len(r.b) != 0 {
		return rec, nil, fmt.Errorf("%w: %d bytes left inside the record", errRecords, len(r.b))
	}
	rec.Timestamp = h.BaseTimestamp + tsDelta
	if h.LogAppendTimeType() {
		rec.Timestamp = h.MaxTimestamp
	}
	rec.Offset = h.BaseOffset + int64(offDelta)
	rec.Sequence = -1
	if h.BaseSequence >= 0 {
		rec.Sequence = batch.IncrementSequence(h.BaseSequence, offDelta)
	}
	return rec, rest, nil
}
