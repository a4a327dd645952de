package broker

// The group coordinator's __consumer_offsets (coordinator.OffsetsTopic)
// over the topic's partitions (internal/itopic): the coordinator's store
// of record. Its batches are appended with origin COORDINATOR
// (uncompressed; plain ones with no producer id, a TxnOffsetCommit's
// transactional with the producer's id and epoch and no sequence, as
// Kafka's coordinator writes them; Produce from clients is refused
// earlier, in its handler), made durable with the partition's group
// commit (FlushTo), and read back from each partition's log start at the
// coordinator's start-up.

import (
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/itopic"
)

type offsetsTopicLog struct{ itopic.Log }

func (b *Broker) offsetsTopicLog() coordinator.OffsetsTopic {
	return offsetsTopicLog{itopic.Log{Topic: offsetsTopic, Parts: b.partitionsOf(offsetsTopic)}}
}

func (o offsetsTopicLog) Append(p int32, recs []coordinator.TopicRecord, txn coordinator.TopicProducer) (int64, error) {
	return o.AppendAs(p, len(recs), func(i int) ([]byte, []byte) { return recs[i].Key, recs[i].Value },
		itopic.Producer{ID: txn.ID, Epoch: txn.Epoch})
}

func (o offsetsTopicLog) Replay(p int32, fn func(b coordinator.TopicBatch, key, value []byte)) error {
	return o.ReplayBatches(p, func(b itopic.BatchInfo, key, value []byte) {
		fn(coordinator.TopicBatch{Producer: coordinator.TopicProducer{ID: b.Producer.ID, Epoch: b.Producer.Epoch},
			Transactional: b.Transactional, Control: b.Control, Commit: b.Commit}, key, value)
	})
}
