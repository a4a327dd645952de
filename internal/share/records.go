package share

// The records of __share_group_state, in the layout of Kafka's share
// coordinator (share-coordinator/src/main/resources/common/message:
// ShareSnapshotKey/Value and ShareUpdateKey/Value, framed as every
// coordinator record is: an int16 record type before the key, an int16
// version before the value):
//
//	key   type 0 (ShareSnapshot) or 1 (ShareUpdate): GroupId string,
//	      TopicId uuid, Partition int32 (not flexible)
//	value version 0, flexible: ShareSnapshot SnapshotEpoch uint16,
//	      StateEpoch int32, LeaderEpoch int32, StartOffset int64,
//	      StateBatches; ShareUpdate SnapshotEpoch uint16, LeaderEpoch
//	      int32, StartOffset int64 (-1: unchanged), StateBatches. A state
//	      batch is FirstOffset int64, LastOffset int64, DeliveryState int8,
//	      DeliveryCount int16.
//
// A nil value is a tombstone: the share partition's state was deleted.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Record types (Kafka's ShareCoordinator.SHARE_SNAPSHOT_RECORD_KEY_VERSION
// and SHARE_UPDATE_RECORD_KEY_VERSION).
const (
	RecordSnapshot int16 = 0
	RecordUpdate   int16 = 1
)

// StateRecord is one decoded record of __share_group_state.
type StateRecord struct {
	Type      int16
	Group     string
	TP        TP
	Tombstone bool
	// The value's fields (StateEpoch only in a snapshot).
	SnapshotEpoch uint16
	StateEpoch    int32
	LeaderEpoch   int32
	Start         int64
	Batches       []StateBatch
}

// Key encodes the record's key.
func (r StateRecord) Key() []byte {
	k := kbin.AppendInt16(nil, r.Type)
	k = kbin.AppendString(k, r.Group)
	k = kbin.AppendUuid(k, r.TP.Topic)
	return kbin.AppendInt32(k, r.TP.Partition)
}

// Value encodes the record's value (nil for a tombstone).
func (r StateRecord) Value() []byte {
	if r.Tombstone {
		return nil
	}
	v := kbin.AppendInt16(nil, 0)
	v = kbin.AppendUint16(v, r.SnapshotEpoch)
	if r.Type == RecordSnapshot {
		v = kbin.AppendInt32(v, r.StateEpoch)
	}
	v = kbin.AppendInt32(v, r.LeaderEpoch)
	v = kbin.AppendInt64(v, r.Start)
	v = kbin.AppendCompactArrayLen(v, len(r.Batches))
	for _, b := range r.Batches {
		v = kbin.AppendInt64(v, b.First)
		v = kbin.AppendInt64(v, b.Last)
		v = kbin.AppendInt8(v, int8(b.State))
		v = kbin.AppendInt16(v, b.Count)
		v = kbin.AppendUvarint(v, 0) // tagged fields
	}
	return kbin.AppendUvarint(v, 0)
}

// ErrUnknownRecordType is a key of a type the share coordinator does not
// write (Kafka's loader skips them).
var ErrUnknownRecordType = errors.New("unknown record type")

// DecodeStateRecord decodes a record of __share_group_state.
func DecodeStateRecord(key, value []byte) (StateRecord, error) {
	var r StateRecord
	kr := kbin.Reader{Src: key}
	r.Type = kr.Int16()
	if !kr.Ok() {
		return r, errors.New("short key")
	}
	if r.Type != RecordSnapshot && r.Type != RecordUpdate {
		return r, fmt.Errorf("%w %d", ErrUnknownRecordType, r.Type)
	}
	r.Group = kr.String()
	r.TP.Topic = kr.Uuid()
	r.TP.Partition = kr.Int32()
	if err := kr.Complete(); err != nil {
		return r, fmt.Errorf("key: %w", err)
	}
	if value == nil {
		r.Tombstone = true
		return r, nil
	}
	vr := kbin.Reader{Src: value}
	if v := vr.Int16(); vr.Ok() && v != 0 {
		return r, fmt.Errorf("value version %d", v)
	}
	r.SnapshotEpoch = vr.Uint16()
	if r.Type == RecordSnapshot {
		r.StateEpoch = vr.Int32()
	}
	r.LeaderEpoch = vr.Int32()
	r.Start = vr.Int64()
	n := vr.CompactArrayLen()
	if n < 0 || int(n) > len(value) {
		return r, fmt.Errorf("value: %d state batches", n)
	}
	for range n {
		b := StateBatch{First: vr.Int64(), Last: vr.Int64(), State: State(vr.Int8()), Count: vr.Int16()}
		skipTags(&vr)
		r.Batches = append(r.Batches, b)
	}
	skipTags(&vr)
	if err := vr.Complete(); err != nil {
		return r, fmt.Errorf("value: %w", err)
	}
	return r, nil
}

func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// StateKey is where a share partition's records go: Kafka's
// SharePartitionKey.toString, "groupId:topicId:partition", the topic id
// as Kafka prints a Uuid.
func StateKey(group string, tp TP) string {
	return group + ":" + base64.RawURLEncoding.EncodeToString(tp.Topic[:]) + ":" + strconv.Itoa(int(tp.Partition))
}

// DescribeStateRecord is what kafka-dump-log --share-group-state-decoder
// prints for a record (DumpLogSegments.ShareGroupStateMessageParser):
// the key {"type":"<type>","data":{…}} and the payload
// {"type":"0","data":{…}}, field names as Kafka's JSON converters write
// them, "<DELETE>" for a tombstone; a key of another type prints
// "Unknown record type N at offset O, skipping." and one that does not
// decode "Error at offset O, skipping. …", with no payload.
func DescribeStateRecord(offset int64, key, value []byte) (keyText, payload string) {
	if key == nil {
		return fmt.Sprintf("Error at offset %d, skipping. Failed to decode message at offset %d using share group state topic decoder (message had a missing key)", offset, offset), ""
	}
	r, err := DecodeStateRecord(key, value)
	if errors.Is(err, ErrUnknownRecordType) {
		return fmt.Sprintf("Unknown record type %d at offset %d, skipping.", r.Type, offset), ""
	}
	if err != nil {
		return fmt.Sprintf("Error at offset %d, skipping. %v", offset, err), ""
	}
	kj, _ := json.Marshal(wrapJSON{strconv.Itoa(int(r.Type)), keyJSON{r.Group,
		base64.RawURLEncoding.EncodeToString(r.TP.Topic[:]), r.TP.Partition}})
	if r.Tombstone {
		return string(kj), "<DELETE>"
	}
	batches := make([]batchJSON, 0, len(r.Batches))
	for _, b := range r.Batches {
		batches = append(batches, batchJSON{b.First, b.Last, int8(b.State), b.Count})
	}
	var data any
	if r.Type == RecordSnapshot {
		data = snapshotValueJSON{r.SnapshotEpoch, r.StateEpoch, r.LeaderEpoch, r.Start, batches}
	} else {
		data = updateValueJSON{r.SnapshotEpoch, r.LeaderEpoch, r.Start, batches}
	}
	vj, _ := json.Marshal(wrapJSON{"0", data})
	return string(kj), string(vj)
}

type wrapJSON struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

type keyJSON struct {
	GroupID   string `json:"groupId"`
	TopicID   string `json:"topicId"`
	Partition int32  `json:"partition"`
}

type batchJSON struct {
	FirstOffset   int64 `json:"firstOffset"`
	LastOffset    int64 `json:"lastOffset"`
	DeliveryState int8  `json:"deliveryState"`
	DeliveryCount int16 `json:"deliveryCount"`
}

type snapshotValueJSON struct {
	SnapshotEpoch uint16      `json:"snapshotEpoch"`
	StateEpoch    int32       `json:"stateEpoch"`
	LeaderEpoch   int32       `json:"leaderEpoch"`
	StartOffset   int64       `json:"startOffset"`
	StateBatches  []batchJSON `json:"stateBatches"`
}

type updateValueJSON struct {
	SnapshotEpoch uint16      `json:"snapshotEpoch"`
	LeaderEpoch   int32       `json:"leaderEpoch"`
	StartOffset   int64       `json:"startOffset"`
	StateBatches  []batchJSON `json:"stateBatches"`
}
