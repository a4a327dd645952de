package logtool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/mirror/staterec"
	"github.com/minibroker/minibroker/internal/psm"
	"github.com/minibroker/minibroker/internal/share"
)

// Options select what Dump prints.
type Options struct {
	// PrintData prints every record's key, value and headers.
	PrintData bool
	// Deep checks index entries against their segment and snapshots
	// against a replay of the log.
	Deep bool
	// JSON prints one JSON object per line instead of text.
	JSON bool
	// OffsetsDecoder prints each record's key and value as
	// kafka-dump-log --offsets-decoder does (offsets_decoder.go); it
	// implies PrintData.
	OffsetsDecoder bool
	// TransactionLogDecoder prints each record's key and value as
	// kafka-dump-log --transaction-log-decoder does (txn_decoder.go);
	// it implies PrintData.
	TransactionLogDecoder bool
	// MirrorStateDecoder prints each record's key and value as records
	// of __mirror_state (minibroker's layout, package staterec), in the
	// form of kafka-dump-log's decoders; it implies PrintData.
	MirrorStateDecoder bool
	// ShareGroupStateDecoder prints each record's key and value as
	// kafka-dump-log --share-group-state-decoder does for
	// __share_group_state (share.DescribeStateRecord); it implies
	// PrintData.
	ShareGroupStateDecoder bool
	// MaxDecompressedBytes bounds one batch's decompressed records;
	// 0 means DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int
}

// Dumper prints log files. Files are opened read-only and never locked,
// so a live broker's data directory can be dumped.
type Dumper struct {
	opts Options
	w    io.Writer
	err  error // first write error
	// Counts of what was found, for the exit status.
	Damaged    int // damaged segments and index tails, corrupt batches, undecodable files
	DeepFailed int // failed --deep checks
}

// NewDumper returns a Dumper writing to w.
func NewDumper(w io.Writer, opts Options) *Dumper {
	if opts.MaxDecompressedBytes <= 0 {
		opts.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	return &Dumper{opts: opts, w: w}
}

// ErrUnknownFile is returned for a file whose kind is unknown.
var ErrUnknownFile = errors.New("unknown file type")

// DumpPath dumps a file, or every file of a partition directory in offset
// order. It returns an error only for what stops it reading (a missing
// path, an I/O error, a write error); damage is printed and counted.
func (d *Dumper) DumpPath(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		f := Classify(path)
		if f.Kind == KindUnknown {
			return fmt.Errorf("%s: %w", path, ErrUnknownFile)
		}
		return d.DumpFile(f)
	}
	files, err := ListDir(path)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.Kind == KindUnknown {
			d.emitText(fmt.Sprintf("Skipping %s: unknown file type\n", f.Path))
			d.emitJSON(fileJSON{Kind: "skipped", File: f.Path, Type: "unknown"})
			continue
		}
		if err := d.DumpFile(f); err != nil {
			return err
		}
	}
	return d.err
}

// DumpFile dumps one classified file.
func (d *Dumper) DumpFile(f File) error {
	d.emitText(fmt.Sprintf("Dumping %s\n", f.Path))
	var off *int64
	if f.Offset >= 0 {
		off = &f.Offset
	}
	d.emitJSON(fileJSON{Kind: "file", File: f.Path, Type: f.Kind.String(), Offset: off})
	var err error
	switch f.Kind {
	case KindSegment:
		err = d.dumpSegment(f)
	case KindOffsetIndex, KindTimeIndex, KindTxnIndex:
		err = d.dumpIndex(f)
	case KindSnapshot:
		err = d.dumpSnapshot(f)
	case KindEpochCheckpoint, KindOffsetCheckpoint:
		err = d.dumpCheckpoint(f)
	case KindPartitionMetadata:
		err = d.dumpPartitionMetadata(f)
	default:
		err = fmt.Errorf("%s: %w", f.Path, ErrUnknownFile)
	}
	if err != nil {
		return err
	}
	return d.err
}

func (d *Dumper) emitText(s string) {
	if d.opts.JSON || d.err != nil {
		return
	}
	_, d.err = io.WriteString(d.w, s)
}

func (d *Dumper) emitJSON(v any) {
	if !d.opts.JSON || d.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		d.err = err
		return
	}
	_, d.err = d.w.Write(append(b, '\n'))
}

func (d *Dumper) dumpSegment(f File) error {
	d.emitText(fmt.Sprintf("Log starting offset: %d\n", f.Offset))
	fh, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	damage, err := ScanSegment(fh, st.Size(), func(b *Batch) error {
		if len(b.Problems) > 0 {
			d.Damaged++
		}
		d.printBatch(f.Path, b)
		return d.err
	})
	if err != nil {
		return err
	}
	if damage != nil {
		d.Damaged++
		d.emitText(fmt.Sprintf("Damage at %s\n", damage))
		d.emitJSON(damageJSON{Kind: "damage", File: f.Path, Position: damage.Position, Reason: damage.Reason,
			Remaining: damage.Remaining, TornTail: damage.TornTail})
	}
	return nil
}

func codecName(c int8) string {
	switch c {
	case batch.CodecNone:
		return "none"
	case batch.CodecGzip:
		return "gzip"
	case batch.CodecSnappy:
		return "snappy"
	case batch.CodecLZ4:
		return "lz4"
	case batch.CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", c)
}

func timestampType(h *batch.Header) string {
	if h.LogAppendTimeType() {
		return "LogAppendTime"
	}
	return "CreateTime"
}

func (d *Dumper) printBatch(file string, b *Batch) {
	h := &b.Header
	j := batchJSON{
		Kind: "batch", File: file, Position: b.Position,
		BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Count: h.NumRecords, Size: h.Size(),
		Magic: h.Magic, Codec: codecName(h.Codec()), CRC: h.CRC, CRCValid: b.CRCValid,
		TimestampType: timestampType(h), BaseTimestamp: h.BaseTimestamp, MaxTimestamp: h.MaxTimestamp,
		Transactional: h.IsTransactional(), Control: h.IsControl(),
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
		BaseSequence: h.BaseSequence, LastSequence: h.LastSequence(),
		PartitionLeaderEpoch: h.PartitionLeaderEpoch, Problems: b.Problems,
	}
	d.emitText(fmt.Sprintf("baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t position: %d timestampType: %s baseTimestamp: %d maxTimestamp: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		j.BaseOffset, j.LastOffset, j.Count, j.BaseSequence, j.LastSequence, j.ProducerID, j.ProducerEpoch,
		j.PartitionLeaderEpoch, j.Transactional, j.Control, j.Position, j.TimestampType, j.BaseTimestamp,
		j.MaxTimestamp, j.Size, j.Magic, j.Codec, j.CRC, j.CRCValid))
	if h.Attributes&deleteHorizonAttr != 0 {
		// Kafka's DumpLogSegments prints deleteHorizonMs too.
		horizon := h.BaseTimestamp
		j.DeleteHorizonMs = &horizon
		d.emitText(fmt.Sprintf("| cleaned: deleteHorizonMs: %d\n", horizon))
	}
	for _, p := range b.Problems {
		d.emitText(fmt.Sprintf("| problem: %s\n", p))
	}
	if b.Raw == nil {
		d.emitJSON(j)
		return
	}
	if c := DecodeControl(b, d.opts.MaxDecompressedBytes); c != nil {
		j.ControlRecord = controlToJSON(c)
		d.emitText(controlText(h, c))
	}
	if (d.opts.PrintData || d.opts.OffsetsDecoder || d.opts.TransactionLogDecoder || d.opts.MirrorStateDecoder || d.opts.ShareGroupStateDecoder) && !h.IsControl() {
		recs, err := DecodeRecords(b.Raw, h, d.opts.MaxDecompressedBytes)
		j.Records = make([]recordJSON, 0, len(recs))
		for i := range recs {
			rj := recordToJSON(&recs[i])
			if d.opts.OffsetsDecoder || d.opts.TransactionLogDecoder {
				decode := DecodeOffsetsRecord
				if d.opts.TransactionLogDecoder {
					decode = DecodeTxnRecord
				}
				k, p := decode(recs[i].Offset, recs[i].Key, recs[i].Value)
				rj.OffsetsKey, rj.OffsetsPayload = k, p
				d.emitText(offsetsRecordText(&recs[i], k, p))
			} else if d.opts.ShareGroupStateDecoder {
				k, p := share.DescribeStateRecord(recs[i].Offset, recs[i].Key, recs[i].Value)
				rj.ShareStateKey, rj.ShareStatePayload = k, p
				d.emitText(offsetsRecordText(&recs[i], k, p))
			} else if d.opts.MirrorStateDecoder {
				k, p := staterec.Describe(recs[i].Offset, recs[i].Key, recs[i].Value)
				rj.MirrorStateKey, rj.MirrorStatePayload = k, p
				d.emitText(offsetsRecordText(&recs[i], k, p))
			} else {
				d.emitText(recordText(&recs[i]))
			}
			j.Records = append(j.Records, rj)
		}
		if err != nil {
			d.Damaged++
			j.RecordsError = err.Error()
			d.emitText(fmt.Sprintf("| records error: %v\n", err))
		}
	}
	d.emitJSON(j)
}

// deleteHorizonAttr is Kafka's DELETE_HORIZON_FLAG_MASK (KIP-534), set
// by the log cleaner (internal/log/clean_records.go).
const deleteHorizonAttr = 0x40

func (d *Dumper) readSmall(path string) ([]byte, error) {
	return os.ReadFile(path)
}

func (d *Dumper) dumpIndex(f File) error {
	data, err := d.readSmall(f.Path)
	if err != nil {
		return err
	}
	var seg *segmentMap
	if d.opts.Deep {
		seg, err = loadSegmentMap(segmentPath(f), d.opts.MaxDecompressedBytes)
		if err != nil {
			d.DeepFailed++
			d.emitText(fmt.Sprintf("Deep check impossible: %v\n", err))
			d.emitJSON(deepJSON{Kind: "deep_check", File: f.Path, OK: false, Detail: err.Error()})
			seg = nil
		}
	}
	failed := 0
	check := func(msg string) (string, *bool) {
		if seg == nil {
			return "", nil
		}
		ok := msg == ""
		if !ok {
			failed++
			return " check: FAILED " + msg, &ok
		}
		return " check: ok", &ok
	}
	var tail *IndexTail
	switch f.Kind {
	case KindOffsetIndex:
		var entries []OffsetEntry
		entries, tail = DecodeOffsetIndex(data, f.Offset)
		for i, e := range entries {
			var msg string
			if seg != nil {
				var prev *OffsetEntry
				if i > 0 {
					prev = &entries[i-1]
				}
				msg = seg.checkOffsetEntry(e, prev)
			}
			text, ok := check(msg)
			d.emitText(fmt.Sprintf("offset: %d position: %d%s\n", e.Offset, e.Position, text))
			d.emitJSON(offsetEntryJSON{Kind: "offset_index_entry", File: f.Path, Entry: i, Offset: e.Offset,
				Position: e.Position, CheckOK: ok, CheckDetail: msg})
		}
	case KindTimeIndex:
		var entries []TimeEntry
		entries, tail = DecodeTimeIndex(data, f.Offset)
		for i, e := range entries {
			var msg string
			if seg != nil {
				var prev *TimeEntry
				if i > 0 {
					prev = &entries[i-1]
				}
				msg = seg.checkTimeEntry(e, prev)
			}
			text, ok := check(msg)
			d.emitText(fmt.Sprintf("timestamp: %d offset: %d%s\n", e.Timestamp, e.Offset, text))
			d.emitJSON(timeEntryJSON{Kind: "time_index_entry", File: f.Path, Entry: i, Timestamp: e.Timestamp,
				Offset: e.Offset, CheckOK: ok, CheckDetail: msg})
		}
	case KindTxnIndex:
		var entries []TxnEntry
		entries, tail = DecodeTxnIndex(data)
		for i, e := range entries {
			var msg string
			if seg != nil {
				msg = seg.checkTxnEntry(e)
			}
			text, ok := check(msg)
			d.emitText(fmt.Sprintf("version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d%s\n",
				e.Version, e.ProducerID, e.FirstOffset, e.LastOffset, e.LastStableOffset, text))
			d.emitJSON(txnEntryJSON{Kind: "txn_index_entry", File: f.Path, Entry: i, Version: e.Version,
				ProducerID: e.ProducerID, FirstOffset: e.FirstOffset, LastOffset: e.LastOffset,
				LastStableOffset: e.LastStableOffset, CheckOK: ok, CheckDetail: msg})
		}
	}
	if tail != nil {
		if tail.Reason != "zero entries (preallocated space)" {
			d.Damaged++
		}
		d.emitText(fmt.Sprintf("Index tail at position %d: %s (%d bytes)\n", tail.Position, tail.Reason, tail.Bytes))
		d.emitJSON(damageJSON{Kind: "index_tail", File: f.Path, Position: tail.Position, Reason: tail.Reason,
			Remaining: int64(tail.Bytes)})
	}
	if seg != nil {
		d.DeepFailed += failed
		d.emitText(fmt.Sprintf("Deep check: %d failed\n", failed))
		d.emitJSON(deepJSON{Kind: "deep_summary", File: f.Path, OK: failed == 0, Failed: failed})
	}
	return nil
}

// loadSegmentMap reads every batch header of a segment (and the control
// record of control batches) for the deep checks.
func loadSegmentMap(path string, maxBytes int) (*segmentMap, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	m := &segmentMap{byPos: make(map[int64]int)}
	m.damage, err = ScanSegment(fh, st.Size(), func(b *Batch) error {
		if b.Raw == nil {
			return nil
		}
		h := &b.Header
		m.byPos[b.Position] = len(m.batches)
		m.batches = append(m.batches, batchAt{pos: b.Position, control: DecodeControl(b, maxBytes),
			header: batchSummary{base: h.BaseOffset, last: h.LastOffset(), maxTs: h.MaxTimestamp,
				producerID: h.ProducerID, transactional: h.IsTransactional(), isControl: h.IsControl()}})
		return nil
	})
	return m, err
}

func (d *Dumper) dumpSnapshot(f File) error {
	data, err := d.readSmall(f.Path)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(data, []byte("MBPS")) {
		// Not damage: Kafka writes its own producer snapshot layout,
		// which this tool does not decode (verify-log never needs it).
		d.emitText(fmt.Sprintf("Not a minibroker producer snapshot (no MBPS magic; %d bytes): not decoded\n", len(data)))
		d.emitJSON(damageJSON{Kind: "undecoded", File: f.Path, Reason: "not a minibroker producer snapshot (no MBPS magic)", Remaining: int64(len(data))})
		return nil
	}
	entries, err := psm.DecodeSnapshot(data)
	if err != nil {
		d.Damaged++
		d.emitText(fmt.Sprintf("Corrupt snapshot: %v\n", err))
		d.emitJSON(damageJSON{Kind: "damage", File: f.Path, Reason: err.Error(), Remaining: int64(len(data))})
		return nil
	}
	d.emitText(fmt.Sprintf("Snapshot offset: %d producers: %d\n", f.Offset, len(entries)))
	for _, e := range entries {
		j := snapshotProducerJSON{Kind: "snapshot_producer", File: f.Path, SnapshotOffset: f.Offset,
			ProducerID: e.ProducerID, ProducerEpoch: e.Epoch, CoordinatorEpoch: e.CoordinatorEpoch,
			CurrentTxnFirstOffset: e.CurrentTxnFirstOffset, LastTimestamp: e.LastTimestamp,
			Batches: make([]snapshotBatchJSON, 0, len(e.Batches))}
		text := fmt.Sprintf("producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %d lastTimestamp: %d batches: %d\n",
			e.ProducerID, e.Epoch, e.CoordinatorEpoch, e.CurrentTxnFirstOffset, e.LastTimestamp, len(e.Batches))
		for _, b := range e.Batches {
			j.Batches = append(j.Batches, snapshotBatchJSON{FirstSequence: b.FirstSeq, LastSequence: b.LastSeq,
				FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, Timestamp: b.Timestamp})
			text += fmt.Sprintf("| firstSequence: %d lastSequence: %d firstOffset: %d lastOffset: %d timestamp: %d\n",
				b.FirstSeq, b.LastSeq, b.FirstOffset, b.LastOffset, b.Timestamp)
		}
		d.emitText(text)
		d.emitJSON(j)
	}
	if !d.opts.Deep {
		return nil
	}
	if segs, err := Segments(filepath.Dir(f.Path)); err == nil && (len(segs) == 0 || segs[0].Offset >= f.Offset) {
		// Retention left nothing below it: it is the start of the replay
		// for the later snapshots, and cannot be checked itself.
		d.emitText("Deep check skipped: no segment holds offsets below the snapshot\n")
		d.emitJSON(deepJSON{Kind: "deep_summary", File: f.Path, OK: true, Detail: "skipped: no segment holds offsets below the snapshot"})
		return nil
	}
	replay, first, err := replaySnapshot(filepath.Dir(f.Path), f.Offset, d.opts.MaxDecompressedBytes)
	var diffs []string
	if err != nil {
		diffs = []string{fmt.Sprintf("replay failed: %v", err)}
	} else {
		diffs = compareSnapshot(entries, replay)
	}
	for _, msg := range diffs {
		d.emitText(fmt.Sprintf("check: FAILED %s\n", msg))
	}
	d.DeepFailed += len(diffs)
	note := ""
	if first > 0 {
		note = fmt.Sprintf("replayed from offset %d (from the snapshot there if any)", first)
	}
	d.emitText(fmt.Sprintf("Deep check against a replay of offsets below %d: %d failed%s\n", f.Offset, len(diffs), prefixed("; ", note)))
	d.emitJSON(deepJSON{Kind: "deep_summary", File: f.Path, OK: len(diffs) == 0, Failed: len(diffs), Failures: diffs, Detail: note})
	return nil
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func (d *Dumper) dumpCheckpoint(f File) error {
	data, err := d.readSmall(f.Path)
	if err != nil {
		return err
	}
	c, err := log.ParseCheckpoint(data, f.Kind == KindEpochCheckpoint)
	if err != nil {
		d.Damaged++
		d.emitText(fmt.Sprintf("Malformed checkpoint: %v\n", err))
		d.emitJSON(damageJSON{Kind: "damage", File: f.Path, Reason: err.Error(), Remaining: int64(len(data))})
		return nil
	}
	j := checkpointJSON{Kind: "checkpoint", File: f.Path, Name: filepath.Base(f.Path), Version: c.Version, Offset: c.Offset}
	if c.Offset != nil {
		d.emitText(fmt.Sprintf("version: %d offset: %d\n", c.Version, *c.Offset))
	} else {
		d.emitText(fmt.Sprintf("version: %d entries: %d\n", c.Version, len(c.Entries)))
		j.Entries = make([]checkpointEntryJSON, 0, len(c.Entries))
		for _, e := range c.Entries {
			var ej checkpointEntryJSON
			if f.Kind == KindEpochCheckpoint {
				ej.Epoch, ej.StartOffset = parseIntPtr(e[0]), parseIntPtr(e[1])
				d.emitText(fmt.Sprintf("epoch: %s startOffset: %s\n", e[0], e[1]))
			} else {
				p := parseInt(e[1])
				ej.Topic, ej.Partition, ej.Offset = e[0], &p, parseIntPtr(e[2])
				d.emitText(fmt.Sprintf("topic: %s partition: %s offset: %s\n", e[0], e[1], e[2]))
			}
			j.Entries = append(j.Entries, ej)
		}
	}
	d.emitJSON(j)
	return nil
}

func (d *Dumper) dumpPartitionMetadata(f File) error {
	data, err := d.readSmall(f.Path)
	if err != nil {
		return err
	}
	fields, err := DecodePartitionMetadata(data)
	if err != nil {
		d.Damaged++
		d.emitText(fmt.Sprintf("Malformed partition metadata: %v\n", err))
		d.emitJSON(damageJSON{Kind: "damage", File: f.Path, Reason: err.Error(), Remaining: int64(len(data))})
		return nil
	}
	j := metadataJSON{Kind: "partition_metadata", File: f.Path, Fields: map[string]string{}}
	for _, m := range fields {
		d.emitText(fmt.Sprintf("%s: %s\n", m.Name, m.Value))
		j.Fields[m.Name] = m.Value
	}
	d.emitJSON(j)
	return nil
}
