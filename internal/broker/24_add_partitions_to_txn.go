package broker

// AddPartitionsToTxn, v0–v5: v0–v3 the client form, v4–v5 the batched
// broker-to-broker form (KIP-890).
//
// Adds partitions to the producer's transaction, starting it (and its
// timeout clock) if none is open; the change is fsynced to the transaction
// log before the answer. Every partition must exist: if one does not, it
// gets UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED,
// and nothing is added, as in Kafka. A mirrored partition is refused with
// the code Produce gives it (POLICY_VIOLATION) — Kafka has no mirrors.
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
//
// v4+ carries a list of transactions, each verify-only or not, and needs
// CLUSTER_ACTION on the cluster (authz_table.go), as Kafka's brokers send
// it to the coordinator: a verify-only transaction gets, per partition,
// NONE when the partition is in its open transaction and
// TRANSACTION_ABORTABLE when not (v4 included: the calling broker maps it
// back for old clients), or for every partition INVALID_PRODUCER_ID_MAPPING,
// PRODUCER_FENCED or CONCURRENT_TRANSACTIONS (Kafka's
// handleVerifyPartitionsInTransaction); one not verify-only adds its
// partitions as the client form does (v5: transaction version 2, what a
// Produce v12 does). minibroker's own Produce does not send it (the
// coordinator is in-process: checkTxnProduce in txn.go); it is served for
// tools and for parity with Kafka's ApiVersions.

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
	if req.Version >= 4 {
		for _, tx := range req.Transactions {
			resp.Transactions = append(resp.Transactions, b.addPartitionsToTxn(req.Version, tx))
		}
		return resp
	}
	// The client form is one transaction of the batched form, not
	// verify-only, answered the same way and copied back.
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = req.TransactionalID, req.ProducerID, req.ProducerEpoch
	for _, rt := range req.Topics {
		t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		t.Topic, t.Partitions = rt.Topic, rt.Partitions
		tx.Topics = append(tx.Topics, t)
	}
	for _, tt := range b.addPartitionsToTxn(req.Version, tx).Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = tt.Topic
		for _, tp := range tt.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition, sp.ErrorCode = tp.Partition, tp.ErrorCode
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// addPartitionsToTxn answers one transaction: the one of a v0–v3 request
// or one of a v4+ request's.
func (b *Broker) addPartitionsToTxn(version int16, tx kmsg.AddPartitionsToTxnRequestTransaction) kmsg.AddPartitionsToTxnResponseTransaction {
	out := kmsg.NewAddPartitionsToTxnResponseTransaction()
	out.TransactionalID = tx.TransactionalID
	codes := map[coordinator.TopicPartition]int16{}
	var parts []coordinator.TopicPartition
	refused := false
	for _, rt := range tx.Topics {
		for _, p := range rt.Partitions {
			tp := coordinator.TopicPartition{Topic: rt.Topic, Partition: p}
			parts = append(parts, tp)
			if c, bad := b.txnPartitionRefusal(rt.Topic, p, tx.VerifyOnly); bad {
				codes[tp], refused = c, true
			}
		}
	}
	var all int16
	switch {
	case tx.TransactionalID == "":
		all = kerr.InvalidRequest.Code
	case refused:
		all = kerr.OperationNotAttempted.Code
	case tx.VerifyOnly:
		perPart, err := b.txns.VerifyPartitions(tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, parts)
		all = errorCode(err)
		for tp, perr := range perPart {
			codes[tp] = errorCode(perr)
		}
	case version >= 5:
		all = errorCode(b.txns.AddPartitionsImplicit(tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, parts))
	default:
		all = txnErrorCode(b.txns.AddPartitions(tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, parts), version, 2)
	}
	for _, rt := range tx.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			sp.Partition = p
			sp.ErrorCode = all
			if c, ok := codes[coordinator.TopicPartition{Topic: rt.Topic, Partition: p}]; ok && (all == 0 || all == kerr.OperationNotAttempted.Code) {
				sp.ErrorCode = c
			}
			st.Partitions = append(st.Partitions, sp)
		}
		out.Topics = append(out.Topics, st)
	}
	return out
}

// txnPartitionRefusal is the code AddPartitionsToTxn refuses a partition
// with, if any: UNKNOWN_TOPIC_OR_PARTITION, or the mirrored partition's
// error unless the request only verifies.
func (b *Broker) txnPartitionRefusal(topic string, p int32, verifyOnly bool) (int16, bool) {
	part, ok := b.partitionOf(topic, p)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, true
	}
	if mode, mirror := part.Mode(); mode == partition.Mirrored && !verifyOnly {
		return errorCode(&partition.MirroredError{Mirror: mirror}), true
	}
	return 0, false
}
