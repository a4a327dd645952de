package partition

import (
	"encoding/binary"
	"testing"

	"github.com/minibroker/minibroker/internal/batch"
	mlog "github.com/minibroker/minibroker/internal/log"
)

// FuzzValidateClientBatches: the produce-path validator refuses or accepts
// any bytes without panicking, and what it accepts is a whole sequence of
// valid, non-control batches with consistent counts, whose headers match
// their bytes.
func FuzzValidateClientBatches(f *testing.F) {
	f.Add(encode(-1, -1, -1, 3, false))
	f.Add(append(encode(5, 0, 0, 2, false), encode(5, 0, 2, 1, true)...))
	f.Add(batch.BarrierBatch("x", 1))
	// A max timestamp that is not the records' (and the LogAppendTime
	// type set): the validator rewrites both.
	wrong := encode(-1, -1, -1, 2, false)
	binary.BigEndian.PutUint16(wrong[21:], batch.AttrTimestampType)
	binary.BigEndian.PutUint64(wrong[35:], 999)
	binary.BigEndian.PutUint32(wrong[17:], batch.ComputeCRC(wrong))
	f.Add(wrong)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 2})
	cfg := &Config{Log: mlog.DefaultConfig(), MessageMaxBytes: 1 << 20}
	p := &Partition{}
	f.Fuzz(func(t *testing.T, in []byte) {
		bs, err := p.validateClientBatches(cfg, in)
		if err != nil {
			return
		}
		total := 0
		for _, b := range bs {
			h, err := batch.Validate(b.Raw)
			if err != nil || h.IsControl() || h.NumRecords != h.LastOffsetDelta+1 {
				t.Fatalf("accepted a bad batch: %+v %v", h, err)
			}
			// The header handed on matches the bytes, after any rewrite of
			// the max timestamp.
			if h != b.Header {
				t.Fatalf("header %+v, the bytes say %+v", b.Header, h)
			}
			total += len(b.Raw)
		}
		if total != len(in) {
			t.Fatalf("accepted %d of %d bytes", total, len(in))
		}
	})
}
