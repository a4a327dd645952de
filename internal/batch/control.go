package batch

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ControlType is the type field of a control record key. Kafka numbers
// 0..6; minibroker adds 7 for the mirroring barrier. These numbers are on
// disk: never renumber them.
type ControlType int16

const (
	ControlAbort          ControlType = 0
	ControlCommit         ControlType = 1
	ControlLeaderChange   ControlType = 2
	ControlMirrorPidReset ControlType = 7
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	case ControlLeaderChange:
		return "LEADER_CHANGE"
	case ControlMirrorPidReset:
		return "MIRROR_PID_RESET"
	}
	return fmt.Sprintf("UNKNOWN(%d)", int16(t))
}

// ErrNotControl is returned when a control record is asked of a data batch.
var ErrNotControl = errors.New("batch: not a control batch")

// ControlRecord is the first (and, for every type minibroker knows, only)
// record of a control batch.
//
// Control record key, exactly 4 bytes:
//
//	0  2  Version (0)
//	2  2  Type    (0 ABORT, 1 COMMIT, 7 MIRROR_PID_RESET, …)
type ControlRecord struct {
	Version int16
	Type    ControlType
	Key     []byte // the raw key, 4 bytes for every known type
	Value   []byte
}

// ReadControl decodes the control record of an uncompressed control batch.
func ReadControl(raw []byte) (ControlRecord, error) {
	var c ControlRecord
	h, err := ParseHeader(raw)
	if err != nil {
		return c, err
	}
	if !h.IsControl() {
		return c, ErrNotControl
	}
	if h.Codec() != CodecNone || h.NumRecords < 1 || len(raw) < h.Size() || h.Size() < HeaderSize {
		return c, fmt.Errorf("%w: malformed control batch", ErrInvalid)
	}
	var rec kmsg.Record
	if err := rec.ReadFrom(raw[HeaderSize:h.Size()]); err != nil && rec.Key == nil {
		return c, fmt.Errorf("%w: control record: %v", ErrInvalid, err)
	}
	var ok bool
	if c.Version, c.Type, ok = ControlKey(rec.Key); !ok {
		return c, fmt.Errorf("%w: control key of %d bytes", ErrInvalid, len(rec.Key))
	}
	c.Key = rec.Key
	c.Value = rec.Value
	return c, nil
}

// ControlKey reads a control record's key (ok false: shorter than 4
// bytes).
func ControlKey(key []byte) (version int16, typ ControlType, ok bool) {
	if len(key) < 4 {
		return 0, 0, false
	}
	return int16(binary.BigEndian.Uint16(key)), ControlType(binary.BigEndian.Uint16(key[2:])), true
}

// EndTxnMarker returns the coordinator epoch from a COMMIT/ABORT value.
//
//	0  2  Version (0)
//	2  4  CoordinatorEpoch
func (c *ControlRecord) EndTxnMarker() (kmsg.EndTxnMarker, error) {
	var m kmsg.EndTxnMarker
	err := m.ReadFrom(c.Value)
	return m, err
}

// MirrorPidResetRecord is the value of the MIRROR_PID_RESET barrier, a
// flexible (KIP-482) message at version 0:
//
//	0  2  Version (0)
//	2  n  SourceClusterId: compact string (uvarint len+1, then bytes)
//	…  m  tagged fields: uvarint count (0), then none
type MirrorPidResetRecord struct {
	Version         int16
	SourceClusterID string
}

// AppendTo appends the record's encoding to dst.
func (r *MirrorPidResetRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt16(dst, r.Version)
	dst = kbin.AppendCompactString(dst, r.SourceClusterID)
	return kbin.AppendUvarint(dst, 0)
}

// ReadFrom decodes src, skipping unknown tagged fields.
func (r *MirrorPidResetRecord) ReadFrom(src []byte) error {
	b := kbin.Reader{Src: src}
	r.Version = b.Int16()
	if b.Ok() && r.Version != 0 {
		return fmt.Errorf("%w: MirrorPidResetRecord version %d", ErrInvalid, r.Version)
	}
	r.SourceClusterID = b.CompactString()
	tags := b.Uvarint()
	for i := uint32(0); i < tags && b.Ok(); i++ {
		b.Uvarint()
		b.Span(int(b.Uvarint()))
	}
	if err := b.Complete(); err != nil {
		return fmt.Errorf("%w: MirrorPidResetRecord: %v", ErrInvalid, err)
	}
	return nil
}

// ControlBatch describes a control batch to build.
type ControlBatch struct {
	Type          ControlType
	ProducerID    int64
	ProducerEpoch int16
	Transactional bool
	Timestamp     int64
	Value         []byte
}

// Build encodes the batch with base offset 0 and leader epoch 0; the log
// assigns both on append.
func (cb ControlBatch) Build() []byte {
	key := make([]byte, 4)
	binary.BigEndian.PutUint16(key[2:], uint16(cb.Type))
	rec := kmsg.Record{Key: key, Value: cb.Value}
	// Length counts the bytes after itself: encode once with 0 (a 1-byte
	// varint) to measure, then for real.
	rec.Length = int32(len(rec.AppendTo(nil)) - kbin.VarintLen(0))
	body := rec.AppendTo(nil)

	attrs := int16(AttrControl)
	if cb.Transactional {
		attrs |= AttrTransactional
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: 0,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      0,
		FirstTimestamp:       cb.Timestamp,
		MaxTimestamp:         cb.Timestamp,
		ProducerID:           cb.ProducerID,
		ProducerEpoch:        cb.ProducerEpoch,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              body,
	}
	rb.Length = int32(HeaderSize - LogOverhead + len(body))
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[crcOffset:], ComputeCRC(out))
	return out
}

// EndTxnBatch builds a COMMIT or ABORT marker for a producer.
func EndTxnBatch(commit bool, producerID int64, epoch int16, coordinatorEpoch int32, ts int64) []byte {
	m := kmsg.EndTxnMarker{Version: 0, CoordinatorEpoch: coordinatorEpoch}
	t := ControlAbort
	if commit {
		t = ControlCommit
	}
	return ControlBatch{Type: t, ProducerID: producerID, ProducerEpoch: epoch,
		Transactional: true, Timestamp: ts, Value: m.AppendTo(nil)}.Build()
}

// BarrierBatch builds the MIRROR_PID_RESET barrier: control bit set,
// transactional bit clear, producer id/epoch/sequence -1, one record.
func BarrierBatch(sourceClusterID string, ts int64) []byte {
	v := MirrorPidResetRecord{SourceClusterID: sourceClusterID}
	return ControlBatch{Type: ControlMirrorPidReset, ProducerID: NoProducerID, ProducerEpoch: -1,
		Timestamp: ts, Value: v.AppendTo(nil)}.Build()
}

// IsBarrier reports whether raw is a MIRROR_PID_RESET batch.
func IsBarrier(h *Header, raw []byte) bool {
	if !h.IsControl() || h.IsTransactional() {
		return false
	}
	c, err := ReadControl(raw)
	return err == nil && c.Type == ControlMirrorPidReset
}
