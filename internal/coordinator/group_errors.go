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
	// ErrGroupHasMembers: an admin commit to a group with members (Kafka
	// answers UNKNOWN_MEMBER_ID to a simple commit on such a group).
	ErrGroupHasMembers = errors.New("coordinator: group has active members")
)
