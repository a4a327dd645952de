package coordinator

// The group coordinator's interface for the transaction coordinator and the
// mirror's group-offset sync.
//
// Transactional offsets (TxnOffsetCommit) are staged per producer: they are
// durable but invisible to OffsetFetch until the transaction's COMMIT
// marker, when CompleteTxnOffsets(pid, true) makes them committed offsets;
// an ABORT drops them. While a partition of a group has staged offsets, an
// OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT for it.

import "time"

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// OffsetAndMetadata is one committed (or staged) offset.
type OffsetAndMetadata struct {
	Offset      int64
	LeaderEpoch int32 // -1 when unknown
	Metadata    string
	// CommitTimestamp is when the offset was committed, in Unix
	// milliseconds (the broker's clock).
	CommitTimestamp int64
}

// StageTxnOffsets records offsets a transactional producer commits for
// group (TxnOffsetCommit). They are fsynced before it returns, and stay
// pending until CompleteTxnOffsets. A later stage by the same producer for
// the same partition replaces the earlier one.
func (g *Groups) StageTxnOffsets(group string, producerID int64, producerEpoch int16, offsets map[TopicPartition]OffsetAndMetadata) error {
	wait, err := g.stageTxnOffsets(group, producerID, producerEpoch, offsets)
	if err != nil {
		return err
	}
	return wait()
}

// StageTxnOffsetsAsync is StageTxnOffsets in two steps: it stages the
// offsets and appends their records to the store, and returns before
// their fsync; wait waits for it (and reports a failed write). The
// transaction coordinator appends under its decideMu, so the records
// precede any marker of the transaction in the log, and waits without it
// (the marker's own fsync covers the records before it). wait must be
// called, once, when err is nil.
func (g *Groups) StageTxnOffsetsAsync(group string, producerID int64, producerEpoch int16, offsets map[TopicPartition]OffsetAndMetadata) (wait func() error, err error) {
	return g.stageTxnOffsets(group, producerID, producerEpoch, offsets)
}

// ValidateTxnOffsetCommit checks a TxnOffsetCommit's member id, group
// instance id and generation (v3+, KIP-447) as Kafka's group coordinator
// does, so that a zombie member of an old generation cannot commit through
// a transaction: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or
// FENCED_INSTANCE_ID. Requests without them (v0–v2: generation -1, no
// member id) pass. Call it before StageTxnOffsets.
func (g *Groups) ValidateTxnOffsetCommit(group, memberID, groupInstanceID string, generation int32) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.core.ValidateTxnMember(group, memberID, groupInstanceID, generation)
}

// CompleteTxnOffsets ends producerID's transaction for every group it staged
// offsets in: commit makes them committed offsets (durably, before it
// returns); !commit drops them. A producer with nothing staged is a no-op.
// With __consumer_offsets, the transaction's COMMIT or ABORT marker
// (producer epoch epoch, coordinatorEpoch) is written to each partition
// of the groups it staged in, as Kafka's transaction coordinator writes
// it there.
func (g *Groups) CompleteTxnOffsets(producerID int64, epoch int16, coordinatorEpoch int32, commit bool) error {
	return g.completeTxnOffsets(producerID, epoch, coordinatorEpoch, commit)
}

// CommitOffsetsAdmin commits offsets for group outside any generation, as a
// simple (generation -1) OffsetCommit does. CommitTimestamp is ignored: the
// commit time is now, as for any commit (retention counts from it). It refuses with
// ErrGroupHasMembers while the group has members: their own commits would
// race it. The group is created (Empty) if unknown. Durable on return.
func (g *Groups) CommitOffsetsAdmin(group string, offsets map[TopicPartition]OffsetAndMetadata) error {
	return g.commitOffsetsAdmin(group, offsets)
}

// GroupIsActive reports whether group has members (any state other than
// Empty or Dead).
func (g *Groups) GroupIsActive(group string) bool { return g.groupIsActive(group) }

// ListGroupOffsets returns group's committed offsets (not the staged
// transactional ones); nil for an unknown group.
func (g *Groups) ListGroupOffsets(group string) map[TopicPartition]OffsetAndMetadata {
	return g.listGroupOffsets(group)
}

// ClampOffsets lowers, for each partition in ends, every group's committed
// offset above ends[tp] to ends[tp] (leader epoch -1), durably before it
// returns (one group-log write for all), and answers how many offsets it
// changed. A mirror's failover calls it after cutting the partitions' logs,
// before they become writable.
func (g *Groups) ClampOffsets(ends map[TopicPartition]int64) (int, error) {
	changed := 0
	err := g.call(func(now time.Time) {
		for _, tp := range sortedTPs(ends) {
			changed += len(g.core.ClampOffsets(now, tp, ends[tp]))
		}
	})
	return changed, err
}
