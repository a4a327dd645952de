package logtool

import (
	"fmt"
	"io"

	"github.com/minibroker/minibroker/internal/batch"
)

// Batch is one record batch read from a segment file.
type Batch struct {
	Position int64
	Raw      []byte // the whole batch; nil when Magic is not 2
	Header   batch.Header
	CRCValid bool
	// Problems lists what is wrong with a batch that could still be
	// framed (CRC mismatch, bad attributes, offsets not increasing).
	Problems []string
}

// Damage is where a segment stops being readable as batches.
type Damage struct {
	Position  int64
	Reason    string
	Remaining int64 // bytes from Position to the end of the file
	// TornTail is set when the damage is a batch cut short by the end of
	// the file: what a crash (or a broker appending right now) leaves.
	TornTail bool
}

func (d *Damage) String() string {
	return fmt.Sprintf("position %d: %s (%d bytes not read)", d.Position, d.Reason, d.Remaining)
}

// minBatchLength is the smallest BatchLength a v2 batch can have.
const minBatchLength = batch.HeaderSize - batch.LogOverhead

// ScanSegment calls fn for every batch of a segment of size bytes read
// through r, in file order. A batch whose length frames it inside the
// file is reported even when its CRC or magic is wrong, and scanning goes
// on after it; a length that cannot frame a batch ends the scan with a
// Damage, since nothing after it can be trusted. An error from r or fn is
// returned as is.
func ScanSegment(r io.ReaderAt, size int64, fn func(*Batch) error) (*Damage, error) {
	var pos int64
	var head [batch.LogOverhead + 5]byte // through Magic
	nextOffset := int64(-1)
	for pos < size {
		left := size - pos
		if left < int64(len(head)) {
			return &Damage{Position: pos, Remaining: left, TornTail: true,
				Reason: fmt.Sprintf("%d trailing bytes, too few for a batch header", left)}, nil
		}
		if _, err := r.ReadAt(head[:], pos); err != nil {
			return nil, fmt.Errorf("read at %d: %w", pos, err)
		}
		total, _ := batch.SizeOf(head[:]) // head holds through Magic
		length := total - batch.LogOverhead
		if length < minBatchLength {
			return &Damage{Position: pos, Remaining: left,
				Reason: fmt.Sprintf("batch length %d is below the minimum %d", length, minBatchLength)}, nil
		}
		if total > left {
			return &Damage{Position: pos, Remaining: left, TornTail: true,
				Reason: fmt.Sprintf("batch of %d bytes runs past the end of the file (%d bytes left)", total, left)}, nil
		}
		b := &Batch{Position: pos}
		if magic, _ := batch.MagicOf(head[:]); magic != 2 {
			b.Header.BaseOffset, _ = batch.BaseOffsetOf(head[:])
			b.Header.BatchLength = int32(length)
			b.Header.PartitionLeaderEpoch, _ = batch.LeaderEpochOf(head[:])
			b.Header.Magic = magic
			b.Problems = append(b.Problems, fmt.Sprintf("unsupported magic %d", magic))
		} else {
			raw := make([]byte, total)
			if _, err := r.ReadAt(raw, pos); err != nil {
				return nil, fmt.Errorf("read batch at %d: %w", pos, err)
			}
			h, err := batch.ParseHeader(raw)
			if err != nil { // cannot happen: length and magic were checked
				return &Damage{Position: pos, Remaining: left, Reason: err.Error()}, nil
			}
			b.Raw, b.Header = raw, h
			b.CRCValid = batch.ComputeCRC(raw) == h.CRC
			b.Problems = headerProblems(&h, len(raw))
			if !b.CRCValid {
				b.Problems = append(b.Problems, fmt.Sprintf("CRC %d, computed %d", h.CRC, batch.ComputeCRC(raw)))
			}
			if nextOffset >= 0 && h.BaseOffset < nextOffset {
				b.Problems = append(b.Problems, fmt.Sprintf("base offset %d does not follow the previous batch (next expected >= %d)", h.BaseOffset, nextOffset))
			}
			nextOffset = h.LastOffset() + 1
		}
		if err := fn(b); err != nil {
			return nil, err
		}
		pos += total
	}
	return nil, nil
}

// headerProblems checks the header fields batch.Validate checks, without
// the CRC (reported separately).
func headerProblems(h *batch.Header, size int) []string {
	var p []string
	if h.LastOffsetDelta < 0 {
		p = append(p, fmt.Sprintf("negative last offset delta %d", h.LastOffsetDelta))
	}
	if h.NumRecords < 0 {
		p = append(p, fmt.Sprintf("negative record count %d", h.NumRecords))
	}
	if h.Codec() > batch.CodecZstd {
		p = append(p, fmt.Sprintf("unknown codec %d", h.Codec()))
	}
	if h.Codec() == batch.CodecNone && int64(h.NumRecords) > int64(size-batch.HeaderSize) {
		p = append(p, fmt.Sprintf("%d records in %d bytes", h.NumRecords, size-batch.HeaderSize))
	}
	return p
}
