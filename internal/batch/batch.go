// Package batch reads and writes the fixed header of Kafka record batches
// (magic v2) and the control records minibroker writes or interprets.
//
// A record batch, as it lies on disk and on the wire (big endian):
//
//	offset  width  field
//	     0      8  BaseOffset            (rewritten by the broker on append)
//	     8      4  BatchLength           (bytes after this field)
//	    12      4  PartitionLeaderEpoch  (rewritten by the broker on append)
//	    16      1  Magic                 (always 2)
//	    17      4  CRC                   (CRC-32C of bytes 21..end)
//	    21      2  Attributes            (bits 0-2 codec, 3 timestamp type,
//	                                      4 transactional, 5 control)
//	    23      4  LastOffsetDelta
//	    27      8  BaseTimestamp
//	    35      8  MaxTimestamp
//	    43      8  ProducerID
//	    51      2  ProducerEpoch
//	    53      4  BaseSequence
//	    57      4  NumRecords
//	    61      …  records (compressed as a whole when codec != 0)
//
// The CRC covers Attributes onward, so the broker may rewrite BaseOffset and
// PartitionLeaderEpoch without recomputing it; minibroker never rewrites
// anything else in a batch.
package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of a v2 batch header, records excluded.
const HeaderSize = 61

// LengthOffset is where BatchLength sits; BaseOffset+BatchLength = 12 bytes
// precede the part that BatchLength counts.
const (
	LengthOffset = 8
	LogOverhead  = 12
	crcOffset    = 17
	attrOffset   = 21
)

// NoProducerID marks a batch that is neither idempotent nor transactional.
const NoProducerID = -1

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08
	AttrTransactional   = 0x10
	AttrControl         = 0x20
)

// Compression codecs as numbered in Attributes.
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLZ4    = 3
	CodecZstd   = 4
)

// Errors returned by Parse and Validate.
var (
	ErrShort    = errors.New("batch: truncated batch")
	ErrMagic    = errors.New("batch: unsupported magic")
	ErrCRC      = errors.New("batch: CRC mismatch")
	ErrInvalid  = errors.New("batch: invalid batch")
	crc32cTable = crc32.MakeTable(crc32.Castagnoli)
)

// Header is the decoded fixed part of a v2 record batch.
type Header struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the batch's total size in bytes, including offset and length.
func (h *Header) Size() int { return int(h.BatchLength) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// LastSequence is the sequence of the batch's last record, wrapping at
// 2^31-1 as Kafka does.
func (h *Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	return IncrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// IncrementSequence adds inc to seq with Kafka's wraparound (after
// MaxInt32 comes 0).
func IncrementSequence(seq, inc int32) int32 {
	if seq > int32(^uint32(0)>>1)-inc {
		return inc - (int32(^uint32(0)>>1) - seq) - 1
	}
	return seq + inc
}

func (h *Header) Codec() int8             { return int8(h.Attributes & AttrCompressionMask) }
func (h *Header) IsTransactional() bool   { return h.Attributes&AttrTransactional != 0 }
func (h *Header) IsControl() bool         { return h.Attributes&AttrControl != 0 }
func (h *Header) HasProducer() bool       { return h.ProducerID >= 0 }
func (h *Header) LogAppendTimeType() bool { return h.Attributes&AttrTimestampType != 0 }

// ParseHeader decodes the fixed header at the start of b. It checks only
// that enough bytes are present and the magic is 2.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) <= magicOffset {
		return h, ErrShort
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[0:]))
	h.BatchLength = int32(binary.BigEndian.Uint32(b[8:]))
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[leaderEpochOffset:]))
	h.Magic = int8(b[magicOffset])
	if h.Magic != 2 {
		return h, fmt.Errorf("%w %d", ErrMagic, h.Magic)
	}
	if len(b) < HeaderSize {
		return h, ErrShort
	}
	h.CRC = binary.BigEndian.Uint32(b[17:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[21:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[23:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[27:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[35:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[43:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[51:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[53:]))
	h.NumRecords = int32(binary.BigEndian.Uint32(b[57:]))
	return h, nil
}

// Validate checks a whole batch: length field against the slice, header
// sanity, and the CRC. b must hold exactly one batch.
func Validate(b []byte) (Header, error) {
	h, err := ValidateFraming(b)
	if err != nil {
		return h, err
	}
	if crc32.Checksum(b[attrOffset:], crc32cTable) != h.CRC {
		return h, ErrCRC
	}
	return h, nil
}

// ValidateFraming is Validate without the CRC: the length field against
// the slice and header sanity. It is for bytes whose CRC was checked
// before (internal/log serves bytes it has verified once this way).
func ValidateFraming(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.BatchLength < HeaderSize-LogOverhead || h.Size() != len(b) {
		return h, fmt.Errorf("%w: length %d for %d bytes", ErrInvalid, h.BatchLength, len(b))
	}
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 {
		return h, fmt.Errorf("%w: negative count or delta", ErrInvalid)
	}
	if h.Codec() == CodecNone && h.NumRecords > 0 && int64(h.NumRecords) > int64(len(b)-HeaderSize) {
		return h, fmt.Errorf("%w: %d records in %d bytes", ErrInvalid, h.NumRecords, len(b)-HeaderSize)
	}
	if h.Codec() > CodecZstd {
		return h, fmt.Errorf("%w: codec %d", ErrInvalid, h.Codec())
	}
	return h, nil
}

// ComputeCRC returns the CRC-32C a batch's header should carry.
func ComputeCRC(b []byte) uint32 { return crc32.Checksum(b[attrOffset:], crc32cTable) }

// Accessors of single header fields of the batch at the start of b, for
// callers that must not parse the whole header (ok false: b is too short
// to hold the field; they never panic). Nothing outside this package
// indexes a batch's bytes.
const (
	leaderEpochOffset  = 12
	magicOffset        = 16
	maxTimestampOffset = 35
)

// SizeOf is the total size the batch at b declares (BatchLength plus
// LogOverhead), read from its length field alone: it may be below
// HeaderSize or beyond len(b) when b is damaged or cut, which the caller
// checks.
func SizeOf(b []byte) (int64, bool) {
	if len(b) < LogOverhead {
		return 0, false
	}
	return int64(int32(binary.BigEndian.Uint32(b[LengthOffset:]))) + LogOverhead, true
}

// BaseOffsetOf is the batch's base offset.
func BaseOffsetOf(b []byte) (int64, bool) {
	if len(b) < LengthOffset {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b)), true
}

// LeaderEpochOf is the batch's partition leader epoch.
func LeaderEpochOf(b []byte) (int32, bool) {
	if len(b) < leaderEpochOffset+4 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(b[leaderEpochOffset:])), true
}

// MagicOf is the batch's magic byte.
func MagicOf(b []byte) (int8, bool) {
	if len(b) <= magicOffset {
		return 0, false
	}
	return int8(b[magicOffset]), true
}

// CodecOf is the compression codec in the batch's attributes.
func CodecOf(b []byte) (int8, bool) {
	if len(b) < attrOffset+2 {
		return 0, false
	}
	return int8(binary.BigEndian.Uint16(b[attrOffset:]) & AttrCompressionMask), true
}

// CRCOf is the CRC the batch's header carries.
func CRCOf(b []byte) (uint32, bool) {
	if len(b) < attrOffset {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[crcOffset:]), true
}

// RecordsSection is the batch's records section as it lies in b (still
// compressed when the codec is not none): the bytes after the header.
func RecordsSection(b []byte) ([]byte, bool) {
	if len(b) < HeaderSize {
		return nil, false
	}
	return b[HeaderSize:], true
}

// SetCRC writes the CRC the batch's bytes call for (ComputeCRC).
func SetCRC(b []byte) { binary.BigEndian.PutUint32(b[crcOffset:], ComputeCRC(b)) }

// SetMaxTimestamp writes a batch's max timestamp and timestamp type
// (LogAppendTime or CreateTime) and recomputes its CRC, as Kafka's
// RecordBatch.setMaxTimestamp.
func SetMaxTimestamp(b []byte, ts int64, logAppendTime bool) {
	attrs := binary.BigEndian.Uint16(b[attrOffset:]) &^ AttrTimestampType
	if logAppendTime {
		attrs |= AttrTimestampType
	}
	binary.BigEndian.PutUint16(b[attrOffset:], attrs)
	binary.BigEndian.PutUint64(b[maxTimestampOffset:], uint64(ts))
	SetCRC(b)
}

// SetBaseOffset rewrites the base offset of the batch at the start of b.
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[0:], uint64(off)) }

// SetPartitionLeaderEpoch rewrites the leader epoch of the batch at b.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[leaderEpochOffset:], uint32(epoch))
}

// Iter walks a concatenation of batches without copying. A trailing partial
// batch (as Fetch responses may carry) stops iteration without an error;
// Err reports a malformed one.
type Iter struct {
	buf []byte
	pos int
	err error
}

// NewIter returns an iterator over the batches in b.
func NewIter(b []byte) *Iter { return &Iter{buf: b} }

// Next returns the next whole batch and its header, or ok=false at the end.
func (it *Iter) Next() (raw []byte, h Header, ok bool) {
	rest := it.buf[it.pos:]
	if len(rest) < LogOverhead {
		return nil, h, false
	}
	size64, _ := SizeOf(rest)
	size := int(size64)
	if size < HeaderSize {
		it.err = fmt.Errorf("%w: batch length %d at %d", ErrInvalid, size-LogOverhead, it.pos)
		return nil, h, false
	}
	if size > len(rest) {
		return nil, h, false // partial tail
	}
	raw = rest[:size]
	h, err := ParseHeader(raw)
	if err != nil {
		it.err = err
		return nil, h, false
	}
	it.pos += size
	return raw, h, true
}

// Pos is the byte position of the next batch.
func (it *Iter) Pos() int { return it.pos }

// Err is the error that stopped iteration, if any.
func (it *Iter) Err() error { return it.err }
