package broker

// The group coordinator's __consumer_offsets (coordinator.OffsetsTopic)
// over the topic's partitions: the coordinator's store of record. Its
// batches are appended with origin COORDINATOR (uncompressed; plain ones
// with no producer id, a TxnOffsetCommit's transactional with the
// producer's id and epoch and no sequence, as Kafka's coordinator writes
// them; Produce from clients is refused earlier, in its handler), made
// durable with the partition's group commit (FlushTo), and read back from
// each partition's log start at the coordinator's start-up.

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/itopic"
	"github.com/minibroker/minibroker/internal/partition"
)

// offsetsTopicBatchBytes bounds one appended batch: a migration may write
// a partition's whole state at once.
const offsetsTopicBatchBytes = 512 << 10

type offsetsTopicLog struct {
	parts []*partition.Partition
}

func (b *Broker) offsetsTopicLog() coordinator.OffsetsTopic {
	return offsetsTopicLog{parts: b.partitionsOf(offsetsTopic)}
}

func (o offsetsTopicLog) Partitions() int32 { return int32(len(o.parts)) }

func (o offsetsTopicLog) part(p int32) (*partition.Partition, error) {
	if p < 0 || int(p) >= len(o.parts) {
		return nil, fmt.Errorf("__consumer_offsets has no partition %d", p)
	}
	return o.parts[p], nil
}

func (o offsetsTopicLog) Append(p int32, recs []coordinator.TopicRecord, txn coordinator.TopicProducer) (int64, error) {
	part, err := o.part(p)
	if err != nil {
		return 0, err
	}
	end := part.Offsets().LogEnd
	for len(recs) > 0 {
		n, size := 0, 0
		for n < len(recs) && (n == 0 || size < offsetsTopicBatchBytes) {
			size += len(recs[n].Key) + len(recs[n].Value) + 16
			n++
		}
		last, err := part.AppendAsCoordinator(dataBatch(recs[:n], txn, time.Now().UnixMilli()))
		if err != nil {
			return 0, fmt.Errorf("__consumer_offsets-%d: %w", p, err)
		}
		end = last + 1
		recs = recs[n:]
	}
	return end, nil
}

func (o offsetsTopicLog) WriteMarker(p int32, pid int64, epoch int16, commit bool, coordinatorEpoch int32) (int64, error) {
	part, err := o.part(p)
	if err != nil {
		return 0, err
	}
	off, err := part.WriteMarker(pid, epoch, commit, coordinatorEpoch)
	if err != nil {
		return 0, fmt.Errorf("__consumer_offsets-%d: %w", p, err)
	}
	return off + 1, nil
}

func (o offsetsTopicLog) Sync(p int32, end int64) error {
	part, err := o.part(p)
	if err != nil {
		return err
	}
	if err := part.FlushTo(end); err != nil {
		return fmt.Errorf("__consumer_offsets-%d: %w", p, err)
	}
	return nil
}

func (o offsetsTopicLog) End(p int32) int64 {
	part, err := o.part(p)
	if err != nil {
		return 0
	}
	return part.Offsets().LogEnd
}

// dataBatch encodes recs as one uncompressed batch of magic 2: with no
// producer id, or transactional for txn's producer and epoch with
// NO_SEQUENCE (Kafka's TxnOffsetCommit records).
func dataBatch(recs []coordinator.TopicRecord, txn coordinator.TopicProducer, ts int64) []byte {
	var body []byte
	for i, r := range recs {
		kr := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		body = kr.AppendTo(body)
	}
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)), Records: body}
	if txn.ID >= 0 {
		rb.ProducerID, rb.ProducerEpoch = txn.ID, txn.Epoch
		rb.Attributes |= batch.AttrTransactional
	}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	batch.SetCRC(raw)
	return raw
}

func (o offsetsTopicLog) Replay(p int32, fn func(b coordinator.TopicBatch, key, value []byte)) error {
	part, err := o.part(p)
	if err != nil {
		return err
	}
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
			info := coordinator.TopicBatch{Producer: coordinator.TopicProducer{ID: h.ProducerID, Epoch: h.ProducerEpoch},
				Transactional: h.IsTransactional(), Control: h.IsControl()}
			if h.IsControl() {
				if h.NumRecords == 0 || h.ProducerID < 0 {
					continue
				}
				c, err := batch.ReadControl(b)
				if err != nil || (c.Type != batch.ControlCommit && c.Type != batch.ControlAbort) {
					continue
				}
				info.Commit = c.Type == batch.ControlCommit
				fn(info, nil, nil)
				continue
			}
			// The coordinator writes no compressed batch; a topic an
			// older minibroker made may hold a client's, which is not
			// the coordinator's state.
			if h.Codec() != 0 {
				continue
			}
			section, ok := batch.RecordsSection(b)
			if !ok {
				continue
			}
			itopic.EachRecord(section, h.NumRecords, func(key, value []byte) { fn(info, key, value) })
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
