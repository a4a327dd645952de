package log

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/minibroker/minibroker/internal/batch"
)

// maxInflated bounds what one batch's records may inflate to when the log
// looks inside a compressed batch (OffsetForTimestamp, MaxTimestamp), so
// a damaged or crafted batch cannot exhaust memory.
const maxInflated = 64 << 20

var errInflatedTooLarge = errors.New("decompressed records exceed the limit")

// records returns the records section of a batch, decompressed. The log
// only decompresses to answer timestamp lookups; reads serve batches as
// they are.
func records(raw []byte, h *batch.Header) ([]byte, error) {
	src, ok := batch.RecordsSection(raw)
	if !ok {
		return nil, batch.ErrShort
	}
	switch h.Codec() {
	case batch.CodecNone:
		return src, nil
	case batch.CodecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return readAtMost(zr)
	case batch.CodecSnappy:
		out, err := batch.Unsnappy(src)
		if err == nil && len(out) > maxInflated {
			return nil, errInflatedTooLarge
		}
		return out, err
	case batch.CodecLZ4:
		return readAtMost(lz4.NewReader(bytes.NewReader(src)))
	case batch.CodecZstd:
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(maxInflated))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer dec.Close()
		return dec.DecodeAll(src, nil)
	}
	return nil, fmt.Errorf("unknown codec %d", h.Codec())
}

func readAtMost(r io.Reader) ([]byte, error) {
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(r, maxInflated+1))
	if err != nil {
		return nil, err
	}
	if n > maxInflated {
		return nil, errInflatedTooLarge
	}
	return out.Bytes(), nil
}
