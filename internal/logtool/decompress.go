package logtool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/minibroker/minibroker/internal/batch"
)

// DefaultMaxDecompressedBytes bounds what one batch may inflate to, so a
// crafted or damaged batch cannot exhaust memory.
const DefaultMaxDecompressedBytes = 256 << 20

var errTooLarge = errors.New("decompressed size exceeds the limit")

// decompress inflates the records section of a batch compressed with
// codec (the Attributes codec number), producing at most max bytes.
func decompress(codec int8, src []byte, max int) ([]byte, error) {
	switch codec {
	case batch.CodecNone:
		return src, nil
	case batch.CodecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return readLimited(zr, max, "gzip")
	case batch.CodecSnappy:
		out, err := batch.Unsnappy(src)
		if err == nil && len(out) > max {
			return nil, fmt.Errorf("snappy: %w (%d bytes)", errTooLarge, max)
		}
		return out, err
	case batch.CodecLZ4:
		return readLimited(lz4.NewReader(bytes.NewReader(src)), max, "lz4")
	case batch.CodecZstd:
		dec, err := zstdDecoder(max)
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		out, err := dec.DecodeAll(src, nil)
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown codec %d", codec)
}

// zstdDecoders holds one decoder per output bound: building a decoder
// costs far more than decoding a batch, and DecodeAll is safe for
// concurrent use.
var zstdDecoders struct {
	sync.Mutex
	byMax map[int]*zstd.Decoder
}

func zstdDecoder(max int) (*zstd.Decoder, error) {
	zstdDecoders.Lock()
	defer zstdDecoders.Unlock()
	if d, ok := zstdDecoders.byMax[max]; ok {
		return d, nil
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(max)))
	if err != nil {
		return nil, err
	}
	if zstdDecoders.byMax == nil {
		zstdDecoders.byMax = make(map[int]*zstd.Decoder)
	}
	zstdDecoders.byMax[max] = d
	return d, nil
}

func readLimited(r io.Reader, max int, name string) ([]byte, error) {
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if n > int64(max) {
		return nil, fmt.Errorf("%s: %w (%d bytes)", name, errTooLarge, max)
	}
	return out.Bytes(), nil
}
