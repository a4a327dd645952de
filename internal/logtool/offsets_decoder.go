package logtool

// The offsets decoder: what kafka-dump-log --offsets-decoder prints for a
// record of __consumer_offsets (DumpLogSegments.OffsetsMessageParser):
//
//	key: {"type":"<key version>","data":{…the key's fields…}}
//	payload: {"version":"<value version>","data":{…the value's fields…}}
//
// a tombstone's payload <DELETE>, and for a key of another type
// "Unknown record type N at offset O, skipping." with no payload. Field
// names and order are those of Kafka's JSON schemas (OffsetCommitKey,
// OffsetCommitValue, GroupMetadataKey, GroupMetadataValue); bytes are
// base64, as Kafka's JSON converters write them. Deviation: Kafka also
// decodes a consumer group member's subscription and assignment (the
// consumer protocol) into JSON; they are printed as base64 here. The
// KIP-848 consumer group records (key versions 3 and 5 to 8, and 16, the
// regular expressions) are decoded by the group coordinator's own reader
// (coordinator.ConsumerGroupRecordJSON); key 4, which this broker does not
// write, prints as an unknown record type.

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
)

type offsetKeyJSON struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type offsetValueJSON struct {
	Offset          int64  `json:"offset"`
	LeaderEpoch     *int32 `json:"leaderEpoch,omitempty"`
	Metadata        string `json:"metadata"`
	CommitTimestamp int64  `json:"commitTimestamp"`
	ExpireTimestamp *int64 `json:"expireTimestamp,omitempty"`
}

type groupKeyJSON struct {
	Group string `json:"group"`
}

type groupValueJSON struct {
	ProtocolType          string            `json:"protocolType"`
	Generation            int32             `json:"generation"`
	Protocol              *string           `json:"protocol"`
	Leader                *string           `json:"leader"`
	CurrentStateTimestamp *int64            `json:"currentStateTimestamp,omitempty"`
	Members               []groupMemberJSON `json:"members"`
}

type groupMemberJSON struct {
	MemberID         string          `json:"memberId"`
	GroupInstanceID  json.RawMessage `json:"groupInstanceId,omitempty"` // v3+: a string or null
	ClientID         string          `json:"clientId"`
	ClientHost       string          `json:"clientHost"`
	RebalanceTimeout *int32          `json:"rebalanceTimeout,omitempty"`
	SessionTimeout   int32           `json:"sessionTimeout"`
	Subscription     []byte          `json:"subscription"`
	Assignment       []byte          `json:"assignment"`
}

type wrappedJSON struct {
	Type    string `json:"type,omitempty"`
	Version string `json:"version,omitempty"`
	Data    any    `json:"data"`
}

// DecodeOffsetsRecord is the offsets decoder's key and payload for one
// record; payload is "" when there is none to print.
func DecodeOffsetsRecord(offset int64, key, value []byte) (keyText, payload string) {
	if key == nil {
		return fmt.Sprintf("Error at offset %d, skipping. The record has no key.", offset), ""
	}
	if len(key) < 2 {
		return fmt.Sprintf("Error at offset %d, skipping. The key is %d bytes.", offset, len(key)), ""
	}
	version := int16(key[0])<<8 | int16(key[1])
	var k, v any
	var verr error
	switch version {
	case 0, 1:
		var ok kmsg.OffsetCommitKey
		if err := ok.ReadFrom(key); err != nil {
			return fmt.Sprintf("Error at offset %d, skipping. %v", offset, err), ""
		}
		k = offsetKeyJSON{ok.Group, ok.Topic, ok.Partition}
		if value != nil {
			var ov kmsg.OffsetCommitValue
			if verr = ov.ReadFrom(value); verr == nil {
				j := offsetValueJSON{Offset: ov.Offset, Metadata: ov.Metadata, CommitTimestamp: ov.CommitTimestamp}
				if ov.Version >= 3 {
					j.LeaderEpoch = &ov.LeaderEpoch
				}
				if ov.Version == 1 {
					j.ExpireTimestamp = &ov.ExpireTimestamp
				}
				v = j
			}
		}
	case 2:
		var gk kmsg.GroupMetadataKey
		if err := gk.ReadFrom(key); err != nil {
			return fmt.Sprintf("Error at offset %d, skipping. %v", offset, err), ""
		}
		k = groupKeyJSON{gk.Group}
		if value != nil {
			var gv kmsg.GroupMetadataValue
			if verr = gv.ReadFrom(value); verr == nil {
				j := groupValueJSON{ProtocolType: gv.ProtocolType, Generation: gv.Generation, Protocol: gv.Protocol,
					Leader: gv.Leader, Members: []groupMemberJSON{}}
				if gv.Version >= 2 {
					j.CurrentStateTimestamp = &gv.CurrentStateTimestamp
				}
				for _, m := range gv.Members {
					mj := groupMemberJSON{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost,
						SessionTimeout: m.SessionTimeoutMillis, Subscription: m.Subscription, Assignment: m.Assignment}
					if gv.Version >= 3 {
						mj.GroupInstanceID, _ = json.Marshal(m.InstanceID)
					}
					if gv.Version >= 1 {
						mj.RebalanceTimeout = &m.RebalanceTimeoutMillis
					}
					j.Members = append(j.Members, mj)
				}
				v = j
			}
		}
	default:
		ck, cv, ok, err := coordinator.ConsumerGroupRecordJSON(version, key, value)
		if !ok {
			return fmt.Sprintf("Unknown record type %d at offset %d, skipping.", version, offset), ""
		}
		if err != nil {
			return fmt.Sprintf("Error at offset %d, skipping. %v", offset, err), ""
		}
		k, v = ck, cv
	}
	if verr != nil {
		return fmt.Sprintf("Error at offset %d, skipping. %v", offset, verr), ""
	}
	kb, _ := json.Marshal(wrappedJSON{Type: strconv.Itoa(int(version)), Data: k})
	if value == nil {
		return string(kb), "<DELETE>"
	}
	if len(value) < 2 {
		return fmt.Sprintf("Error at offset %d, skipping. The value is %d bytes.", offset, len(value)), ""
	}
	vb, _ := json.Marshal(wrappedJSON{Version: strconv.Itoa(int(int16(value[0])<<8 | int16(value[1]))), Data: v})
	return string(kb), string(vb)
}
