package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/minibroker/minibroker/internal/coordinator"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/psm"
)

var (
	errReplication           = errors.New("broker: replication factor must be 1 on a single node")
	errInvalidRequest        = errors.New("broker: invalid request")
	errTopicDeletionDisabled = errors.New("broker: delete.topic.enable is false")
)

// errorTable is the one place internal errors become Kafka error codes.
var errorTable = []struct {
	err  error
	code *kerr.Error
}{
	{partition.ErrCorrupt, kerr.CorruptMessage},
	{partition.ErrInvalidRecord, kerr.InvalidRecord},
	{partition.ErrInvalidTimestamp, kerr.InvalidTimestamp},
	{partition.ErrTooLarge, kerr.MessageTooLarge},
	// A mirrored partition is read-only. POLICY_VIOLATION is not retriable
	// in kgo, sarama or librdkafka, so producers fail fast with the
	// message naming the mirror instead of retrying until timeout.
	{partition.ErrMirrored, kerr.PolicyViolation},
	{partition.ErrClosed, kerr.NotLeaderForPartition},
	{partition.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{partition.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch},
	{psm.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{psm.ErrControlBatchFromClient, kerr.InvalidRecord},
	{psm.ErrMalformedControl, kerr.CorruptMessage},
	{psm.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{psm.ErrInvalidTxnState, kerr.InvalidTxnState},
	{psm.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced},
	{mlog.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{mlog.ErrStorage, kerr.KafkaStorageError},
	{mlog.ErrClosed, kerr.NotLeaderForPartition},
	{errInvalidTopic, kerr.InvalidTopicException},
	{errTopicExists, kerr.TopicAlreadyExists},
	{errUnknownTopic, kerr.UnknownTopicOrPartition},
	{errInvalidConfig, kerr.InvalidConfig},
	{errInvalidParts, kerr.InvalidPartitions},
	{errReplication, kerr.InvalidReplicationFactor},
	{errInvalidRequest, kerr.InvalidRequest},
	{errTopicDeletionDisabled, kerr.TopicDeletionDisabled},
	{errPolicy, kerr.PolicyViolation},
	{errCreationStopped, kerr.RequestTimedOut},
	// transaction coordinator
	{coordinator.ErrProducerFenced, kerr.ProducerFenced},
	{coordinator.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{coordinator.ErrInvalidProducerIDMapping, kerr.InvalidProducerIDMapping},
	{coordinator.ErrConcurrentTransactions, kerr.ConcurrentTransactions},
	{coordinator.ErrInvalidTxnState, kerr.InvalidTxnState},
	{coordinator.ErrInvalidTransactionTimeout, kerr.InvalidTransactionTimeout},
	{coordinator.ErrTransactionalIDNotFound, kerr.TransactionalIDNotFound},
	{coordinator.ErrInvalidTransactionalID, kerr.InvalidRequest},
	{coordinator.ErrTxnLogUnavailable, kerr.CoordinatorNotAvailable},
	{coordinator.ErrTransactionAbortable, kerr.TransactionAbortable},
	{coordinator.ErrUnknownMemberID, kerr.UnknownMemberID},
	{coordinator.ErrIllegalGeneration, kerr.IllegalGeneration},
	{coordinator.ErrRebalanceInProgress, kerr.RebalanceInProgress},
	{coordinator.ErrMemberIDRequired, kerr.MemberIDRequired},
	{coordinator.ErrFencedInstanceID, kerr.FencedInstanceID},
	{coordinator.ErrInconsistentGroupProtocol, kerr.InconsistentGroupProtocol},
	{coordinator.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
	{coordinator.ErrInvalidGroupID, kerr.InvalidGroupID},
	{coordinator.ErrGroupIDNotFound, kerr.GroupIDNotFound},
	{coordinator.ErrNonEmptyGroup, kerr.NonEmptyGroup},
	{coordinator.ErrGroupSubscribedToTopic, kerr.GroupSubscribedToTopic},
	{coordinator.ErrUnstableOffsetCommit, kerr.UnstableOffsetCommit},
	{coordinator.ErrOffsetMetadataTooLarge, kerr.OffsetMetadataTooLarge},
	{coordinator.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{coordinator.ErrGroupMaxSize, kerr.GroupMaxSizeReached},
	{coordinator.ErrGroupHasMembers, kerr.UnknownMemberID},
	{coordinator.ErrInvalidRequest, kerr.InvalidRequest},
	{coordinator.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},
	{coordinator.ErrStaleMemberEpoch, kerr.StaleMemberEpoch},
	{coordinator.ErrUnreleasedInstanceID, kerr.UnreleasedInstanceID},
	{coordinator.ErrUnsupportedAssignor, kerr.UnsupportedAssignor},
	{coordinator.ErrInvalidRegularExpression, kerr.InvalidRegularExpression},
	{coordinator.ErrUnsupportedVersion, kerr.UnsupportedVersion},
	{coordinator.ErrRecordTooLarge, kerr.UnknownServerError}, // Kafka's mapping of MESSAGE_TOO_LARGE from a coordinator log append
}

// errorCode maps an internal error to a Kafka error code.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is the message sent beside a code where the API has one.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
