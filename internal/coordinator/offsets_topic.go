package coordinator

// __consumer_offsets in Kafka's record schemas: the group coordinator's
// store of record, so tools that read the topic (Burrow, kmsg) see the
// groups.
//
// Every change of a group (offsets, membership, KIP-848 state) is
// appended to the group's partition of the broker's __consumer_offsets
// under the coordinator's lock, and the request that made it is answered
// once that partition's group commit has made it durable (as the group
// log's fsync did before). At start-up the coordinator loads every
// partition from its log start: the last value of a key wins, a
// tombstone deletes. The records:
//
//   - key OffsetCommitKey version 1 (group, topic, partition), value
//     OffsetCommitValue version 3 (offset, leader epoch, metadata, commit
//     timestamp), as Kafka 3.x writes them; an offset deleted or expired
//     is a tombstone (the key, no value);
//   - key GroupMetadataKey version 2 (group), value GroupMetadataValue
//     version 3 (protocol type, generation, protocol, leader, state
//     timestamp, members with their subscription and assignment); a group
//     deleted is a tombstone, and so are its offsets and KIP-848 records;
//   - KIP-848 consumer groups' records, keys 3 and 5-8
//     (offsets_topic_cg.go);
//   - a TxnOffsetCommit's offsets: OffsetCommitKey/Value records in a
//     transactional batch of the producer (its id and epoch, no
//     sequence), written at TxnOffsetCommit; the transaction's COMMIT or
//     ABORT marker is written to the same partition when it ends, and
//     only then are they committed offsets (an ABORT drops them), as
//     Kafka's coordinator replays pending transactional offsets;
//   - the partition of group g is Kafka's partitionFor:
//     abs(g.hashCode) % partitions, with Java's String.hashCode.
//
// A data dir whose group log (group-log, written by an earlier version)
// is still there is migrated at start-up (offsets_topic_store.go).

import (
	"fmt"
	"sort"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetsTopic is the broker's __consumer_offsets as the group
// coordinator writes and reads it.
type OffsetsTopic interface {
	// Partitions is the topic's partition count.
	Partitions() int32
	// Append appends recs to partition p (one batch, or a few when
	// large), in order: plain batches when txn.ID < 0, else
	// transactional batches of that producer and epoch. It returns the
	// offset after the last record and does not wait for an fsync.
	Append(p int32, recs []TopicRecord, txn TopicProducer) (end int64, err error)
	// WriteMarker appends a COMMIT or ABORT marker for the producer to
	// partition p and returns the offset after it.
	WriteMarker(p int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) (end int64, err error)
	// Sync makes every record of partition p below end durable.
	Sync(p int32, end int64) error
	// End is the offset after partition p's last record.
	End(p int32) int64
	// Replay calls fn with each record of partition p, from its start,
	// and the batch it is in; a COMMIT or ABORT marker is one call with
	// a nil key.
	Replay(p int32, fn func(b TopicBatch, key, value []byte)) error
}

// TopicRecord is one record of an internal topic; a nil Value is a
// tombstone.
type TopicRecord struct{ Key, Value []byte }

// TopicProducer is a batch's producer; ID -1: none.
type TopicProducer struct {
	ID    int64
	Epoch int16
}

var noProducer = TopicProducer{ID: -1, Epoch: -1}

// TopicBatch is what Replay tells of a record's batch.
type TopicBatch struct {
	Producer      TopicProducer
	Transactional bool
	// Control: a COMMIT (Commit) or ABORT marker of Producer.
	Control, Commit bool
}

// javaStringHash is Java's String.hashCode: s as UTF-16 code units,
// h = 31*h + unit, in int32 arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// PartitionFor is Kafka's partitionFor(groupId): Utils.abs(hashCode) %
// partitions, Utils.abs mapping MinInt32 to 0.
func PartitionFor(id string, partitions int32) int32 {
	h := javaStringHash(id)
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % partitions
}

// Keys and values of the records, in Kafka's schemas.

func offsetKey(group string, tp TopicPartition) []byte {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	return k.AppendTo(nil)
}

func offsetValue(om OffsetAndMetadata) []byte {
	v := kmsg.OffsetCommitValue{Version: 3, Offset: om.Offset, LeaderEpoch: om.LeaderEpoch, Metadata: om.Metadata,
		CommitTimestamp: om.CommitTimestamp}
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: 2, Group: group}
	return k.AppendTo(nil)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func groupValue(m *groupMetadata) []byte {
	v := kmsg.GroupMetadataValue{Version: 3, ProtocolType: m.protocolType, Generation: m.generation,
		Protocol: nullable(m.protocol), Leader: nullable(m.leader), CurrentStateTimestamp: m.stateSince}
	for _, mm := range m.members {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{
			MemberID: mm.id, InstanceID: nullable(mm.instanceID), ClientID: mm.clientID, ClientHost: mm.clientHost,
			RebalanceTimeoutMillis: mm.rebalanceTimeoutMs, SessionTimeoutMillis: mm.sessionTimeoutMs,
			Subscription: mm.subscription, Assignment: mm.assignment,
		})
	}
	return v.AppendTo(nil)
}

// decodeGroupValue reads a GroupMetadataValue (versions 0-3). The value
// has no state: a group with members is Stable, one without Empty, as
// Kafka loads it.
func decodeGroupValue(value []byte) (*groupMetadata, error) {
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return nil, err
	}
	m := &groupMetadata{state: StateEmpty, protocolType: v.ProtocolType, protocol: deref(v.Protocol), leader: deref(v.Leader),
		generation: v.Generation, stateSince: v.CurrentStateTimestamp}
	if v.Version < 2 {
		m.stateSince = -1
	}
	for _, mm := range v.Members {
		rt := mm.RebalanceTimeoutMillis
		if v.Version < 1 {
			rt = mm.SessionTimeoutMillis
		}
		m.members = append(m.members, memberMetadata{id: mm.MemberID, instanceID: deref(mm.InstanceID), clientID: mm.ClientID,
			clientHost: mm.ClientHost, sessionTimeoutMs: mm.SessionTimeoutMillis, rebalanceTimeoutMs: rt,
			subscription: mm.Subscription, assignment: mm.Assignment})
	}
	if len(m.members) > 0 {
		m.state = StateStable
	}
	return m, nil
}

// replayStats is what a load read.
type replayStats struct {
	records, skipped int
}

// replayTopic loads every partition of t into c (c.replaying set by the
// caller): records become the core's records and are applied in the
// order of each partition. A transactional batch's offsets are staged for
// its producer; the producer's marker in the same partition commits or
// drops what it staged in that partition's groups. Records this version
// does not know (another key version, a value that does not decode) are
// skipped and counted.
func (c *groupCore) replayTopic(t OffsetsTopic) (replayStats, error) {
	var st replayStats
	for p := range t.Partitions() {
		// The groups of this partition each producer has staged in.
		staged := map[int64]map[string]bool{}
		err := t.Replay(p, func(b TopicBatch, key, value []byte) {
			st.records++
			if b.Control {
				gs := staged[b.Producer.ID]
				for _, id := range sortedKeys(gs) {
					c.apply(record{typ: recTxnComplete, group: id, producerID: b.Producer.ID, commit: b.Commit})
				}
				delete(staged, b.Producer.ID)
				return
			}
			r, ok := decodeTopicRecord(b, key, value)
			if !ok {
				st.skipped++
				return
			}
			if r.typ == recTxnStage {
				gs := staged[r.producerID]
				if gs == nil {
					gs = map[string]bool{}
					staged[r.producerID] = gs
				}
				gs[r.group] = true
			}
			if r.typ == recGroupMetadata && r.meta == nil {
				c.dropGroupMetadata(r.group)
				return
			}
			c.apply(r)
		})
		if err != nil {
			return st, fmt.Errorf("reading __consumer_offsets-%d: %w", p, err)
		}
	}
	for id, g := range c.groups {
		if g.lastMeta == nil && g.cg == nil && len(g.offsets) == 0 && len(g.pendingTxn) == 0 && len(g.members) == 0 {
			delete(c.groups, id)
		}
	}
	return st, nil
}

// dropGroupMetadata applies a GroupMetadata tombstone: the classic
// membership goes.
func (c *groupCore) dropGroupMetadata(id string) {
	g := c.groups[id]
	if g == nil {
		return
	}
	c.restoreGroup(g, &groupMetadata{state: StateEmpty})
	g.lastMeta = nil
}

// decodeTopicRecord turns one record of __consumer_offsets into the
// core's record (a GroupMetadata tombstone: recGroupMetadata with a nil
// meta); ok false: not one this version knows.
func decodeTopicRecord(b TopicBatch, key, value []byte) (record, bool) {
	if len(key) < 2 {
		return record{}, false
	}
	switch version := int16(key[0])<<8 | int16(key[1]); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(key) != nil {
			return record{}, false
		}
		r := record{group: k.Group, tp: TopicPartition{k.Topic, k.Partition}}
		if value == nil {
			if b.Transactional {
				return record{}, false // Kafka writes no transactional tombstone
			}
			r.typ = recOffsetDelete
			return r, true
		}
		var val kmsg.OffsetCommitValue
		if val.ReadFrom(value) != nil {
			return record{}, false
		}
		le := int32(-1)
		if val.Version >= 3 {
			le = val.LeaderEpoch
		}
		r.offset = OffsetAndMetadata{Offset: val.Offset, LeaderEpoch: le, Metadata: val.Metadata, CommitTimestamp: val.CommitTimestamp}
		r.typ = recOffsetCommit
		if b.Transactional {
			r.typ, r.producerID, r.producerEpoch = recTxnStage, b.Producer.ID, b.Producer.Epoch
		}
		return r, true
	case 2:
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(key) != nil {
			return record{}, false
		}
		r := record{typ: recGroupMetadata, group: k.Group}
		if value == nil {
			return r, true
		}
		m, err := decodeGroupValue(value)
		if err != nil {
			return record{}, false
		}
		r.meta = m
		return r, true
	default:
		r, ok, err := decodeCGTopic(version, key, value)
		if !ok || err != nil {
			return record{}, false
		}
		return r, true
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
