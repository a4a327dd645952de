package logtool

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/minibroker/minibroker/internal/batch"
)

// verify-log replays a partition's batches per producer id, from the
// log alone (any Kafka-compatible log: no snapshot or minibroker file is
// read), and reports every place where one producer id shows a history
// that one producer cannot have. A MIRROR_PID_RESET barrier forgets every
// producer, as the partition's producer state does: histories are judged
// only between barriers.
//
// A producer id first seen in the log (or again after a barrier, or after
// being idle for ProducerIDExpirationMs) is unknown, and like a Kafka
// broker the verifier accepts any epoch and sequence from it.

// Severities of findings.
const (
	// SeverityImpossible: no single producer writing through a Kafka
	// broker leaves this in a log.
	SeverityImpossible = "impossible"
	// SeveritySuspicious: what a producer id collision leaves, but also
	// what compaction, expiry or a retried marker can leave.
	SeveritySuspicious = "suspicious"
	// SeverityDamage: the log itself is damaged.
	SeverityDamage = "damage"
)

// FindingKind describes one kind of finding.
type FindingKind struct {
	Name     string
	Severity string
	Why      string
}

// Finding kinds. The names are stable (they are in the JSON output).
var (
	KindEpochRegression = FindingKind{"epoch_regression", SeverityImpossible,
		"a producer id's epoch never decreases: its coordinator only bumps it, and allocates a new producer id instead of wrapping"}
	KindSequenceRestart = FindingKind{"sequence_restart", SeverityImpossible,
		"within one epoch a producer never reuses a sequence number; a broker refuses it as a duplicate or out of order"}
	KindSequenceGap = FindingKind{"sequence_gap", SeveritySuspicious,
		"a broker accepts a sequence gap only from a producer whose state it expired (producer.id.expiration.ms, judged here from batch timestamps); compaction also removes batches"}
	KindNewEpochSequence = FindingKind{"new_epoch_sequence", SeveritySuspicious,
		"a producer starts every new epoch at sequence 0; compaction can remove an epoch's first batches"}
	KindTransactionalMix = FindingKind{"transactional_mix", SeverityImpossible,
		"a producer id is transactional or idempotent for its whole life, and only transactional producer ids get COMMIT/ABORT markers"}
	KindNonTxnDuringTxn = FindingKind{"nontxn_during_txn", SeverityImpossible,
		"a Kafka leader refuses a non-transactional batch from a producer whose transaction is open"}
	KindMarkerWithoutTxn = FindingKind{"marker_without_txn", SeveritySuspicious,
		"a marker closed no transaction of this producer id here: after a collision, another producer's marker closed it first; but Kafka also writes markers to partitions added to a transaction that got no data, and may repeat a marker"}
	KindCoordinatorEpochRegression = FindingKind{"coordinator_epoch_regression", SeverityImpossible,
		"a producer's transaction coordinator epoch never decreases; a Kafka leader fences such a marker"}
	KindTransactionalBarrier = FindingKind{"transactional_barrier", SeveritySuspicious,
		"a MIRROR_PID_RESET record in a transactional batch is not a barrier; producer state was not reset"}
	KindUndecodableControl = FindingKind{"undecodable_control", SeveritySuspicious,
		"a control batch that cannot be decoded may be a barrier: histories across it may be judged wrongly"}
	KindCorruptBatch = FindingKind{"corrupt_batch", SeverityDamage,
		"a batch fails its checks (CRC, magic, header fields); its header is still replayed, a batch of another magic is skipped"}
	KindDamagedSegment = FindingKind{"damaged_segment", SeverityDamage,
		"the rest of a segment cannot be framed as batches and was not read"}
)

// FindingKinds lists every kind, for documentation.
var FindingKinds = []FindingKind{KindEpochRegression, KindSequenceRestart, KindSequenceGap, KindNewEpochSequence,
	KindTransactionalMix, KindNonTxnDuringTxn, KindMarkerWithoutTxn, KindCoordinatorEpochRegression,
	KindTransactionalBarrier, KindUndecodableControl, KindCorruptBatch, KindDamagedSegment}

// Finding is one place where the log contradicts a single producer's
// history (or is damaged).
type Finding struct {
	Kind       FindingKind
	ProducerID int64
	Offset     int64 // the batch that contradicts the history
	// PreviousOffset is the base offset of the producer's batch it
	// contradicts; -1 if none.
	PreviousOffset int64
	File           string
	Position       int64
	Detail         string
}

// VerifyOptions tune the replay.
type VerifyOptions struct {
	// ProducerIDExpirationMs forgets a producer without an open
	// transaction once a batch of it arrives this long (by max
	// timestamp) after its previous one, as a broker with that
	// producer.id.expiration.ms would have. 0: never.
	ProducerIDExpirationMs int64
	// MaxDecompressedBytes bounds one control batch's decompressed
	// records; 0 means DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int
}

// producerHistory is what the verifier remembers of one producer id
// since the last barrier.
type producerHistory struct {
	epoch            int16
	hasSeq           bool // lastSeq holds the last sequence of this epoch
	lastSeq          int32
	lastOffset       int64 // base offset of the producer's last batch
	lastTimestamp    int64
	transactional    int8 // 0 not known yet, 1 idempotent data, 2 transactional data or markers
	txnFirstOffset   int64
	coordinatorEpoch int32
}

// Verifier replays one partition's batches in offset order.
type Verifier struct {
	opts      VerifyOptions
	producers map[int64]*producerHistory
	Findings  []Finding
	Batches   int
	Barriers  int
	// TornTail is set when the last segment ends in a partial batch (a
	// crash, or a broker appending while the log was read): not a
	// finding.
	TornTail *Damage
}

// NewVerifier returns a Verifier for one partition.
func NewVerifier(opts VerifyOptions) *Verifier {
	if opts.MaxDecompressedBytes <= 0 {
		opts.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	return &Verifier{opts: opts, producers: make(map[int64]*producerHistory)}
}

func (v *Verifier) report(k FindingKind, pid, offset, prev int64, file string, pos int64, format string, args ...any) {
	v.Findings = append(v.Findings, Finding{Kind: k, ProducerID: pid, Offset: offset, PreviousOffset: prev,
		File: file, Position: pos, Detail: fmt.Sprintf(format, args...)})
}

// lookup returns pid's history, forgetting it first if it expired.
func (v *Verifier) lookup(pid int64, ts int64) *producerHistory {
	p := v.producers[pid]
	if p != nil && v.opts.ProducerIDExpirationMs > 0 && p.txnFirstOffset < 0 && ts-p.lastTimestamp >= v.opts.ProducerIDExpirationMs {
		delete(v.producers, pid)
		return nil
	}
	return p
}

func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// Batch replays one batch read from file.
func (v *Verifier) Batch(file string, b *Batch) {
	h := &b.Header
	v.Batches++
	if len(b.Problems) > 0 {
		v.report(KindCorruptBatch, h.ProducerID, h.BaseOffset, -1, file, b.Position, "%s", strings.Join(b.Problems, "; "))
	}
	if b.Raw == nil {
		return // not a v2 batch: nothing to replay
	}
	// A batch that fails only its CRC still has a header worth replaying:
	// leaving it out would make its producer's next batch look like a gap.
	if h.IsControl() {
		v.control(file, b)
		return
	}
	if h.ProducerID < 0 {
		return
	}
	v.data(file, b)
}

func (v *Verifier) data(file string, b *Batch) {
	h := &b.Header
	pid, epoch, seq := h.ProducerID, h.ProducerEpoch, h.BaseSequence
	txn := h.IsTransactional()
	p := v.lookup(pid, h.MaxTimestamp)
	if p == nil {
		p = &producerHistory{epoch: epoch, txnFirstOffset: -1, coordinatorEpoch: -1}
		v.producers[pid] = p
	} else {
		prev := p.lastOffset
		switch {
		case epoch < p.epoch:
			v.report(KindEpochRegression, pid, h.BaseOffset, prev, file, b.Position,
				"epoch %d after epoch %d", epoch, p.epoch)
		case epoch > p.epoch:
			if seq > 0 {
				v.report(KindNewEpochSequence, pid, h.BaseOffset, prev, file, b.Position,
					"new epoch %d (previous %d) starts at sequence %d", epoch, p.epoch, seq)
			}
		case seq >= 0 && p.hasSeq && !inSequence(p.lastSeq, seq):
			if seq <= p.lastSeq {
				v.report(KindSequenceRestart, pid, h.BaseOffset, prev, file, b.Position,
					"epoch %d: sequence %d after sequence %d", epoch, seq, p.lastSeq)
			} else {
				v.report(KindSequenceGap, pid, h.BaseOffset, prev, file, b.Position,
					"epoch %d: sequence %d after sequence %d (%d missing, idle %d ms)", epoch, seq, p.lastSeq,
					int64(seq)-int64(p.lastSeq)-1, h.MaxTimestamp-p.lastTimestamp)
			}
		}
		switch {
		case !txn && p.txnFirstOffset >= 0:
			v.report(KindNonTxnDuringTxn, pid, h.BaseOffset, prev, file, b.Position,
				"non-transactional batch while the transaction from offset %d is open", p.txnFirstOffset)
		case p.transactional != 0 && txn != (p.transactional == 2):
			v.report(KindTransactionalMix, pid, h.BaseOffset, prev, file, b.Position,
				"%s batch from a producer id that wrote %s data", txnWord(txn), txnWord(!txn))
		}
	}
	if epoch != p.epoch {
		p.hasSeq = false
	}
	p.epoch = epoch
	if seq >= 0 {
		p.hasSeq, p.lastSeq = true, h.LastSequence()
	}
	p.lastOffset, p.lastTimestamp = h.BaseOffset, h.MaxTimestamp
	p.transactional = 1
	if txn {
		p.transactional = 2
		if p.txnFirstOffset < 0 {
			p.txnFirstOffset = h.BaseOffset
		}
	}
}

func txnWord(txn bool) string {
	if txn {
		return "transactional"
	}
	return "non-transactional"
}

func (v *Verifier) control(file string, b *Batch) {
	h := &b.Header
	c := DecodeControl(b, v.opts.MaxDecompressedBytes)
	switch {
	case c == nil:
		return // emptied by compaction
	case c.Err != nil:
		v.report(KindUndecodableControl, h.ProducerID, h.BaseOffset, -1, file, b.Position, "%v", c.Err)
		return
	case IsBarrier(h, c):
		v.Barriers++
		clear(v.producers)
		return
	case c.Type == batch.ControlMirrorPidReset:
		v.report(KindTransactionalBarrier, h.ProducerID, h.BaseOffset, -1, file, b.Position,
			"MIRROR_PID_RESET in a transactional batch")
		return
	case c.EndTxn == nil || h.ProducerID < 0:
		return
	}
	pid, epoch, coordEpoch := h.ProducerID, h.ProducerEpoch, c.EndTxn.CoordinatorEpoch
	p := v.lookup(pid, h.MaxTimestamp)
	if p == nil {
		v.report(KindMarkerWithoutTxn, pid, h.BaseOffset, -1, file, b.Position,
			"%s marker for a producer id with no data here (since the log start or the last barrier)", c.Type)
		p = &producerHistory{epoch: epoch, txnFirstOffset: -1, coordinatorEpoch: coordEpoch}
		v.producers[pid] = p
	} else {
		prev := p.lastOffset
		switch {
		case epoch < p.epoch:
			v.report(KindEpochRegression, pid, h.BaseOffset, prev, file, b.Position,
				"%s marker at epoch %d after epoch %d", c.Type, epoch, p.epoch)
		case coordEpoch < p.coordinatorEpoch:
			v.report(KindCoordinatorEpochRegression, pid, h.BaseOffset, prev, file, b.Position,
				"%s marker with coordinator epoch %d after %d", c.Type, coordEpoch, p.coordinatorEpoch)
		}
		switch {
		case p.transactional == 1:
			v.report(KindTransactionalMix, pid, h.BaseOffset, prev, file, b.Position,
				"%s marker for a producer id that wrote non-transactional data", c.Type)
		case p.txnFirstOffset < 0:
			v.report(KindMarkerWithoutTxn, pid, h.BaseOffset, prev, file, b.Position,
				"%s marker for a producer id with no open transaction", c.Type)
		}
	}
	if epoch != p.epoch {
		p.hasSeq = false
	}
	p.epoch, p.coordinatorEpoch, p.txnFirstOffset = epoch, coordEpoch, -1
	p.lastOffset, p.lastTimestamp = h.BaseOffset, h.MaxTimestamp
	p.transactional = 2
}

// Segment replays one segment file; last says whether it is the
// partition's last, where a torn tail is expected on a live broker.
func (v *Verifier) Segment(path string, last bool) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	damage, err := ScanSegment(fh, st.Size(), func(b *Batch) error {
		v.Batch(path, b)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if damage != nil {
		if last && damage.TornTail {
			v.TornTail = damage
			return nil
		}
		v.report(KindDamagedSegment, -1, -1, -1, path, damage.Position, "%s", damage)
	}
	return nil
}

// Partition is a set of segments verified together: a partition
// directory, or the segment files given from one directory.
type Partition struct {
	Name     string // the directory
	Segments []string
}

// GroupPaths turns verify-log's arguments into partitions: each
// directory is one partition (its .log files); segment files given
// directly are grouped by directory and ordered by base offset.
func GroupPaths(paths []string) ([]Partition, error) {
	var out []Partition
	loose := map[string][]File{}
	var looseOrder []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if st.IsDir() {
			segs, err := Segments(p)
			if err != nil {
				return nil, err
			}
			if len(segs) == 0 {
				return nil, fmt.Errorf("%s: no .log segment: not a partition directory", p)
			}
			part := Partition{Name: p}
			for _, s := range segs {
				part.Segments = append(part.Segments, s.Path)
			}
			out = append(out, part)
			continue
		}
		f := Classify(p)
		if f.Kind != KindSegment {
			return nil, fmt.Errorf("%s: not a segment (.log) or partition directory", p)
		}
		dir := filepath.Dir(p)
		if _, ok := loose[dir]; !ok {
			looseOrder = append(looseOrder, dir)
		}
		loose[dir] = append(loose[dir], f)
	}
	for _, dir := range looseOrder {
		fs := loose[dir]
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].Offset < fs[j].Offset })
		part := Partition{Name: dir}
		for _, f := range fs {
			part.Segments = append(part.Segments, f.Path)
		}
		out = append(out, part)
	}
	return out, nil
}

// VerifyPartition replays every segment of a partition.
func VerifyPartition(p Partition, opts VerifyOptions) (*Verifier, error) {
	v := NewVerifier(opts)
	for i, s := range p.Segments {
		if err := v.Segment(s, i == len(p.Segments)-1); err != nil {
			return v, err
		}
	}
	return v, nil
}
