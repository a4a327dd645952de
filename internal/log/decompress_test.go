package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/minibroker/minibroker/internal/batch"
)

// compress encodes a records section as a producer would.
func compress(codec int8, recs []byte) []byte {
	var buf bytes.Buffer
	switch codec {
	case batch.CodecNone:
		return recs
	case batch.CodecGzip:
		w := gzip.NewWriter(&buf)
		w.Write(recs)
		w.Close()
	case batch.CodecSnappy:
		return s2.EncodeSnappy(nil, recs)
	case batch.CodecLZ4:
		w := lz4.NewWriter(&buf)
		w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)) // as the Java client writes
		w.Write(recs)
		w.Close()
	case batch.CodecZstd:
		zstdOnce.Do(func() { zstdEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1)) })
		return zstdEnc.EncodeAll(recs, nil)
	}
	return buf.Bytes()
}

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
)

// xerial frames recs as the Java client's snappy stream does.
func xerial(recs []byte) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for len(recs) > 0 {
		n := min(len(recs), 100)
		block := s2.EncodeSnappy(nil, recs[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		recs = recs[n:]
	}
	return out
}

// TestTimestampLookupsInCompressedBatches: ListOffsets by time and
// MAX_TIMESTAMP answer with the exact record inside compressed batches.
func TestTimestampLookupsInCompressedBatches(t *testing.T) {
	for _, codec := range []int8{batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd} {
		t.Run(fmt.Sprint(codec), func(t *testing.T) {
			l := openTest(t, t.TempDir(), testConfig(), Options{})
			defer l.Close()
			// 10 batches of 5 records; record at offset o has timestamp 1000+o.
			for i := range 10 {
				b := testBatch{base: int64(i * 5), records: 5, ts: 1000 + int64(i*5), valueSize: 50, codec: codec}.build()
				if _, err := l.Append(b); err != nil {
					t.Fatal(err)
				}
			}
			for _, ts := range []int64{1000, 1003, 1042, 1049} {
				if off, got, ok := l.OffsetForTimestamp(ts); !ok || off != ts-1000 || got != ts {
					t.Errorf("OffsetForTimestamp(%d) = %d,%d,%v", ts, off, got, ok)
				}
			}
			if off, ts := l.MaxTimestamp(); off != 49 || ts != 1049 {
				t.Errorf("MaxTimestamp = %d,%d", off, ts)
			}
		})
	}
}

// FuzzRecords: decompression of any batch bytes never panics.
func FuzzRecords(f *testing.F) {
	recs := bytes.Repeat([]byte("abc"), 40)
	for _, c := range []int8{batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd} {
		f.Add(c, compress(c, recs))
	}
	f.Add(int8(batch.CodecSnappy), xerial(recs))
	f.Fuzz(func(t *testing.T, codec int8, body []byte) {
		h := batch.Header{Attributes: int16(codec) & batch.AttrCompressionMask, NumRecords: 10}
		raw := append(make([]byte, batch.HeaderSize), body...)
		records(raw, &h)
		firstRecordAtOrAfter(raw, &h, 5, 0)
	})
}
