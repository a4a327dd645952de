package log

import (
	"github.com/minibroker/minibroker/internal/batch"
)

// maxInflated bounds what one batch's records may inflate to when the log
// looks inside a compressed batch (OffsetForTimestamp, MaxTimestamp, the
// cleaner), so a damaged batch cannot exhaust memory. 64 MiB is above
// what any batch the broker accepted inflates to at the default
// message.max.bytes (1 MiB compressed).
const maxInflated = 64 << 20

// records returns the records section of a batch, decompressed. The log
// only decompresses to answer timestamp lookups and to clean; reads serve
// batches as they are.
func records(raw []byte, h *batch.Header) ([]byte, error) {
	src, ok := batch.RecordsSection(raw)
	if !ok {
		return nil, batch.ErrShort
	}
	return batch.Inflate(h.Codec(), src, maxInflated)
}
