package coordinator

import "errors"

// Group coordinator errors. The broker's error table turns each into the
// Kafka error code of the same name.
var (
	ErrUnknownMemberID           = errors.New("coordinator: unknown member id")
	ErrIllegalGeneration         = errors.New("coordinator: illegal generation")
	ErrRebalanceInProgress       = errors.New("coordinator: rebalance in progress")
	ErrMemberIDRequired          = errors.New("coordinator: member id required")
	ErrFencedInstanceID          = errors.New("coordinator: fenced instance id")
	ErrInconsistentGroupProtocol = errors.New("coordinator: inconsistent group protocol")
	ErrInvalidSessionTimeout     = errors.New("coordinator: invalid session timeout")
	ErrInvalidGroupID            = errors.New("coordinator: invalid group id")
	ErrGroupIDNotFound           = errors.New("coordinator: group id not found")
	ErrNonEmptyGroup             = errors.New("coordinator: group not empty")
	ErrGroupSubscribedToTopic    = errors.New("coordinator: group subscribed to topic")
	ErrUnstableOffsetCommit      = errors.New("coordinator: unstable offset commit")
	ErrOffsetMetadataTooLarge    = errors.New("coordinator: offset metadata too large")
	ErrCoordinatorNotAvailable   = errors.New("coordinator: group coordinator not available")
	ErrGroupMaxSize              = errors.New("coordinator: group max size reached")
	// ErrInvalidRequest: a name too long to persist (over 32767 bytes, the
	// group log's string limit, as in Kafka's __consumer_offsets).
	ErrInvalidRequest = errors.New("coordinator: invalid request")
	// ErrRecordTooLarge: a record is longer than its log holds: a group's
	// state record (every member's subscription and assignment) over the
	// group log's 64 MiB, a transaction's state over the transaction
	// log's 16 MiB. Kafka answers UNKNOWN_SERVER_ERROR when a coordinator
	// record is too large to append (MESSAGE_TOO_LARGE,
	// RECORD_LIST_TOO_LARGE); so does the broker's error table.
	ErrRecordTooLarge = errors.New("coordinator: record too large for its log")
	// ErrGroupHasMembers: an admin commit to a group with members (Kafka
	// answers UNKNOWN_MEMBER_ID to a simple commit on such a group).
	ErrGroupHasMembers = errors.New("coordinator: group has active members")

	// KIP-848 consumer groups.
	ErrFencedMemberEpoch        = errors.New("coordinator: fenced member epoch")
	ErrStaleMemberEpoch         = errors.New("coordinator: stale member epoch")
	ErrUnreleasedInstanceID     = errors.New("coordinator: unreleased instance id")
	ErrUnsupportedAssignor      = errors.New("coordinator: unsupported assignor")
	ErrInvalidRegularExpression = errors.New("coordinator: invalid regular expression")
	ErrUnsupportedVersion       = errors.New("coordinator: unsupported version")
)
