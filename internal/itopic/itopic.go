// Package itopic is an internal topic (__transaction_state, and the
// coordinators' other topics) as a coordinator writes it: batches of
// key/value records appended with origin COORDINATOR (uncompressed, no
// producer id), made durable by the partition's group commit (FlushTo), and
// read back from each partition's log start at the coordinator's
// start-up. Clients never write these topics (the broker refuses their
// Produce); they read them with Fetch.
package itopic

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/partition"
)

// BatchBytes bounds one appended batch: a start-up (or an upgrade) may
// write a partition's whole state at once.
const BatchBytes = 512 << 10

// Log is one internal topic over its partitions, in partition order.
type Log struct {
	Topic string
	Parts []*partition.Partition
	// Now stamps the batches (nil: time.Now).
	Now func() time.Time
}

// Partitions is the topic's partition count.
func (l Log) Partitions() int32 { return int32(len(l.Parts)) }

func (l Log) part(p int32) (*partition.Partition, error) {
	if p < 0 || int(p) >= len(l.Parts) {
		return nil, fmt.Errorf("%s has no partition %d", l.Topic, p)
	}
	return l.Parts[p], nil
}

// Append appends n records (rec(i) gives the i-th key and value; a nil
// value is a tombstone) to partition p, in batches of at most BatchBytes,
// and returns the partition's log end offset after them. Nothing is
// fsynced: Sync makes them durable.
func (l Log) Append(p int32, n int, rec func(i int) (key, value []byte)) (int64, error) {
	return l.AppendAs(p, n, rec, Producer{ID: -1})
}

// Producer is the producer of a transactional batch (ID -1: a plain
// batch, no producer).
type Producer struct {
	ID    int64
	Epoch int16
}

// AppendAs is Append with the batches transactional for prod (with
// NO_SEQUENCE, as Kafka's group coordinator writes a TxnOffsetCommit's
// records) when prod.ID is not -1.
func (l Log) AppendAs(p int32, n int, rec func(i int) (key, value []byte), prod Producer) (int64, error) {
	part, err := l.part(p)
	if err != nil {
		return 0, err
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	end := part.Offsets().LogEnd
	for i := 0; i < n; {
		j, size := i, 0
		var body []byte
		for j < n && (j == i || size < BatchBytes) {
			k, v := rec(j)
			kr := kmsg.Record{OffsetDelta: int32(j - i), Key: k, Value: v}
			kr.Length = int32(len(kr.AppendTo(nil)) - 1)
			before := len(body)
			body = kr.AppendTo(body)
			size += len(body) - before
			j++
		}
		last, err := part.AppendAsCoordinator(dataBatch(body, j-i, now().UnixMilli(), prod))
		if err != nil {
			return 0, fmt.Errorf("%s-%d: %w", l.Topic, p, err)
		}
		end = last + 1
		i = j
	}
	return end, nil
}

// WriteMarker appends a COMMIT or ABORT marker of producer pid to
// partition p and returns the log end offset after it (not fsynced).
func (l Log) WriteMarker(p int32, pid int64, epoch int16, commit bool, coordinatorEpoch int32) (int64, error) {
	part, err := l.part(p)
	if err != nil {
		return 0, err
	}
	off, err := part.WriteMarker(pid, epoch, commit, coordinatorEpoch)
	if err != nil {
		return 0, fmt.Errorf("%s-%d: %w", l.Topic, p, err)
	}
	return off + 1, nil
}

// End is partition p's log end offset (0 for a partition out of range).
func (l Log) End(p int32) int64 {
	part, err := l.part(p)
	if err != nil {
		return 0
	}
	return part.Offsets().LogEnd
}

// DataBatch wraps an encoded records section of n records in one
// uncompressed batch of magic 2 with no producer id.
func DataBatch(body []byte, n int, ts int64) []byte { return dataBatch(body, n, ts, Producer{ID: -1}) }

func dataBatch(body []byte, n int, ts int64, prod Producer) []byte {
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(n - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(n), Records: body}
	if prod.ID >= 0 {
		rb.ProducerID, rb.ProducerEpoch = prod.ID, prod.Epoch
		rb.Attributes |= batch.AttrTransactional
	}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	batch.SetCRC(raw)
	return raw
}

// Sync returns once every record of partition p below end is durable
// (the partition's group commit: concurrent callers share an fsync).
func (l Log) Sync(p int32, end int64) error {
	part, err := l.part(p)
	if err != nil {
		return err
	}
	if err := part.FlushTo(end); err != nil {
		return fmt.Errorf("%s-%d: %w", l.Topic, p, err)
	}
	return nil
}

// Err is the storage failure that took partition p offline for writes,
// nil while it is writable.
func (l Log) Err(p int32) error {
	part, err := l.part(p)
	if err != nil {
		return err
	}
	return part.Offline()
}

// Replay calls fn with the key and value of each record of partition p,
// from its log start to its end. Control batches and compressed batches
// are skipped: the coordinators write neither, and a topic an older
// minibroker made may hold a client's, which are not a coordinator's
// state.
func (l Log) Replay(p int32, fn func(key, value []byte)) error {
	return l.ReplayBatches(p, func(b BatchInfo, key, value []byte) {
		if !b.Control {
			fn(key, value)
		}
	})
}

// ReplayAt is Replay with each record's offset.
func (l Log) ReplayAt(p int32, fn func(offset int64, key, value []byte)) error {
	return l.ReplayBatches(p, func(b BatchInfo, key, value []byte) {
		if !b.Control {
			fn(b.Offset, key, value)
		}
	})
}

// BatchInfo is what Replay's reader learns of a record's batch.
type BatchInfo struct {
	Producer      Producer // the batch's producer id and epoch (-1: none)
	Transactional bool
	Control       bool // a COMMIT or ABORT marker (Commit says which), no key or value
	Commit        bool
	Offset        int64 // the record's offset (a marker's: its batch's)
}

// ReplayBatches is Replay with each record's batch, and with the
// transaction markers of producers (fn with a Control BatchInfo, nil key
// and value); other control batches and compressed batches are skipped.
func (l Log) ReplayBatches(p int32, fn func(b BatchInfo, key, value []byte)) error {
	part, err := l.part(p)
	if err != nil {
		return err
	}
	offs := part.Offsets()
	for at := offs.LogStart; at < offs.LogEnd; {
		raw, err := part.ReadRaw(at, offs.LogEnd, 1<<20)
		if err != nil {
			return fmt.Errorf("%s-%d at %d: %w", l.Topic, p, at, err)
		}
		it := batch.NewIter(raw)
		moved := false
		for {
			b, h, ok := it.Next()
			if !ok {
				break
			}
			moved = true
			at = h.LastOffset() + 1
			info := BatchInfo{Producer: Producer{ID: h.ProducerID, Epoch: h.ProducerEpoch},
				Transactional: h.IsTransactional(), Control: h.IsControl()}
			if h.IsControl() {
				if h.NumRecords == 0 || h.ProducerID < 0 {
					continue
				}
				c, err := batch.ReadControl(b)
				if err != nil || (c.Type != batch.ControlCommit && c.Type != batch.ControlAbort) {
					continue
				}
				info.Commit, info.Offset = c.Type == batch.ControlCommit, h.BaseOffset
				fn(info, nil, nil)
				continue
			}
			if h.Codec() != 0 {
				continue
			}
			section, ok := batch.RecordsSection(b)
			if !ok {
				continue
			}
			EachRecordAt(section, h.NumRecords, h.BaseOffset, func(off int64, key, value []byte) {
				info.Offset = off
				fn(info, key, value)
			})
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("%s-%d at %d: %w", l.Topic, p, at, err)
		}
		if !moved {
			break
		}
	}
	return nil
}

// EachRecord calls fn with the key and value of each of the n records of
// an uncompressed records section; it stops at one that does not parse.
func EachRecord(section []byte, n int32, fn func(key, value []byte)) {
	EachRecordAt(section, n, 0, func(_ int64, key, value []byte) { fn(key, value) })
}

// EachRecordAt is EachRecord with each record's offset (the batch's
// base offset plus the record's offset delta).
func EachRecordAt(section []byte, n int32, base int64, fn func(offset int64, key, value []byte)) {
	r := kbin.Reader{Src: section}
	for range n {
		length := r.Varint()
		if !r.Ok() || length < 0 {
			return
		}
		rec := kbin.Reader{Src: r.Span(int(length))}
		rec.Int8()    // attributes
		rec.Varlong() // timestamp delta
		delta := rec.Varint()
		var key, value []byte
		if kl := rec.Varint(); kl >= 0 {
			key = rec.Span(int(kl))
		}
		if vl := rec.Varint(); vl >= 0 {
			value = rec.Span(int(vl))
		}
		if !r.Ok() || !rec.Ok() {
			return
		}
		fn(base+int64(delta), key, value)
	}
}
