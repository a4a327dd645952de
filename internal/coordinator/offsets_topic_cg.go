package coordinator

// Consumer group (KIP-848) records in __consumer_offsets, in Kafka's
// group-coordinator schemas (group-coordinator/src/main/resources/common/
// message/ConsumerGroup*Key.json and *Value.json). A key is its version
// (the record type) and its fields, not flexible (int16-length strings);
// a value is version 0 and its fields, flexible (compact strings and
// arrays, a tagged-field section), and a tombstone has no value:
//
//	key 3 ConsumerGroupMetadataKey                 GroupId
//	      ConsumerGroupMetadataValue v0            Epoch; tag 0 MetadataHash int64 (Kafka 4.1, written when not 0)
//	key 5 ConsumerGroupMemberMetadataKey           GroupId, MemberId
//	      ConsumerGroupMemberMetadataValue v0      InstanceId, RackId, ClientId, ClientHost,
//	                                               SubscribedTopicNames, SubscribedTopicRegex,
//	                                               RebalanceTimeoutMs, ServerAssignor;
//	                                               tag 0 ClassicMemberMetadata (a member
//	                                               speaking the classic protocol)
//	key 6 ConsumerGroupTargetAssignmentMetadataKey GroupId
//	      ...Value v0                              AssignmentEpoch
//	key 7 ConsumerGroupTargetAssignmentMemberKey   GroupId, MemberId
//	      ...Value v0                              TopicPartitions [TopicId, Partitions]
//	key 8 ConsumerGroupCurrentMemberAssignmentKey  GroupId, MemberId
//	      ...Value v0                              MemberEpoch, PreviousMemberEpoch, State,
//	                                               AssignedPartitions, PartitionsPendingRevocation
//	key 16 ConsumerGroupRegularExpressionKey       GroupId, RegularExpression
//	      ...Value v0                              Topics, Version, Timestamp
//
// Key 4 (ConsumerGroupPartitionMetadata, deprecated by 4.1's metadata
// hash) is not written and is skipped when read, as are tagged fields
// this version does not know.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Key versions of the consumer group records.
const (
	cgKeyMetadata       int16 = 3
	cgKeyPartitionMeta  int16 = 4
	cgKeyMemberMetadata int16 = 5
	cgKeyTargetMetadata int16 = 6
	cgKeyTargetMember   int16 = 7
	cgKeyCurrentMember  int16 = 8
	cgKeyRegex          int16 = 16
)

var cgKeyOf = map[recordType]int16{
	recCGMetadata: cgKeyMetadata, recCGMemberMetadata: cgKeyMemberMetadata, recCGTargetMetadata: cgKeyTargetMetadata,
	recCGTargetMember: cgKeyTargetMember, recCGCurrentMember: cgKeyCurrentMember, recCGRegex: cgKeyRegex,
}

var cgTypeOf = map[int16]recordType{
	cgKeyMetadata: recCGMetadata, cgKeyMemberMetadata: recCGMemberMetadata, cgKeyTargetMetadata: recCGTargetMetadata,
	cgKeyTargetMember: recCGTargetMember, cgKeyCurrentMember: recCGCurrentMember, cgKeyRegex: recCGRegex,
}

// cgSubKey is the key's field after the group id: the member id, or the
// regular expression ("" for the group-level records).
func cgSubKey(r *record) string {
	if r.typ == recCGRegex {
		return r.cg.regex
	}
	return r.cg.member
}

// cgTombstone is the tombstone of the record typ with sub-key sub.
func cgTombstone(typ recordType, group, sub string) *record {
	c := &cgRecord{tombstone: true}
	if typ == recCGRegex {
		c.regex = sub
	} else {
		c.member = sub
	}
	return &record{typ: typ, group: group, cg: c}
}

// cgTopicKey is r's key in Kafka's schema.
func cgTopicKey(r *record) []byte {
	k := kbin.AppendInt16(nil, cgKeyOf[r.typ])
	k = kbin.AppendString(k, r.group)
	if hasMemberKey(r.typ) || r.typ == recCGRegex {
		k = kbin.AppendString(k, cgSubKey(r))
	}
	return k
}

func appendCompactNull(dst []byte, s string) []byte {
	if s == "" {
		return kbin.AppendCompactNullableString(dst, nil)
	}
	return kbin.AppendCompactNullableString(dst, &s)
}

func appendTopicAssignment(dst []byte, a assignment) []byte {
	ids := a.topics()
	dst = kbin.AppendCompactArrayLen(dst, len(ids))
	for _, id := range ids {
		dst = kbin.AppendUuid(dst, id)
		dst = kbin.AppendCompactArrayLen(dst, len(a[id]))
		for _, p := range a[id] {
			dst = kbin.AppendInt32(dst, p)
		}
		dst = kbin.AppendUvarint(dst, 0) // the element's tagged fields
	}
	return dst
}

// cgTopicValue is r's value in Kafka's schema; nil for a tombstone.
func cgTopicValue(r *record) []byte {
	c := r.cg
	if c.tombstone {
		return nil
	}
	v := kbin.AppendInt16(nil, 0)
	switch r.typ {
	case recCGMetadata:
		v = kbin.AppendInt32(v, c.epoch)
		if c.metadataHash != 0 {
			v = kbin.AppendUvarint(v, 1) // one tagged field
			v = kbin.AppendUvarint(v, 0) // tag 0: MetadataHash
			v = kbin.AppendUvarint(v, 8)
			return kbin.AppendInt64(v, c.metadataHash)
		}
	case recCGMemberMetadata:
		m := c.meta
		v = appendCompactNull(v, m.instanceID)
		v = appendCompactNull(v, m.rackID)
		v = kbin.AppendCompactString(v, m.clientID)
		v = kbin.AppendCompactString(v, m.clientHost)
		v = kbin.AppendCompactArrayLen(v, len(m.subscribedNames))
		for _, n := range m.subscribedNames {
			v = kbin.AppendCompactString(v, n)
		}
		v = appendCompactNull(v, m.regex)
		v = kbin.AppendInt32(v, m.rebalanceTimeoutMs)
		v = appendCompactNull(v, m.serverAssignor)
		if cm := m.classic; cm != nil {
			// Tagged field 0: ClassicMemberMetadata (SessionTimeoutMs,
			// SupportedProtocols [Name, Metadata]).
			f := kbin.AppendInt32(nil, cm.sessionTimeoutMs)
			f = kbin.AppendCompactArrayLen(f, len(cm.protocols))
			for _, p := range cm.protocols {
				f = kbin.AppendCompactString(f, p.Name)
				f = kbin.AppendCompactBytes(f, p.Metadata)
				f = kbin.AppendUvarint(f, 0)
			}
			f = kbin.AppendUvarint(f, 0)
			v = kbin.AppendUvarint(v, 1)
			v = kbin.AppendUvarint(v, 0)
			v = kbin.AppendUvarint(v, uint32(len(f)))
			return append(v, f...)
		}
	case recCGTargetMetadata:
		v = kbin.AppendInt32(v, c.assignmentEpoch)
	case recCGTargetMember:
		v = appendTopicAssignment(v, c.partitions)
	case recCGRegex:
		v = kbin.AppendCompactArrayLen(v, len(c.resolved.topics))
		for _, n := range c.resolved.topics {
			v = kbin.AppendCompactString(v, n)
		}
		v = kbin.AppendInt64(v, c.resolved.version)
		v = kbin.AppendInt64(v, c.resolved.timestamp)
	case recCGCurrentMember:
		v = kbin.AppendInt32(v, c.memberEpoch)
		v = kbin.AppendInt32(v, c.prevEpoch)
		v = kbin.AppendInt8(v, int8(c.state))
		v = appendTopicAssignment(v, c.assigned)
		v = appendTopicAssignment(v, c.pending)
	}
	return kbin.AppendUvarint(v, 0) // no tagged fields
}

// readTags reads a tagged-field section, calling fn with each field's tag
// and data (unknown tags are the caller's to ignore).
func readTags(r *kbin.Reader, fn func(tag uint32, data []byte)) {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		tag, size := r.Uvarint(), r.Uvarint()
		if int(size) > len(r.Src) {
			r.Span(int(size)) // marks the reader failed
			return
		}
		data := r.Span(int(size))
		if fn != nil {
			fn(tag, data)
		}
	}
}

func readCompactNull(r *kbin.Reader) string {
	if s := r.CompactNullableString(); s != nil {
		return *s
	}
	return ""
}

func readTopicAssignment(r *kbin.Reader) (assignment, error) { return readAssignmentOf(r, true) }

// readClassicMeta reads ConsumerGroupMemberMetadataValue's tagged field
// ClassicMemberMetadata.
func readClassicMeta(data []byte) (*classicMeta, error) {
	r := kbin.Reader{Src: data}
	cm := &classicMeta{sessionTimeoutMs: r.Int32()}
	n, err := readCompactCount(&r, 3)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n && r.Ok(); i++ {
		name := r.CompactString()
		meta := cloneBytes(r.CompactBytes())
		cm.protocols = append(cm.protocols, Protocol{Name: name, Metadata: meta})
		readTags(&r, nil)
	}
	readTags(&r, nil)
	if err := r.Complete(); err != nil {
		return nil, fmt.Errorf("%w: ClassicMemberMetadata: %v", ErrGroupLogCorrupt, err)
	}
	return cm, nil
}

// decodeCGTopic decodes a consumer group record of key version kv; ok is
// false for a key version that is not one (or the skipped key 4).
func decodeCGTopic(kv int16, key, value []byte) (rec record, ok bool, err error) {
	typ, ok := cgTypeOf[kv]
	if !ok {
		return record{}, false, nil
	}
	kr := kbin.Reader{Src: key[2:]}
	c := &cgRecord{}
	rec = record{typ: typ, group: kr.String(), cg: c}
	if hasMemberKey(typ) {
		c.member = kr.String()
	} else if typ == recCGRegex {
		c.regex = kr.String()
	}
	if err := kr.Complete(); err != nil {
		return record{}, true, fmt.Errorf("%w: key %d: %v", ErrGroupLogCorrupt, kv, err)
	}
	if value == nil {
		c.tombstone = true
		return rec, true, nil
	}
	r := kbin.Reader{Src: value}
	if v := r.Int16(); v != 0 {
		return record{}, true, fmt.Errorf("%w: key %d: value version %d", ErrGroupLogCorrupt, kv, v)
	}
	switch typ {
	case recCGMetadata:
		c.epoch = r.Int32()
		readTags(&r, func(tag uint32, data []byte) {
			if tag == 0 && len(data) == 8 {
				t := kbin.Reader{Src: data}
				c.metadataHash = t.Int64()
			}
		})
	case recCGMemberMetadata:
		m := &cgMemberMeta{instanceID: readCompactNull(&r), rackID: readCompactNull(&r), clientID: r.CompactString(), clientHost: r.CompactString()}
		n, err := readCompactCount(&r, 1)
		if err != nil {
			return record{}, true, err
		}
		for i := 0; i < n && r.Ok(); i++ {
			m.subscribedNames = append(m.subscribedNames, r.CompactString())
		}
		m.regex, m.rebalanceTimeoutMs, m.serverAssignor = readCompactNull(&r), r.Int32(), readCompactNull(&r)
		c.meta = m
		var tagErr error
		readTags(&r, func(tag uint32, data []byte) {
			if tag == 0 {
				m.classic, tagErr = readClassicMeta(data)
			}
		})
		if tagErr != nil {
			return record{}, true, tagErr
		}
	case recCGTargetMetadata:
		c.assignmentEpoch = r.Int32()
		readTags(&r, nil)
	case recCGRegex:
		n, err := readCompactCount(&r, 1)
		if err != nil {
			return record{}, true, err
		}
		x := &resolvedRegex{topics: []string{}}
		for i := 0; i < n && r.Ok(); i++ {
			x.topics = append(x.topics, r.CompactString())
		}
		x.version, x.timestamp = r.Int64(), r.Int64()
		c.resolved = x
		readTags(&r, nil)
	case recCGTargetMember:
		if c.partitions, err = readTopicAssignment(&r); err != nil {
			return record{}, true, err
		}
		readTags(&r, nil)
	case recCGCurrentMember:
		c.memberEpoch, c.prevEpoch, c.state = r.Int32(), r.Int32(), MemberState(r.Int8())
		if c.assigned, err = readTopicAssignment(&r); err != nil {
			return record{}, true, err
		}
		if c.pending, err = readTopicAssignment(&r); err != nil {
			return record{}, true, err
		}
		readTags(&r, nil)
	}
	if err := r.Complete(); err != nil {
		return record{}, true, fmt.Errorf("%w: key %d value: %v", ErrGroupLogCorrupt, kv, err)
	}
	return rec, true, nil
}
