package broker

// TxnOffsetCommit, v0–v5.
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
// v4 lets the broker answer TRANSACTION_ABORTABLE (KIP-890): a group not
// in the open transaction is TRANSACTION_ABORTABLE from v4 on,
// INVALID_TXN_STATE before (Kafka's verification, genericError for v4+).
// v5 is transaction version 2 (KIP-890 part 2): the client sends no
// AddOffsetsToTxn; the group joins the transaction with the offset
// commit itself, durably, before the offsets are staged (Kafka adds the
// group's __consumer_offsets partition).
//
// Deviation: the v3 generation, member id and instance id are not checked
// against the group.

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
		stage := func() (func() error, error) {
			if len(offsets) == 0 {
				return func() error { return nil }, nil
			}
			return groups.StageTxnOffsetsAsync(req.Group, req.ProducerID, req.ProducerEpoch, offsets)
		}
		var err error
		if req.Version >= 5 {
			err = b.txns.TxnOffsetCommitV2(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, stage)
		} else {
			err = b.txns.TxnOffsetCommit(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group, stage)
		}
		all = errorCode(err)
		if all == kerr.InvalidTxnState.Code && req.Version >= 4 {
			all = kerr.TransactionAbortable.Code
		}
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
