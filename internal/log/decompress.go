package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
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
	if len(raw) < batch.HeaderSize {
		return nil, batch.ErrShort
	}
	src := raw[batch.HeaderSize:]
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
		return unsnappy(src)
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

// xerialHeader starts the snappy framing of the Java client: 8 magic
// bytes and two int32 versions, then blocks of int32 length + raw snappy.
// Other clients write one raw snappy block.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func unsnappy(src []byte) ([]byte, error) {
	if len(src) < 16 || !bytes.HasPrefix(src, xerialHeader) {
		return snappyBlock(nil, src)
	}
	var out []byte
	for rest := src[16:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errors.New("snappy: truncated block length")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, errors.New("snappy: truncated block")
		}
		var err error
		if out, err = snappyBlock(out, rest[:n]); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

func snappyBlock(dst, block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if n > maxInflated-len(dst) {
		return nil, errInflatedTooLarge
	}
	out, err := s2.Decode(make([]byte, n), block)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	return append(dst, out...), nil
}
