package batch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ErrInflatedTooLarge: a records section inflates past the caller's bound.
var ErrInflatedTooLarge = errors.New("decompressed records exceed the limit")

// Inflate returns a records section compressed with codec (the
// Attributes codec number) decompressed whole, at most max bytes of it:
// past that it fails with ErrInflatedTooLarge, so a damaged or crafted
// batch cannot exhaust memory. Each caller passes its own bound, since
// each reads batches of another origin: the log's timestamp lookups and
// cleaner read batches it accepted (internal/log maxInflated, 64 MiB),
// the log tools read any file they are pointed at (their
// MaxDecompressedBytes option, 256 MiB by default). A snappy section is
// bounded after it is inflated (snappy states its length; the framing
// caps a block at what its length field can say).
//
// Produce validation does not inflate whole: CheckRecords walks the
// records as a stream with pooled decompressors (records.go), bounded by
// the zstd window and the snappy ratio Kafka's decompressors allow.
func Inflate(codec int8, src []byte, max int) ([]byte, error) {
	switch codec {
	case CodecNone:
		return src, nil
	case CodecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return readAtMost(zr, max, "gzip")
	case CodecSnappy:
		out, err := Unsnappy(src)
		if err == nil && len(out) > max {
			return nil, fmt.Errorf("snappy: %w (%d bytes)", ErrInflatedTooLarge, max)
		}
		return out, err
	case CodecLZ4:
		return readAtMost(lz4.NewReader(bytes.NewReader(src)), max, "lz4")
	case CodecZstd:
		dec, err := zstdInflater(max)
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		out, err := dec.DecodeAll(src, nil)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, fmt.Errorf("zstd: %w (%d bytes): %w", ErrInflatedTooLarge, max, err)
		}
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown codec %d", codec)
}

// zstdInflaters holds one decoder per bound: building a decoder costs far
// more than decoding a batch, and DecodeAll is safe for concurrent use.
var zstdInflaters struct {
	sync.Mutex
	byMax map[int]*zstd.Decoder
}

func zstdInflater(max int) (*zstd.Decoder, error) {
	zstdInflaters.Lock()
	defer zstdInflaters.Unlock()
	if d, ok := zstdInflaters.byMax[max]; ok {
		return d, nil
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(max)))
	if err != nil {
		return nil, err
	}
	if zstdInflaters.byMax == nil {
		zstdInflaters.byMax = make(map[int]*zstd.Decoder)
	}
	zstdInflaters.byMax[max] = d
	return d, nil
}

func readAtMost(r io.Reader, max int, name string) ([]byte, error) {
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if n > int64(max) {
		return nil, fmt.Errorf("%s: %w (%d bytes)", name, ErrInflatedTooLarge, max)
	}
	return out.Bytes(), nil
}
