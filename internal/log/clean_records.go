package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/minibroker/minibroker/internal/batch"
)

// The cleaner's view of the records inside a batch, and the rebuilding of
// a batch from the records it keeps (Kafka's MemoryRecords.filterTo and
// buildRetainedRecordsInto).
//
// A record (magic v2), as the cleaner reads it:
//
//	length          varint   bytes after this field
//	attributes      int8     unused, 0
//	timestampDelta  varlong  from the batch's BaseTimestamp
//	offsetDelta     varint   from the batch's BaseOffset
//	keyLength       varint   -1: no key
//	key             bytes
//	valueLength     varint   -1: no value (a tombstone)
//	value, headers  bytes    copied as they are

// attrDeleteHorizon is Kafka's DELETE_HORIZON_FLAG_MASK (KIP-534): the
// batch's BaseTimestamp is the time after which its tombstones and, for a
// control batch, its marker may be removed. Record timestamps stay
// BaseTimestamp + timestampDelta, so the cleaner rewrites the deltas when
// it moves BaseTimestamp.
const attrDeleteHorizon = 0x40

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errCleanRecord = errors.New("log: cleaner: malformed record")

// cleanRecord is one record of a batch being cleaned.
type cleanRecord struct {
	offsetDelta int32
	timestamp   int64  // absolute: BaseTimestamp + delta
	key         []byte // nil: no key
	hasKey      bool
	tombstone   bool
	rest        []byte // keyLength onwards (key, value, headers), copied on rebuild
}

func varint(b []byte) (int64, int) { return binary.Varint(b) }

// parseRecords splits an uncompressed records section into records.
func parseRecords(section []byte, h *batch.Header, dst []cleanRecord) ([]cleanRecord, error) {
	b := section
	for i := int32(0); i < h.NumRecords; i++ {
		length, n := varint(b)
		if n <= 0 || length < 1 || length > int64(len(b)-n) {
			return nil, fmt.Errorf("%w: length", errCleanRecord)
		}
		r := b[n : n+int(length)]
		b = b[n+int(length):]
		p := 1 // attributes
		tsDelta, m := varint(r[p:])
		if m <= 0 {
			return nil, fmt.Errorf("%w: timestamp", errCleanRecord)
		}
		p += m
		offDelta, m := varint(r[p:])
		if m <= 0 || offDelta != int64(int32(offDelta)) {
			return nil, fmt.Errorf("%w: offset delta", errCleanRecord)
		}
		p += m
		rest := r[p:]
		keyLen, m := varint(r[p:])
		if m <= 0 || keyLen < -1 || keyLen > int64(len(r)-p-m) {
			return nil, fmt.Errorf("%w: key", errCleanRecord)
		}
		p += m
		rec := cleanRecord{offsetDelta: int32(offDelta), timestamp: h.BaseTimestamp + tsDelta, rest: rest}
		if keyLen >= 0 {
			rec.hasKey, rec.key = true, r[p:p+int(keyLen)]
			p += int(keyLen)
		}
		valLen, m := varint(r[p:])
		if m <= 0 || valLen < -1 {
			return nil, fmt.Errorf("%w: value", errCleanRecord)
		}
		rec.tombstone = valLen < 0
		dst = append(dst, rec)
	}
	return dst, nil
}

// rebuildBatch writes a batch holding kept, with the original's base
// offset, last offset (so the producer's last sequence survives, as
// Kafka's overrideLastOffset), producer fields, leader epoch, codec and
// max timestamp. horizon >= 0 sets the delete horizon (KIP-534). With no
// record kept it writes the empty header Kafka's writeEmptyHeader writes.
//
// Deviation: Kafka recomputes the max timestamp from the records kept;
// minibroker keeps the original's, so that the producer state rebuilt
// from a cleaned batch (its last timestamp, which producer expiry reads)
// is what it was before cleaning.
func rebuildBatch(dst []byte, h *batch.Header, kept []cleanRecord, horizon int64) ([]byte, error) {
	attrs := h.Attributes &^ attrDeleteHorizon
	baseTs := h.BaseTimestamp
	if h.Attributes&attrDeleteHorizon != 0 && horizon < 0 {
		horizon = h.BaseTimestamp // keep the horizon already set
	}
	if horizon >= 0 {
		attrs |= attrDeleteHorizon
		baseTs = horizon
	} else if len(kept) > 0 && !h.LogAppendTimeType() {
		baseTs = kept[0].timestamp
	}
	var body []byte
	for _, r := range kept {
		var rec []byte
		rec = append(rec, 0)
		rec = binary.AppendVarint(rec, r.timestamp-baseTs)
		rec = binary.AppendVarint(rec, int64(r.offsetDelta))
		rec = append(rec, r.rest...)
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	codec := h.Codec()
	if len(kept) == 0 {
		codec = batch.CodecNone
		attrs &^= batch.AttrCompressionMask
	}
	var err error
	if body, err = compressRecords(codec, body); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.BaseOffset))
	dst = binary.BigEndian.AppendUint32(dst, uint32(batch.HeaderSize-batch.LogOverhead+len(body)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.PartitionLeaderEpoch))
	dst = append(dst, 2)
	dst = binary.BigEndian.AppendUint32(dst, 0) // CRC, below
	dst = binary.BigEndian.AppendUint16(dst, uint16(attrs))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.LastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(baseTs))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(kept)))
	dst = append(dst, body...)
	b := dst[start:]
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return dst, nil
}

// compressRecords compresses a records section with the batch's codec, so a
// cleaned batch keeps the compression its producer chose (Kafka's
// buildRetainedRecordsInto does the same).
func compressRecords(codec int8, body []byte) ([]byte, error) {
	switch codec {
	case batch.CodecNone:
		return body, nil
	case batch.CodecGzip:
		var out bytes.Buffer
		w := gzip.NewWriter(&out)
		if _, err := w.Write(body); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return out.Bytes(), nil
	case batch.CodecSnappy:
		return s2.EncodeSnappy(nil, body), nil
	case batch.CodecLZ4:
		var out bytes.Buffer
		w := lz4.NewWriter(&out)
		if _, err := w.Write(body); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return out.Bytes(), nil
	case batch.CodecZstd:
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer enc.Close()
		return enc.EncodeAll(body, nil), nil
	}
	return nil, fmt.Errorf("log: cleaner: unknown codec %d", codec)
}
