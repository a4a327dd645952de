package coordinator

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/minibroker/minibroker/internal/recordlog"
)

// The group log (file "group-log" in the data directory) was the group
// coordinator's store before __consumer_offsets (offsets_topic.go): it is
// written now only when the coordinator runs without the topic (this
// package's tests), and a data dir that has one is migrated into the
// topic at start-up (offsets_topic_store.go). It holds every
// change to committed offsets and group membership, appended and fsynced
// before the request that made it is answered, and rewritten from the live
// state when it has grown (compaction), so that loading it stays short.
//
// The file is a recordlog (byte diagram in internal/recordlog/format.go).
// File header (8 bytes):
//
//	0  4  magic "MBGL"
//	4  2  version (1)
//	6  2  reserved (0)
//
// then frames, back to back:
//
//	0  4  length L of type+payload (uint32, big endian; at most 64 MiB: a
//	      longer record is never written, see checkGroupRecord)
//	4  4  CRC-32C (Castagnoli) of type+payload
//	8  1  record type
//	9  L-1 payload
//
// Payloads (Kafka's primitive encodings: intN big endian; string = int16
// length + bytes; bytes = int32 length + bytes, -1 for nil):
//
//	1 OffsetCommit   group string, topic string, partition int32, offset int64,
//	                 leader epoch int32, metadata string, commit timestamp int64 (Unix ms)
//	2 OffsetDelete   group string, topic string, partition int32
//	3 GroupMetadata  group string, state int8 (GroupState), protocol type string,
//	                 protocol string, leader string, generation int32,
//	                 state timestamp int64 (Unix ms), member count int32, then per member:
//	                 member id string, instance id string, client id string,
//	                 client host string, session timeout ms int32,
//	                 rebalance timeout ms int32, subscription bytes, assignment bytes
//	4 GroupDelete    group string (the group and all its offsets)
//	5 TxnStage       group string, producer id int64, producer epoch int16,
//	                 topic string, partition int32, offset int64, leader epoch int32,
//	                 metadata string, commit timestamp int64
//	6 TxnComplete    producer id int64, commit int8 (1 commit, 0 abort)
//	7–12             consumer group (KIP-848) records: consumer_group_record.go
//
// A frame that is short or fails its CRC (or does not decode) with no valid
// frame after it is the torn tail of a write that was never acknowledged:
// it is cut off at load. Damage with valid frames after it is skipped, and
// logged: only the damaged records are lost (recordlog's Resync).
const (
	groupLogFile      = "group-log"
	groupLogVersion   = 1
	groupLogHeaderLen = recordlog.HeaderLen
	frameHeaderLen    = recordlog.FrameHeaderLen
)

var (
	groupLogFormat = recordlog.Format{Magic: "MBGL", Version: groupLogVersion, MaxRecord: 64 << 20}
	groupLogScan   = recordlog.ScanOptions{Resync: true, Check: func(body []byte) error {
		_, err := decodeRecord(body)
		return err
	}}
)

type recordType uint8

const (
	recOffsetCommit  recordType = 1
	recOffsetDelete  recordType = 2
	recGroupMetadata recordType = 3
	recGroupDelete   recordType = 4
	recTxnStage      recordType = 5
	recTxnComplete   recordType = 6
)

// record is one change in the group log.
type record struct {
	typ           recordType
	group         string
	tp            TopicPartition
	offset        OffsetAndMetadata
	producerID    int64
	producerEpoch int16
	commit        bool
	coordEpoch    int32 // recTxnComplete: its markers' coordinator epoch (not in the group log)
	meta          *groupMetadata
	cg            *cgRecord // consumer group records (consumer_group_record.go)
}

type groupMetadata struct {
	state                          GroupState
	protocolType, protocol, leader string
	generation                     int32
	stateSince                     int64
	members                        []memberMetadata
}

type memberMetadata struct {
	id, instanceID, clientID, clientHost string
	sessionTimeoutMs, rebalanceTimeoutMs int32
	subscription, assignment             []byte
}

// ErrGroupLogCorrupt: the group log's header is not one this version
// writes (a foreign file, or a newer format), or a record does not decode.
var ErrGroupLogCorrupt = errors.New("coordinator: group log corrupt")

func groupLogHeader() []byte { return groupLogFormat.AppendHeader(nil) }

func checkGroupLogHeader(b []byte) error {
	if err := groupLogFormat.CheckHeader(b); err != nil {
		return fmt.Errorf("%w: %v", ErrGroupLogCorrupt, err)
	}
	return nil
}

// appendFrame appends r as one frame.
func appendFrame(dst []byte, r *record) []byte {
	return recordlog.AppendFrameFunc(dst, func(b []byte) []byte {
		return appendPayload(append(b, byte(r.typ)), r)
	})
}

func appendOffset(dst []byte, om OffsetAndMetadata) []byte {
	dst = kbin.AppendInt64(dst, om.Offset)
	dst = kbin.AppendInt32(dst, om.LeaderEpoch)
	dst = kbin.AppendString(dst, om.Metadata)
	return kbin.AppendInt64(dst, om.CommitTimestamp)
}

func readOffset(r *kbin.Reader) OffsetAndMetadata {
	return OffsetAndMetadata{Offset: r.Int64(), LeaderEpoch: r.Int32(), Metadata: r.String(), CommitTimestamp: r.Int64()}
}

func appendPayload(dst []byte, r *record) []byte {
	if isCGRecord(r.typ) {
		return appendCGPayload(dst, r)
	}
	switch r.typ {
	case recOffsetCommit:
		dst = kbin.AppendString(dst, r.group)
		dst = kbin.AppendString(dst, r.tp.Topic)
		dst = kbin.AppendInt32(dst, r.tp.Partition)
		dst = appendOffset(dst, r.offset)
	case recOffsetDelete:
		dst = kbin.AppendString(dst, r.group)
		dst = kbin.AppendString(dst, r.tp.Topic)
		dst = kbin.AppendInt32(dst, r.tp.Partition)
	case recGroupMetadata:
		m := r.meta
		dst = kbin.AppendString(dst, r.group)
		dst = kbin.AppendInt8(dst, int8(m.state))
		dst = kbin.AppendString(dst, m.protocolType)
		dst = kbin.AppendString(dst, m.protocol)
		dst = kbin.AppendString(dst, m.leader)
		dst = kbin.AppendInt32(dst, m.generation)
		dst = kbin.AppendInt64(dst, m.stateSince)
		dst = kbin.AppendInt32(dst, int32(len(m.members)))
		for _, mm := range m.members {
			dst = kbin.AppendString(dst, mm.id)
			dst = kbin.AppendString(dst, mm.instanceID)
			dst = kbin.AppendString(dst, mm.clientID)
			dst = kbin.AppendString(dst, mm.clientHost)
			dst = kbin.AppendInt32(dst, mm.sessionTimeoutMs)
			dst = kbin.AppendInt32(dst, mm.rebalanceTimeoutMs)
			dst = kbin.AppendNullableBytes(dst, mm.subscription)
			dst = kbin.AppendNullableBytes(dst, mm.assignment)
		}
	case recGroupDelete:
		dst = kbin.AppendString(dst, r.group)
	case recTxnStage:
		dst = kbin.AppendString(dst, r.group)
		dst = kbin.AppendInt64(dst, r.producerID)
		dst = kbin.AppendInt16(dst, r.producerEpoch)
		dst = kbin.AppendString(dst, r.tp.Topic)
		dst = kbin.AppendInt32(dst, r.tp.Partition)
		dst = appendOffset(dst, r.offset)
	case recTxnComplete:
		dst = kbin.AppendInt64(dst, r.producerID)
		c := int8(0)
		if r.commit {
			c = 1
		}
		dst = kbin.AppendInt8(dst, c)
	}
	return dst
}

// groupRecordSize is the length of a group metadata record's frame body
// (type and payload), as appendPayload writes it.
func groupRecordSize(group string, m *groupMetadata) int {
	n := 1 + 2 + len(group) + 1 + 2 + len(m.protocolType) + 2 + len(m.protocol) + 2 + len(m.leader) + 4 + 8 + 4
	for _, mm := range m.members {
		n += 2 + len(mm.id) + 2 + len(mm.instanceID) + 2 + len(mm.clientID) + 2 + len(mm.clientHost) + 4 + 4 +
			4 + len(mm.subscription) + 4 + len(mm.assignment)
	}
	return n
}

// decodeRecord decodes one frame body (type + payload).
func decodeRecord(body []byte) (record, error) {
	if len(body) == 0 {
		return record{}, fmt.Errorf("%w: empty frame", ErrGroupLogCorrupt)
	}
	rec := record{typ: recordType(body[0])}
	r := kbin.Reader{Src: body[1:]}
	switch rec.typ {
	case recOffsetCommit:
		rec.group, rec.tp.Topic, rec.tp.Partition = r.String(), r.String(), r.Int32()
		rec.offset = readOffset(&r)
	case recOffsetDelete:
		rec.group, rec.tp.Topic, rec.tp.Partition = r.String(), r.String(), r.Int32()
	case recGroupMetadata:
		rec.group = r.String()
		m := &groupMetadata{state: GroupState(r.Int8()), protocolType: r.String(), protocol: r.String(), leader: r.String(),
			generation: r.Int32(), stateSince: r.Int64()}
		n := r.Int32()
		if n < 0 || int(n) > len(body) {
			return record{}, fmt.Errorf("%w: member count %d", ErrGroupLogCorrupt, n)
		}
		for i := int32(0); i < n && r.Ok(); i++ {
			m.members = append(m.members, memberMetadata{
				id: r.String(), instanceID: r.String(), clientID: r.String(), clientHost: r.String(),
				sessionTimeoutMs: r.Int32(), rebalanceTimeoutMs: r.Int32(),
				subscription: cloneBytes(r.NullableBytes()), assignment: cloneBytes(r.NullableBytes()),
			})
		}
		rec.meta = m
	case recGroupDelete:
		rec.group = r.String()
	case recTxnStage:
		rec.group, rec.producerID, rec.producerEpoch = r.String(), r.Int64(), r.Int16()
		rec.tp.Topic, rec.tp.Partition = r.String(), r.Int32()
		rec.offset = readOffset(&r)
	case recTxnComplete:
		rec.producerID = r.Int64()
		rec.commit = r.Int8() == 1
	case recCGMetadata, recCGMemberMetadata, recCGTargetMetadata, recCGTargetMember, recCGCurrentMember, recCGRegex:
		if err := decodeCGPayload(&rec, &r); err != nil {
			return record{}, err
		}
	default:
		return record{}, fmt.Errorf("%w: unknown record type %d", ErrGroupLogCorrupt, rec.typ)
	}
	if err := r.Complete(); err != nil {
		return record{}, fmt.Errorf("%w: record type %d: %v", ErrGroupLogCorrupt, rec.typ, err)
	}
	return rec, nil
}

// CorruptRange is a damaged stretch of the group log with valid frames
// after it: not a torn write (every frame is fsynced before the next
// request is answered) but damage to written data. Its records are lost;
// the rest is kept.
type CorruptRange = recordlog.Damage

// scanFrames walks the frames after the header and calls fn for each. It
// returns where the valid log ends (header included): a damaged frame with
// no valid frame after it is the torn tail of a write that was never
// acknowledged, and the log ends there. A damaged stretch followed by
// valid frames is skipped and reported.
func scanFrames(b []byte, fn func(record)) (end int, damaged []CorruptRange) {
	end, damaged, _ = groupLogFormat.Scan(b, groupLogScan, func(_ int, body []byte) error {
		rec, err := decodeRecord(body)
		if err == nil {
			fn(rec)
		}
		return nil
	})
	return end, damaged
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
