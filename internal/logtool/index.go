package logtool

import (
	"fmt"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/log"
)

// Index file layouts: internal/log/doc.go, read here through the log's
// own entry sizes and decoders. Kafka's are the same, except that Kafka
// preallocates its active segment's indexes with zero entries.
const (
	offsetEntrySize = log.OffsetIndexEntrySize
	timeEntrySize   = log.TimeIndexEntrySize
	txnEntrySize    = log.TxnIndexEntrySize
)

// OffsetEntry is an offset-index entry, made absolute.
type OffsetEntry struct {
	Offset   int64
	Position int64
}

// TimeEntry is a time-index entry, made absolute.
type TimeEntry struct {
	Timestamp int64
	Offset    int64
}

// TxnEntry is a transaction-index entry (an aborted transaction).
type TxnEntry struct {
	Version          int16
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// IndexTail describes bytes at the end of an index file that are not
// entries: a torn entry, or Kafka's zero preallocation.
type IndexTail struct {
	Position int64
	Bytes    int
	Reason   string
}

// DecodeOffsetIndex decodes an offset index whose segment starts at base.
// Zero entries after the first are taken as Kafka's preallocation and end
// the entries.
func DecodeOffsetIndex(data []byte, base int64) ([]OffsetEntry, *IndexTail) {
	var out []OffsetEntry
	n := len(data) / offsetEntrySize
	for i := 0; i < n; i++ {
		off, pos := log.DecodeOffsetIndexEntry(data[i*offsetEntrySize:], base)
		if i > 0 && off == base && pos == 0 {
			return out, &IndexTail{Position: int64(i * offsetEntrySize), Bytes: len(data) - i*offsetEntrySize,
				Reason: "zero entries (preallocated space)"}
		}
		out = append(out, OffsetEntry{Offset: off, Position: pos})
	}
	return out, partialTail(data, n*offsetEntrySize)
}

// DecodeTimeIndex decodes a time index whose segment starts at base.
func DecodeTimeIndex(data []byte, base int64) ([]TimeEntry, *IndexTail) {
	var out []TimeEntry
	n := len(data) / timeEntrySize
	for i := 0; i < n; i++ {
		ts, off := log.DecodeTimeIndexEntry(data[i*timeEntrySize:], base)
		if i > 0 && ts == 0 && off == base {
			return out, &IndexTail{Position: int64(i * timeEntrySize), Bytes: len(data) - i*timeEntrySize,
				Reason: "zero entries (preallocated space)"}
		}
		out = append(out, TimeEntry{Timestamp: ts, Offset: off})
	}
	return out, partialTail(data, n*timeEntrySize)
}

// DecodeTxnIndex decodes a transaction index.
func DecodeTxnIndex(data []byte) ([]TxnEntry, *IndexTail) {
	var out []TxnEntry
	n := len(data) / txnEntrySize
	for i := 0; i < n; i++ {
		v, t := log.DecodeTxnIndexEntry(data[i*txnEntrySize:])
		out = append(out, TxnEntry{Version: v, ProducerID: t.ProducerID, FirstOffset: t.FirstOffset,
			LastOffset: t.LastOffset, LastStableOffset: t.LastStableOffset})
	}
	return out, partialTail(data, n*txnEntrySize)
}

func partialTail(data []byte, whole int) *IndexTail {
	if whole == len(data) {
		return nil
	}
	return &IndexTail{Position: int64(whole), Bytes: len(data) - whole,
		Reason: fmt.Sprintf("%d bytes, less than one entry (torn write)", len(data)-whole)}
}

// segmentMap is what the deep checks need of a segment: every batch
// header by file position, in file order.
type segmentMap struct {
	batches []batchAt
	byPos   map[int64]int
	damage  *Damage
}

type batchAt struct {
	pos     int64
	header  batchSummary
	control *Control
}

// batchSummary is the part of a header the checks read.
type batchSummary struct {
	base, last, maxTs int64
	producerID        int64
	transactional     bool
	isControl         bool
}

// find returns the batch containing offset.
func (m *segmentMap) find(offset int64) (batchAt, bool) {
	lo, hi := 0, len(m.batches)
	for lo < hi {
		mid := (lo + hi) / 2
		if m.batches[mid].header.last < offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(m.batches) && m.batches[lo].header.base <= offset {
		return m.batches[lo], true
	}
	return batchAt{}, false
}

// checkOffsetEntry is Kafka's offset-index sanity check, for this log's
// layout: the entry names the last offset of the batch at its position.
// (Kafka's entries name a batch's last offset too; an entry naming any
// offset inside the batch at that position is accepted.)
func (m *segmentMap) checkOffsetEntry(e OffsetEntry, prev *OffsetEntry) string {
	if prev != nil && (e.Offset <= prev.Offset || e.Position <= prev.Position) {
		return fmt.Sprintf("entry does not increase (previous offset %d position %d)", prev.Offset, prev.Position)
	}
	i, ok := m.byPos[e.Position]
	if !ok {
		return fmt.Sprintf("no batch starts at position %d", e.Position)
	}
	h := m.batches[i].header
	if e.Offset < h.base || e.Offset > h.last {
		return fmt.Sprintf("batch at position %d holds offsets %d-%d", e.Position, h.base, h.last)
	}
	return ""
}

// checkTimeEntry: the entry's offset lies in a batch whose max timestamp is
// the entry's timestamp, and entries increase.
func (m *segmentMap) checkTimeEntry(e TimeEntry, prev *TimeEntry) string {
	if prev != nil && (e.Timestamp < prev.Timestamp || e.Offset < prev.Offset) {
		return fmt.Sprintf("entry goes backwards (previous timestamp %d offset %d)", prev.Timestamp, prev.Offset)
	}
	b, ok := m.find(e.Offset)
	if !ok {
		return fmt.Sprintf("no batch holds offset %d", e.Offset)
	}
	if b.header.maxTs != e.Timestamp {
		return fmt.Sprintf("batch %d-%d has max timestamp %d", b.header.base, b.header.last, b.header.maxTs)
	}
	return ""
}

// checkTxnEntry: an ABORT marker of the producer at LastOffset, and (when
// it is in this segment) a transactional batch of the producer at
// FirstOffset.
func (m *segmentMap) checkTxnEntry(e TxnEntry) string {
	b, ok := m.find(e.LastOffset)
	if !ok || b.header.base != e.LastOffset {
		return fmt.Sprintf("no batch at last offset %d", e.LastOffset)
	}
	if !b.header.isControl || b.header.producerID != e.ProducerID || b.control == nil || b.control.Type != batch.ControlAbort {
		return fmt.Sprintf("batch at %d is not an ABORT marker of producer %d", e.LastOffset, e.ProducerID)
	}
	if e.FirstOffset > e.LastOffset || e.LastStableOffset > e.LastOffset+1 {
		return "offsets out of order"
	}
	if len(m.batches) > 0 && e.FirstOffset >= m.batches[0].header.base {
		f, ok := m.find(e.FirstOffset)
		if !ok || f.header.producerID != e.ProducerID || !f.header.transactional || f.header.isControl {
			return fmt.Sprintf("no transactional batch of producer %d at first offset %d", e.ProducerID, e.FirstOffset)
		}
	}
	return ""
}
