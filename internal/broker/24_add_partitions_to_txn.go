package broker

// AddPartitionsToTxn, v0–v3 (the client form).
//
// Adds partitions to the producer's transaction, starting it (and its
// timeout clock) if none is open; the change is fsynced to the transaction
// log before the answer. Every partition must exist: if one does not, it
// gets UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED,
// and nothing is added, as in Kafka. A mirrored partition is refused with
// the code Produce gives it (POLICY_VIOLATION) — Kafka has no mirrors.
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
//
// Deviation: v4+ (the batched, broker-to-broker verification form of
// KIP-890) is not served; the coordinator is in-process, so Produce checks
// the transaction directly (see checkTxnProduce).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleAddPartitionsToTxn(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	codes := map[coordinator.TopicPartition]int16{}
	var parts []coordinator.TopicPartition
	refused := false
	for _, rt := range req.Topics {
		for _, p := range rt.Partitions {
			tp := coordinator.TopicPartition{Topic: rt.Topic, Partition: p}
			parts = append(parts, tp)
			part, ok := b.partitionOf(rt.Topic, p)
			switch {
			case !ok:
				codes[tp], refused = kerr.UnknownTopicOrPartition.Code, true
			default:
				if mode, mirror := part.Mode(); mode == partition.Mirrored {
					codes[tp], refused = errorCode(&partition.MirroredError{Mirror: mirror}), true
				}
			}
		}
	}
	var all int16
	switch {
	case req.TransactionalID == "":
		all = kerr.InvalidRequest.Code
	case refused:
		all = kerr.OperationNotAttempted.Code
	default:
		all = txnErrorCode(b.txns.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts), req.Version, 2)
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition = p
			sp.ErrorCode = all
			if c, ok := codes[coordinator.TopicPartition{Topic: rt.Topic, Partition: p}]; ok && req.TransactionalID != "" {
				sp.ErrorCode = c
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
