package broker

// TxnOffsetCommit, v0–v4.
//
// Stages a transactional producer's offsets for a group with the group
// coordinator (durable, invisible to OffsetFetch until the COMMIT marker;
// an ABORT drops them). The transaction coordinator first checks the
// producer: its id must own the transactional id (else
// INVALID_PRODUCER_ID_MAPPING), its epoch be current (else
// INVALID_PRODUCER_EPOCH, what Kafka's offsets partition answers), and the
// group be in its open transaction through AddOffsetsToTxn (else
// INVALID_TXN_STATE, what Kafka 3.6+ verification answers; older Kafka
// accepted the offsets and left them pending). Partitions of unknown
// topics get UNKNOWN_TOPIC_OR_PARTITION.
//
// v4 only lets the broker answer TRANSACTION_ABORTABLE (KIP-890), which
// minibroker never does: it is served as v3.
//
// Deviation: the v3 generation, member id and instance id are not checked
// against the group. v5+ (KIP-890 part 2: the group joins the transaction
// implicitly) is not served.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleTxnOffsetCommit(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var all int16
	groups := b.txnGroups()
	switch {
	case req.TransactionalID == "" || req.Group == "":
		all = kerr.InvalidRequest.Code
	case groups == nil:
		all = kerr.CoordinatorNotAvailable.Code
	}
	codes := map[coordinator.TopicPartition]int16{}
	offsets := map[coordinator.TopicPartition]coordinator.OffsetAndMetadata{}
	now := time.Now().UnixMilli()
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tp := coordinator.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if _, ok := b.partitionOf(rt.Topic, rp.Partition); !ok {
				codes[tp] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			md := ""
			if rp.Metadata != nil {
				md = *rp.Metadata
			}
			offsets[tp] = coordinator.OffsetAndMetadata{Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, Metadata: md, CommitTimestamp: now}
		}
	}
	if all == 0 {
		all = errorCode(b.txns.TxnOffsetCommit(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, func() error {
			if len(offsets) == 0 {
				return nil
			}
			return groups.StageTxnOffsets(req.Group, req.ProducerID, req.ProducerEpoch, offsets)
		}))
	}
	for _, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = all
			if c, ok := codes[coordinator.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]; ok && all == 0 {
				sp.ErrorCode = c
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
