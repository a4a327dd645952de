package broker

// The group coordinator's __consumer_offsets (coordinator.OffsetsTopic)
// over the topic's partitions: batches the coordinator builds are
// appended as a leader's (uncompressed, no producer id; Produce from
// clients is refused earlier, in its handler), and read back from each
// partition's log start at the coordinator's start-up.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/partition"
)

// offsetsTopicBatchBytes bounds one appended batch: the coordinator's
// start-up may write a partition's whole state at once.
const offsetsTopicBatchBytes = 512 << 10

type offsetsTopicLog struct {
	parts []*partition.Partition
}

func (b *Broker) offsetsTopicLog() coordinator.OffsetsTopic {
	return offsetsTopicLog{parts: b.partitionsOf(offsetsTopic)}
}

func (o offsetsTopicLog) Partitions() int32 { return int32(len(o.parts)) }

func (o offsetsTopicLog) Append(p int32, recs []coordinator.TopicRecord) error {
	if p < 0 || int(p) >= len(o.parts) {
		return fmt.Errorf("__consumer_offsets has no partition %d", p)
	}
	for len(recs) > 0 {
		n, size := 0, 0
		for n < len(recs) && (n == 0 || size < offsetsTopicBatchBytes) {
			size += len(recs[n].Key) + len(recs[n].Value) + 16
			n++
		}
		if _, err := o.parts[p].AppendAsLeader(dataBatch(recs[:n], time.Now().UnixMilli())); err != nil {
			return fmt.Errorf("__consumer_offsets-%d: %w", p, err)
		}
		recs = recs[n:]
	}
	return nil
}

// dataBatch encodes recs as one uncompressed batch of magic 2 with no
// producer id.
func dataBatch(recs []coordinator.TopicRecord, ts int64) []byte {
	var body []byte
	for i, r := range recs {
		kr := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		body = kr.AppendTo(body)
	}
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)), Records: body}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	batch.SetCRC(raw)
	return raw
}

func (o offsetsTopicLog) Replay(p int32, fn func(key, value []byte)) error {
	if p < 0 || int(p) >= len(o.parts) {
		return fmt.Errorf("__consumer_offsets has no partition %d", p)
	}
	part := o.parts[p]
	offs := part.Offsets()
	for at := offs.LogStart; at < offs.LogEnd; {
		raw, err := part.ReadRaw(at, offs.LogEnd, 1<<20)
		if err != nil {
			return fmt.Errorf("__consumer_offsets-%d at %d: %w", p, at, err)
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
			// The coordinator writes neither control batches nor
			// compressed ones; a topic an older minibroker made may
			// hold a client's, which are not the coordinator's state.
			if h.IsControl() || h.Codec() != 0 {
				continue
			}
			section, ok := batch.RecordsSection(b)
			if !ok {
				continue
			}
			eachRecord(section, h.NumRecords, fn)
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("__consumer_offsets-%d at %d: %w", p, at, err)
		}
		if !moved {
			break
		}
	}
	return nil
}

// eachRecord calls fn with the key and value of each of the n records of
// an uncompressed records section; it stops at one that does not parse.
func eachRecord(section []byte, n int32, fn func(key, value []byte)) {
	r := kbin.Reader{Src: section}
	for range n {
		length := r.Varint()
		if !r.Ok() || length < 0 {
			return
		}
		rec := kbin.Reader{Src: r.Span(int(length))}
		rec.Int8()    // attributes
		rec.Varlong() // timestamp delta
		rec.Varint()  // offset delta
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
		fn(key, value)
	}
}
