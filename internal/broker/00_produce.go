package broker

// Produce, v3–v12 (v0–v2 too with client.protocol.version=3.9, which
// serves up to v11).
//
// v12 is v11 on the wire; a transactional producer sending it uses
// transaction version 2 (KIP-890 part 2): its partitions join its
// transaction with the Produce itself, no AddPartitionsToTxn
// (checkTxnProduce in txn.go). v13 (topic ids) is not served.
//
// v0–v2 (Kafka 3.9's oldest) take the same magic-2 batches; a message set
// of magic 0 or 1, which Kafka 3.9 would convert to magic 2, is refused
// with UNSUPPORTED_FOR_MESSAGE_FORMAT (minibroker does not convert).
//
// Each partition carries exactly one batch, of magic 2 (INVALID_RECORD
// otherwise, as Kafka's ProduceRequest.validateRecords; zstd before v7 is
// UNSUPPORTED_COMPRESSION_TYPE). The batch is validated (size, CRC-32C,
// record count against the offset delta, no control batches from
// clients, a sequence with a producer id, every record: see below, and
// partition.validateClientBatches for the codes),
// producer state is checked for the whole partition's data, then offsets
// and the leader epoch are assigned in place (the CRC is untouched) and the
// bytes appended as they came: compressed batches are never recompressed.
// A retried idempotent batch is answered with its original offsets.
// acks=0 gets no response. Unknown topics are auto-created when
// auto.create.topics.enable is on (Kafka only creates on Metadata; kgo and
// most clients ask Metadata first, so the difference is rarely seen).
// Produce v8+ carries an error message per partition.
//
// Every record of a batch is walked, as Kafka's LogValidator walks a
// client's batch (decompressing it when compressed): records that do not
// parse, a record count that does not match, or bytes that do not
// decompress are INVALID_RECORD (Kafka answers UNKNOWN_SERVER_ERROR for
// the last), and a compacted topic refuses records without a key with
// INVALID_RECORD and, from v8, each such record's index in record_errors.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleProduce(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acksOK := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		t, ok := b.Topic(rt.Topic)
		var topicErr error
		if !ok {
			if topicErr = validTopicName(rt.Topic); topicErr == nil {
				t, topicErr = b.autoCreate(rt.Topic)
			}
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			switch {
			case !acksOK:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case topicErr != nil:
				sp.ErrorCode = errorCode(topicErr)
			case req.Version < 3 && isOldMagic(rp.Records):
				sp.ErrorCode = kerr.UnsupportedForMessageFormat.Code
			case coordinatorTopic(rt.Topic):
				// Kafka's ReplicaManager: no client appends to an internal
				// topic (internal_topics.go).
				err := errInternalAppend(rt.Topic)
				sp.ErrorCode, sp.ErrorMessage = errorCode(err), errorMessage(err)
			case req.Version < 7 && isZstd(rp.Records):
				// Kafka's ProduceRequest.validateRecords: zstd needs v7+.
				sp.ErrorCode = kerr.UnsupportedCompressionType.Code
			default:
				b.produceChecked(req.Version, req.TransactionID, rt.Topic, t, rp, &sp)
			}
			if sp.ErrorCode != 0 {
				b.metrics.ProduceErrors.WithLabelValues(kerr.ErrorForCode(sp.ErrorCode).Error()).Inc()
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		return nil
	}
	return resp
}

// produceChecked appends one partition's batch after the transaction
// check. The check's release runs deferred: a panic in the append
// (recovered by the connection) still lets the transaction be decided;
// a release called after the append would be skipped by the panic and
// every later EndTxn would wait for the coordinator's lock for ever.
func (b *Broker) produceChecked(version int16, txnID *string, topic string, t *Topic, rp kmsg.ProduceRequestTopicPartition, sp *kmsg.ProduceResponseTopicPartition) {
	code, release := b.checkTxnProduce(version, txnID, topic, &rp)
	defer release()
	if sp.ErrorCode = code; code == 0 {
		b.producePartition(t, rp, sp)
	}
}

func (b *Broker) producePartition(t *Topic, rp kmsg.ProduceRequestTopicPartition, sp *kmsg.ProduceResponseTopicPartition) {
	parts := b.partitions(t)
	if rp.Partition < 0 || int(rp.Partition) >= len(parts) {
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return
	}
	if b.knobs.panicInProduce != nil && b.knobs.panicInProduce(t.Name) {
		panic("panicInProduce: an append panicking on purpose (test knob)")
	}
	p := parts[rp.Partition]
	res, err := p.AppendAsLeader(rp.Records)
	if err != nil {
		sp.ErrorCode = errorCode(err)
		sp.ErrorMessage = errorMessage(err)
		var refused *batch.RecordErrors
		if errors.As(err, &refused) {
			for _, r := range refused.Records {
				re := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				re.RelativeOffset = int32(r.Index)
				re.ErrorMessage = &r.Message
				sp.ErrorRecords = append(sp.ErrorRecords, re)
			}
		}
		if sp.ErrorCode == kerr.UnknownServerError.Code {
			b.logger.Sugar().Warnw("produce failed", "topic", t.Name, "partition", rp.Partition, "error", err)
		}
		return
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
	if !res.Duplicate {
		b.metrics.BytesInTopic.WithLabelValues(t.Name).Add(float64(len(rp.Records)))
	}
}

// isZstd reports whether the batch at the start of records says zstd.
// isOldMagic: the records are a message set of magic 0 or 1.
func isOldMagic(records []byte) bool {
	m, ok := batch.MagicOf(records)
	return ok && m < 2
}

func isZstd(records []byte) bool {
	codec, ok := batch.CodecOf(records)
	return ok && codec == batch.CodecZstd
}
