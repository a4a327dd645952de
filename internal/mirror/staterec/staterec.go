// Package staterec is the record layout of __mirror_state, the internal
// topic the mirrors keep their state in (internal/mirror/statetopic.go),
// shared by the mirrors and dump-log's --mirror-state-decoder.
//
// The layout is minibroker's own. KIP-1279 (revision of June 2026) keeps
// per-partition records keyed by (mirror name, topic id, partition) in
// __mirror_state and the mirrors' definitions in the controller's metadata
// log, but publishes no schema (record type ids, field types) to write;
// minibroker has no metadata log, so both kinds are here. In the style of
// Kafka's coordinator records (a key starting with an int16 record type,
// a value starting with an int16 version):
//
//	key   type 1000 (MirrorDefinition): int16 1000, string mirror
//	key   type 1001 (MirrorPartition):  int16 1001, string mirror,
//	                                     string topic, int32 partition
//	value int16 version (0), then the JSON document: the mirror's
//	      definition without its partitions' records (1000), or one
//	      partition's record (1001), in the shapes drawn in
//	      internal/mirror/state.go
//
// Strings are Kafka's (int16 length, bytes). A null value is a tombstone:
// the mirror deleted, or the partition no longer mirrored by it. Keys are
// per partition as in the KIP, but by topic name (minibroker's mirrors
// name their topics; an id is in the definition when the source gave
// one).
package staterec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
)

// Record types (the key's first int16).
const (
	TypeDefinition int16 = 1000
	TypePartition  int16 = 1001
)

// ValueVersion is the value's version.
const ValueVersion int16 = 0

// Key is a decoded key.
type Key struct {
	Type      int16
	Mirror    string
	Topic     string // TypePartition
	Partition int32  // TypePartition
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// DefinitionKey is mirror's definition key.
func DefinitionKey(mirror string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(TypeDefinition))
	return appendString(b, mirror)
}

// PartitionKey is the key of mirror's record of topic-partition.
func PartitionKey(mirror, topic string, partition int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(TypePartition))
	b = appendString(appendString(b, mirror), topic)
	return binary.BigEndian.AppendUint32(b, uint32(partition))
}

// Value is doc (JSON) behind the value version.
func Value(doc []byte) []byte {
	return append(binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(doc)), uint16(ValueVersion)), doc...)
}

// DecodeKey parses a key; an unknown type or a key that does not parse
// is an error.
func DecodeKey(b []byte) (Key, error) {
	var k Key
	r := reader{b: b}
	k.Type = r.int16()
	switch k.Type {
	case TypeDefinition:
		k.Mirror = r.string()
	case TypePartition:
		k.Mirror, k.Topic, k.Partition = r.string(), r.string(), r.int32()
	default:
		if r.err == nil {
			return k, fmt.Errorf("unknown record type %d", k.Type)
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d bytes past the key", len(r.b))
	}
	if r.err != nil {
		return k, fmt.Errorf("mirror state key: %w", r.err)
	}
	return k, nil
}

// DecodeValue returns the JSON document of a value.
func DecodeValue(b []byte) ([]byte, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("mirror state value of %d bytes", len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != ValueVersion {
		return nil, fmt.Errorf("mirror state value version %d, want %d", v, ValueVersion)
	}
	return b[2:], nil
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = fmt.Errorf("truncated: %d bytes wanted, %d left", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) string() string {
	n := r.int16()
	return string(r.take(int(n)))
}

// Describe is what dump-log --mirror-state-decoder prints for a record,
// in the form of kafka-dump-log's decoders:
//
//	key: {"type":"1001","data":{"mirror":…,"topic":…,"partition":…}}
//	payload: {"version":"0","data":{…the JSON document…}}
//
// a tombstone's payload <DELETE>, and a key that does not decode
// "Unknown record type N at offset O, skipping." (or why it does not
// parse) with no payload.
func Describe(offset int64, key, value []byte) (keyText, payload string) {
	k, err := DecodeKey(key)
	if err != nil {
		if len(key) >= 2 {
			return fmt.Sprintf("Unknown record type %d at offset %d, skipping.", int16(binary.BigEndian.Uint16(key)), offset), ""
		}
		return fmt.Sprintf("Failed to decode the key at offset %d: %v", offset, err), ""
	}
	type keyData struct {
		Mirror    string `json:"mirror"`
		Topic     string `json:"topic,omitempty"`
		Partition *int32 `json:"partition,omitempty"`
	}
	data := keyData{Mirror: k.Mirror}
	if k.Type == TypePartition {
		data.Topic, data.Partition = k.Topic, &k.Partition
	}
	kj, _ := json.Marshal(struct {
		Type string  `json:"type"`
		Data keyData `json:"data"`
	}{strconv.Itoa(int(k.Type)), data})
	if value == nil {
		return string(kj), "<DELETE>"
	}
	doc, err := DecodeValue(value)
	if err != nil || !json.Valid(doc) {
		if err == nil {
			err = fmt.Errorf("the document is not JSON")
		}
		return string(kj), fmt.Sprintf("Failed to decode the value at offset %d: %v", offset, err)
	}
	pj, _ := json.Marshal(struct {
		Version string          `json:"version"`
		Data    json.RawMessage `json:"data"`
	}{strconv.Itoa(int(ValueVersion)), doc})
	return string(kj), string(pj)
}
