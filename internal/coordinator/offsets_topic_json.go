package coordinator

// The consumer group (KIP-848) records of __consumer_offsets as
// kafka-dump-log --offsets-decoder prints them: the key's and the value's
// fields under the names of Kafka's JSON schemas
// (ConsumerGroup*Key.json / *Value.json, camelCase as Kafka's generated
// JSON converters write them), topic ids as Kafka prints a Uuid (URL-safe
// base64, no padding), bytes as base64. The decoding is decodeCGTopic's,
// so the tool reads exactly what the coordinator reads.

import (
	"encoding/base64"
	"sort"
)

type cgKeyJSON struct {
	GroupID           string  `json:"groupId"`
	MemberID          *string `json:"memberId,omitempty"`
	RegularExpression *string `json:"regularExpression,omitempty"`
}

type cgMetadataJSON struct {
	Epoch        int32 `json:"epoch"`
	MetadataHash int64 `json:"metadataHash,omitempty"` // a tagged field: Kafka prints it only when set
}

type cgMemberMetadataJSON struct {
	InstanceID            *string          `json:"instanceId"`
	RackID                *string          `json:"rackId"`
	ClientID              string           `json:"clientId"`
	ClientHost            string           `json:"clientHost"`
	SubscribedTopicNames  []string         `json:"subscribedTopicNames"`
	SubscribedTopicRegex  *string          `json:"subscribedTopicRegex"`
	RebalanceTimeoutMs    int32            `json:"rebalanceTimeoutMs"`
	ServerAssignor        *string          `json:"serverAssignor"`
	ClassicMemberMetadata *classicMetaJSON `json:"classicMemberMetadata,omitempty"`
}

type classicMetaJSON struct {
	SessionTimeoutMs   int32          `json:"sessionTimeoutMs"`
	SupportedProtocols []protocolJSON `json:"supportedProtocols"`
}

type protocolJSON struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata"`
}

type cgTargetMetadataJSON struct {
	AssignmentEpoch int32 `json:"assignmentEpoch"`
}

type topicPartitionsJSON struct {
	TopicID    string  `json:"topicId"`
	Partitions []int32 `json:"partitions"`
}

type cgTargetMemberJSON struct {
	TopicPartitions []topicPartitionsJSON `json:"topicPartitions"`
}

type cgCurrentMemberJSON struct {
	MemberEpoch                 int32                 `json:"memberEpoch"`
	PreviousMemberEpoch         int32                 `json:"previousMemberEpoch"`
	State                       int8                  `json:"state"`
	AssignedPartitions          []topicPartitionsJSON `json:"assignedPartitions"`
	PartitionsPendingRevocation []topicPartitionsJSON `json:"partitionsPendingRevocation"`
}

type cgRegexJSON struct {
	Topics    []string `json:"topics"`
	Version   int64    `json:"version"`
	Timestamp int64    `json:"timestamp"`
}

// ConsumerGroupRecordJSON decodes a consumer group record of
// __consumer_offsets (key version kv) into the values kafka-dump-log's
// offsets decoder prints: ok is false for a key version that is not a
// consumer group record; value is nil for a tombstone.
func ConsumerGroupRecordJSON(kv int16, key, value []byte) (keyData, valueData any, ok bool, err error) {
	if len(key) < 2 {
		return nil, nil, false, nil
	}
	rec, ok, err := decodeCGTopic(kv, key, value)
	if !ok || err != nil {
		return nil, nil, ok, err
	}
	c := rec.cg
	k := cgKeyJSON{GroupID: rec.group}
	if hasMemberKey(rec.typ) {
		k.MemberID = &c.member
	} else if rec.typ == recCGRegex {
		k.RegularExpression = &c.regex
	}
	if c.tombstone {
		return k, nil, true, nil
	}
	switch rec.typ {
	case recCGMetadata:
		return k, cgMetadataJSON{Epoch: c.epoch, MetadataHash: c.metadataHash}, true, nil
	case recCGMemberMetadata:
		m := c.meta
		v := cgMemberMetadataJSON{InstanceID: nullable(m.instanceID), RackID: nullable(m.rackID), ClientID: m.clientID,
			ClientHost: m.clientHost, SubscribedTopicNames: append([]string{}, m.subscribedNames...),
			SubscribedTopicRegex: nullable(m.regex), RebalanceTimeoutMs: m.rebalanceTimeoutMs, ServerAssignor: nullable(m.serverAssignor)}
		if m.classic != nil {
			cm := &classicMetaJSON{SessionTimeoutMs: m.classic.sessionTimeoutMs, SupportedProtocols: []protocolJSON{}}
			for _, p := range m.classic.protocols {
				cm.SupportedProtocols = append(cm.SupportedProtocols, protocolJSON(p))
			}
			v.ClassicMemberMetadata = cm
		}
		return k, v, true, nil
	case recCGTargetMetadata:
		return k, cgTargetMetadataJSON{AssignmentEpoch: c.assignmentEpoch}, true, nil
	case recCGTargetMember:
		return k, cgTargetMemberJSON{TopicPartitions: assignmentJSON(c.partitions)}, true, nil
	case recCGCurrentMember:
		return k, cgCurrentMemberJSON{MemberEpoch: c.memberEpoch, PreviousMemberEpoch: c.prevEpoch, State: int8(c.state),
			AssignedPartitions: assignmentJSON(c.assigned), PartitionsPendingRevocation: assignmentJSON(c.pending)}, true, nil
	case recCGRegex:
		return k, cgRegexJSON{Topics: append([]string{}, c.resolved.topics...), Version: c.resolved.version, Timestamp: c.resolved.timestamp}, true, nil
	}
	return nil, nil, false, nil
}

// assignmentJSON lists a's topics in id order, each as Kafka prints a
// Uuid.
func assignmentJSON(a assignment) []topicPartitionsJSON {
	out := []topicPartitionsJSON{}
	for t, ps := range a {
		out = append(out, topicPartitionsJSON{TopicID: base64.RawURLEncoding.EncodeToString(t[:]), Partitions: append([]int32{}, ps...)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TopicID < out[j].TopicID })
	return out
}
