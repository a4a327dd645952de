package broker

// Wiring of the transaction coordinator: the marker writer it drives, the
// group coordinator seam for transactional offsets, the check a
// transactional Produce gets, and the per-version fencing error.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/partition"
)

// txnMarkers writes transaction markers into this broker's partitions.
type txnMarkers struct{ b *Broker }

// WriteTxnMarker implements coordinator.TxnMarkerWriter. A partition that
// no longer exists is ErrPartitionGone (the marker is dropped, as Kafka
// drops markers for deleted partitions). A partition that became mirrored
// gets no marker either: it is read-only, the mirror cut the records this
// node wrote there (PREPARING truncates to where it diverges from the
// source) and STOPPING's truncation to the LSO removes any transaction
// left open in it. A commit is refused before it is decided when one of
// its partitions is mirrored (CheckTxnMarker), so only an abort, or a
// commit decided just before a mirror started, gets here.
func (m txnMarkers) WriteTxnMarker(tp coordinator.TopicPartition, pid int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	p, ok := m.b.partitionOf(tp.Topic, tp.Partition)
	if !ok {
		return coordinator.ErrPartitionGone
	}
	if mode, mirror := p.Mode(); mode == partition.Mirrored {
		log := m.b.logger.Info
		if commit {
			log = m.b.logger.Error // decided before the mirror started: its records here are lost
		}
		log("transaction marker not written: partition is mirrored", zap.String("topic", tp.Topic),
			zap.Int32("partition", tp.Partition), zap.String("mirror", mirror), zap.Int64("producer_id", pid), zap.Bool("commit", commit))
		return coordinator.ErrPartitionGone
	}
	_, err := p.WriteMarker(pid, epoch, commit, coordinatorEpoch)
	return err
}

// CheckTxnMarker implements coordinator.TxnMarkerChecker: a mirrored
// partition cannot take a COMMIT marker.
func (m txnMarkers) CheckTxnMarker(tp coordinator.TopicPartition) error {
	if m.b.knobs.skipCommitMarkerCheck {
		return nil // negative control: the rule removed
	}
	p, ok := m.b.partitionOf(tp.Topic, tp.Partition)
	if !ok {
		return nil // deleted: its marker is dropped, as Kafka does
	}
	if mode, mirror := p.Mode(); mode == partition.Mirrored {
		return fmt.Errorf("partition is mirrored by %s (read-only)", mirror)
	}
	return nil
}

func (b *Broker) partitionOf(topic string, index int32) (*partition.Partition, bool) {
	t, ok := b.Topic(topic)
	if !ok {
		return nil, false
	}
	parts := b.partitions(t)
	if index < 0 || int(index) >= len(parts) {
		return nil, false
	}
	return parts[index], true
}

// txnGroups is the group coordinator as the transaction APIs use it (nil
// until the group coordinator is wired in).
type txnGroups interface {
	StageTxnOffsetsAsync(group string, producerID int64, producerEpoch int16, offsets map[coordinator.TopicPartition]coordinator.OffsetAndMetadata) (wait func() error, err error)
	CompleteTxnOffsets(producerID int64, epoch int16, coordinatorEpoch int32, commit bool) error
}

func (b *Broker) txnGroups() txnGroups {
	if b.groups == nil {
		return nil
	}
	return b.groups
}

// txnErrorCode is errorCode for the transaction APIs: PRODUCER_FENCED
// (KIP-588) is sent only from fencedSince on; older versions get
// INVALID_PRODUCER_EPOCH, as Kafka's KafkaApis converts it.
func txnErrorCode(err error, version, fencedSince int16) int16 {
	code := errorCode(err)
	if code == kerr.ProducerFenced.Code && version < fencedSince {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// checkTxnProduce is the check a transactional batch gets before it is
// appended: its partition must be in the producer's open transaction (what
// Kafka 3.6+ verifies through AddPartitionsToTxn v4, KIP-890 part 1). A
// batch from a producer whose epoch the coordinator moved past gets
// INVALID_PRODUCER_EPOCH; a partition not added, or no open transaction,
// TRANSACTION_ABORTABLE from Produce v11 on and INVALID_TXN_STATE before
// (Kafka's AddPartitionsToTxnManager: genericError for v11+, defaultError
// before). Produce v12+ (transaction version 2, KIP-890 part 2) adds the
// partition to the transaction itself, durably, before the append
// (Transactions.AddAndVerifyProduce); a decision being carried out then
// answers CONCURRENT_TRANSACTIONS, which clients retry.
// Transactional records without a transactional id get
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers. The caller
// calls release after the append: until then the transaction cannot be
// decided, so its marker always follows its data.
func (b *Broker) checkTxnProduce(version int16, txnID *string, topic string, rp *kmsg.ProduceRequestTopicPartition) (code int16, release func()) {
	none := func() {}
	h, err := batch.ParseHeader(rp.Records)
	if err != nil || !h.IsTransactional() || h.IsControl() {
		return 0, none // malformed batches are the append path's to refuse
	}
	if txnID == nil {
		return kerr.TransactionalIDAuthorizationFailed.Code, none
	}
	tp := coordinator.TopicPartition{Topic: topic, Partition: rp.Partition}
	if version >= 12 {
		if _, ok := b.partitionOf(topic, rp.Partition); !ok {
			return 0, none // the append path answers UNKNOWN_TOPIC_OR_PARTITION; nothing is added
		}
		release, err = b.txns.AddAndVerifyProduce(*txnID, h.ProducerID, h.ProducerEpoch, tp)
	} else {
		release, err = b.txns.VerifyProduce(*txnID, h.ProducerID, h.ProducerEpoch, tp)
	}
	switch {
	case errors.Is(err, coordinator.ErrProducerFenced):
		return kerr.InvalidProducerEpoch.Code, release
	case errors.Is(err, coordinator.ErrInvalidProducerIDMapping) && version < 12:
		return kerr.InvalidTxnState.Code, release
	case errors.Is(err, coordinator.ErrInvalidTxnState):
		if version >= 11 {
			return kerr.TransactionAbortable.Code, release
		}
		return kerr.InvalidTxnState.Code, release
	}
	return errorCode(err), release
}
