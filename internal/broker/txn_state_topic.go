package broker

// The transaction coordinator's __transaction_state
// (coordinator.TxnStateTopic) over the topic's partitions
// (internal/itopic): the coordinator's records are appended as a leader's
// batches (Produce from clients is refused earlier, in its handler), made
// durable by the partition's group commit, and read back at start-up.

import (
	"errors"
	"fmt"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/itopic"
	"github.com/minibroker/minibroker/internal/partition"
)

type txnStateTopicLog struct{ itopic.Log }

func (b *Broker) txnStateTopicLog() coordinator.TxnStateTopic {
	return txnStateTopicLog{itopic.Log{Topic: txnTopic, Parts: b.partitionsOf(txnTopic)}}
}

func (l txnStateTopicLog) Append(p int32, recs []coordinator.TopicRecord) (int64, error) {
	end, err := l.Log.Append(p, len(recs), func(i int) ([]byte, []byte) { return recs[i].Key, recs[i].Value })
	if errors.Is(err, partition.ErrTooLarge) {
		err = fmt.Errorf("%w: %v", coordinator.ErrRecordTooLarge, err)
	}
	return end, err
}
