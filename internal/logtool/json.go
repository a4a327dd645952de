package logtool

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/minibroker/minibroker/internal/batch"
)

// The JSON objects dump-log prints, one per line. Field names are stable:
// scripts depend on them. Every object has "kind" and "file".

type fileJSON struct {
	Kind   string `json:"kind"` // "file" or "skipped"
	File   string `json:"file"`
	Type   string `json:"type"`
	Offset *int64 `json:"offset,omitempty"`
}

type batchJSON struct {
	Kind                 string   `json:"kind"` // "batch"
	File                 string   `json:"file"`
	Position             int64    `json:"position"`
	BaseOffset           int64    `json:"base_offset"`
	LastOffset           int64    `json:"last_offset"`
	Count                int32    `json:"count"`
	Size                 int      `json:"size"`
	Magic                int8     `json:"magic"`
	Codec                string   `json:"codec"`
	CRC                  uint32   `json:"crc"`
	CRCValid             bool     `json:"crc_valid"`
	TimestampType        string   `json:"timestamp_type"`
	BaseTimestamp        int64    `json:"base_timestamp"`
	MaxTimestamp         int64    `json:"max_timestamp"`
	Transactional        bool     `json:"transactional"`
	Control              bool     `json:"control"`
	ProducerID           int64    `json:"producer_id"`
	ProducerEpoch        int16    `json:"producer_epoch"`
	BaseSequence         int32    `json:"base_sequence"`
	LastSequence         int32    `json:"last_sequence"`
	PartitionLeaderEpoch int32    `json:"partition_leader_epoch"`
	Problems             []string `json:"problems,omitempty"`
	// DeleteHorizonMs is set on a batch the log cleaner has cleaned with
	// tombstones or a removable marker in it (KIP-534's attribute bit 6;
	// the base timestamp holds the horizon).
	DeleteHorizonMs *int64       `json:"delete_horizon_ms,omitempty"`
	ControlRecord   *controlJSON `json:"control_record,omitempty"`
	Records         []recordJSON `json:"records,omitempty"`
	RecordsError    string       `json:"records_error,omitempty"`
}

type controlJSON struct {
	Type             string              `json:"type"` // COMMIT, ABORT, MIRROR_PID_RESET, UNKNOWN(n)
	TypeID           int16               `json:"type_id"`
	Version          int16               `json:"version"`
	CoordinatorEpoch *int32              `json:"coordinator_epoch,omitempty"`
	MirrorPidReset   *mirrorPidResetJSON `json:"mirror_pid_reset,omitempty"`
	KeyHex           string              `json:"key_hex,omitempty"`
	ValueHex         string              `json:"value_hex,omitempty"`
	Error            string              `json:"error,omitempty"`
}

type mirrorPidResetJSON struct {
	Version         int16  `json:"version"`
	SourceClusterID string `json:"source_cluster_id"`
}

type recordJSON struct {
	Offset    int64           `json:"offset"`
	Timestamp int64           `json:"timestamp"`
	Sequence  int32           `json:"sequence"`
	Key       json.RawMessage `json:"key,omitempty"` // a string, or null; absent when key_hex is set
	KeyHex    string          `json:"key_hex,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	ValueHex  string          `json:"value_hex,omitempty"`
	Headers   []headerJSON    `json:"headers"`
	// The offsets decoder's key and payload (OffsetsDecoder), or the
	// transaction log decoder's (TransactionLogDecoder).
	OffsetsKey     string `json:"offsets_key,omitempty"`
	OffsetsPayload string `json:"offsets_payload,omitempty"`
	// The mirror state decoder's (MirrorStateDecoder).
	MirrorStateKey     string `json:"mirror_state_key,omitempty"`
	MirrorStatePayload string `json:"mirror_state_payload,omitempty"`
	// The share group state decoder's (ShareGroupStateDecoder).
	ShareStateKey     string `json:"share_state_key,omitempty"`
	ShareStatePayload string `json:"share_state_payload,omitempty"`
}

type headerJSON struct {
	Key      string          `json:"key"`
	Value    json.RawMessage `json:"value,omitempty"`
	ValueHex string          `json:"value_hex,omitempty"`
}

type damageJSON struct {
	Kind      string `json:"kind"` // "damage" or "index_tail"
	File      string `json:"file"`
	Position  int64  `json:"position"`
	Reason    string `json:"reason"`
	Remaining int64  `json:"remaining_bytes"`
	TornTail  bool   `json:"torn_tail,omitempty"`
}

type offsetEntryJSON struct {
	Kind        string `json:"kind"` // "offset_index_entry"
	File        string `json:"file"`
	Entry       int    `json:"entry"`
	Offset      int64  `json:"offset"`
	Position    int64  `json:"position"`
	CheckOK     *bool  `json:"check_ok,omitempty"`
	CheckDetail string `json:"check_detail,omitempty"`
}

type timeEntryJSON struct {
	Kind        string `json:"kind"` // "time_index_entry"
	File        string `json:"file"`
	Entry       int    `json:"entry"`
	Timestamp   int64  `json:"timestamp"`
	Offset      int64  `json:"offset"`
	CheckOK     *bool  `json:"check_ok,omitempty"`
	CheckDetail string `json:"check_detail,omitempty"`
}

type txnEntryJSON struct {
	Kind             string `json:"kind"` // "txn_index_entry"
	File             string `json:"file"`
	Entry            int    `json:"entry"`
	Version          int16  `json:"version"`
	ProducerID       int64  `json:"producer_id"`
	FirstOffset      int64  `json:"first_offset"`
	LastOffset       int64  `json:"last_offset"`
	LastStableOffset int64  `json:"last_stable_offset"`
	CheckOK          *bool  `json:"check_ok,omitempty"`
	CheckDetail      string `json:"check_detail,omitempty"`
}

type snapshotProducerJSON struct {
	Kind                  string              `json:"kind"` // "snapshot_producer"
	File                  string              `json:"file"`
	SnapshotOffset        int64               `json:"snapshot_offset"`
	ProducerID            int64               `json:"producer_id"`
	ProducerEpoch         int16               `json:"producer_epoch"`
	CoordinatorEpoch      int32               `json:"coordinator_epoch"`
	CurrentTxnFirstOffset int64               `json:"current_txn_first_offset"`
	LastTimestamp         int64               `json:"last_timestamp"`
	Batches               []snapshotBatchJSON `json:"batches"`
}

type snapshotBatchJSON struct {
	FirstSequence int32 `json:"first_sequence"`
	LastSequence  int32 `json:"last_sequence"`
	FirstOffset   int64 `json:"first_offset"`
	LastOffset    int64 `json:"last_offset"`
	Timestamp     int64 `json:"timestamp"`
}

type checkpointJSON struct {
	Kind    string                `json:"kind"` // "checkpoint"
	File    string                `json:"file"`
	Name    string                `json:"name"`
	Version int                   `json:"version"`
	Offset  *int64                `json:"offset,omitempty"`
	Entries []checkpointEntryJSON `json:"entries,omitempty"`
}

type checkpointEntryJSON struct {
	Epoch       *int64 `json:"epoch,omitempty"`
	StartOffset *int64 `json:"start_offset,omitempty"`
	Topic       string `json:"topic,omitempty"`
	Partition   *int64 `json:"partition,omitempty"`
	Offset      *int64 `json:"offset,omitempty"`
}

type metadataJSON struct {
	Kind   string            `json:"kind"` // "partition_metadata"
	File   string            `json:"file"`
	Fields map[string]string `json:"fields"`
}

type deepJSON struct {
	Kind     string   `json:"kind"` // "deep_check" or "deep_summary"
	File     string   `json:"file"`
	OK       bool     `json:"ok"`
	Failed   int      `json:"failed"`
	Failures []string `json:"failures,omitempty"`
	Detail   string   `json:"detail,omitempty"`
}

func parseInt(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

func parseIntPtr(s string) *int64 {
	v := parseInt(s)
	return &v
}

// printable returns b as a string when it is valid UTF-8 without control
// characters other than tab; otherwise ok is false.
func printable(b []byte) (string, bool) {
	if !utf8.Valid(b) {
		return "", false
	}
	for _, r := range string(b) {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return "", false
		}
	}
	return string(b), true
}

// bytesJSON renders a key or value: JSON null for a null one, a string
// when printable, else (nil, hex) so that the caller's *_hex field is set
// and the plain field is left out.
func bytesJSON(b []byte) (json.RawMessage, string) {
	if b == nil {
		return json.RawMessage("null"), ""
	}
	if s, ok := printable(b); ok {
		q, _ := json.Marshal(s)
		return q, ""
	}
	return nil, hex.EncodeToString(b)
}

// bytesText renders a key or value for text output: null, a quoted
// string, or hex:….
func bytesText(b []byte) string {
	if b == nil {
		return "null"
	}
	if s, ok := printable(b); ok {
		return strconv.Quote(s)
	}
	return "hex:" + hex.EncodeToString(b)
}

func recordToJSON(r *Record) recordJSON {
	j := recordJSON{Offset: r.Offset, Timestamp: r.Timestamp, Sequence: r.Sequence, Headers: make([]headerJSON, 0, len(r.Headers))}
	j.Key, j.KeyHex = bytesJSON(r.Key)
	j.Value, j.ValueHex = bytesJSON(r.Value)
	for _, h := range r.Headers {
		hj := headerJSON{Key: h.Key}
		hj.Value, hj.ValueHex = bytesJSON(h.Value)
		j.Headers = append(j.Headers, hj)
	}
	return j
}

func recordText(r *Record) string {
	var hs []string
	for _, h := range r.Headers {
		hs = append(hs, strconv.Quote(h.Key)+"="+bytesText(h.Value))
	}
	return fmt.Sprintf("| offset: %d timestamp: %d sequence: %d keySize: %d valueSize: %d headers: [%s] key: %s payload: %s\n",
		r.Offset, r.Timestamp, r.Sequence, sizeOf(r.Key), sizeOf(r.Value), strings.Join(hs, " "), bytesText(r.Key), bytesText(r.Value))
}

// offsetsRecordText is recordText with the offsets decoder's key and
// payload, as kafka-dump-log --offsets-decoder prints them.
func offsetsRecordText(r *Record, key, payload string) string {
	s := fmt.Sprintf("| offset: %d timestamp: %d sequence: %d keySize: %d valueSize: %d key: %s",
		r.Offset, r.Timestamp, r.Sequence, sizeOf(r.Key), sizeOf(r.Value), key)
	if payload != "" {
		s += " payload: " + payload
	}
	return s + "\n"
}

func sizeOf(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

func controlToJSON(c *Control) *controlJSON {
	j := &controlJSON{Type: controlName(c), TypeID: int16(c.Type), Version: c.Version}
	if c.EndTxn != nil {
		ce := c.EndTxn.CoordinatorEpoch
		j.CoordinatorEpoch = &ce
	}
	if c.MirrorPidReset != nil {
		j.MirrorPidReset = &mirrorPidResetJSON{Version: c.MirrorPidReset.Version, SourceClusterID: c.MirrorPidReset.SourceClusterID}
	}
	if c.Err != nil || !c.Known() {
		j.KeyHex, j.ValueHex = hex.EncodeToString(c.Key), hex.EncodeToString(c.Value)
	}
	if c.Err != nil {
		j.Error = c.Err.Error()
	}
	return j
}

func controlName(c *Control) string {
	if c.Type < 0 && c.Err != nil {
		return "UNDECODABLE"
	}
	return c.Type.String()
}

func controlText(h *batch.Header, c *Control) string {
	var s string
	switch {
	case c.EndTxn != nil:
		s = fmt.Sprintf("endTxnMarker: %s coordinatorEpoch: %d", c.Type, c.EndTxn.CoordinatorEpoch)
	case c.MirrorPidReset != nil:
		s = fmt.Sprintf("mirrorPidReset: version: %d sourceClusterId: %s", c.MirrorPidReset.Version, strconv.Quote(c.MirrorPidReset.SourceClusterID))
		if h.IsTransactional() {
			s += " (in a transactional batch: not a barrier)"
		}
	default:
		s = fmt.Sprintf("controlType: %s key: hex:%s value: hex:%s", controlName(c), hex.EncodeToString(c.Key), hex.EncodeToString(c.Value))
	}
	if c.Err != nil {
		s += fmt.Sprintf(" error: %v", c.Err)
	}
	return fmt.Sprintf("| offset: %d controlRecordVersion: %d %s\n", h.BaseOffset, c.Version, s)
}
