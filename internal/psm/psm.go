// Package psm is minibroker's ProducerStateManager: per partition, it keeps
// the state of every idempotent or transactional producer that wrote to the
// partition (epoch, the metadata of its last five batches, coordinator
// epoch, the first offset of its open transaction) and uses it to
// deduplicate retried batches, fence zombie producers, reject out-of-order
// sequences, track ongoing transactions for the last stable offset, and
// apply the MIRROR_PID_RESET barrier (a mirror's failover: producer state
// from the source never judges writes after it; docs/MIRRORING.md).
//
// The rules are Apache Kafka's (ProducerStateManager, ProducerAppendInfo,
// ProducerStateEntry, and the producer part of UnifiedLog.append). Where this
// package deviates, the deviation is noted next to the code and listed here:
//
//   - REPLICATION appends are never rejected. Kafka's follower throws
//     InvalidTxnStateException for a non-transactional batch from a producer
//     with an open transaction; a mirror must not stall on foreign data, so
//     the batch is accepted and counted as an anomaly instead. Every
//     condition Kafka only logs on a follower (epoch going backwards, a
//     coordinator epoch going backwards) and the ones a PID collision
//     produces silently (a sequence gap for a known producer, a new epoch
//     not starting at 0, a marker for a producer without an open
//     transaction) is logged and counted in
//     minibroker_psm_replication_anomalies_total{kind}.
//   - Control batches are refused from CLIENT appends (Kafka refuses them in
//     its LogValidator), so a client can neither end a transaction nor wipe
//     producer state with a forged barrier.
//   - There is no KIP-890 transaction verification guard: minibroker's
//     coordinator runs in-process and the PSM does not track verification
//     state.
//   - Snapshots keep all retained batches of a producer (Kafka keeps only the
//     last), so the dedup window survives a restart and the state after
//     snapshot + replay equals the state after live appends.
//   - With a single replica the high watermark is the log end offset, so
//     Kafka's "unreplicated transactions" never exist: the first unstable
//     offset is the first offset of the oldest ongoing transaction.
//   - CompletedTxn.LastStableOffset is computed as the LSO right after the
//     marker (batch by batch); Kafka computes it after the whole append. The
//     value can only be lower, which keeps read_committed's aborted
//     transaction lookup conservative.
//
// The Manager is a plain struct: no goroutines, no clock (time is passed
// in), no locking (the partition holds its lock around Prepare, the log
// write and Apply).
package psm

import (
	"errors"
	"fmt"
	"sort"

	"go.uber.org/zap"
)

// Origin says who appends a batch, and therefore how much it is validated.
// The numbers are stable; never renumber them.
type Origin int8

const (
	// OriginClient is a Produce request on a writable partition: full
	// validation.
	OriginClient Origin = 0
	// OriginReplication is the mirror fetcher and log recovery: no
	// validation, state is updated from the batch as a Kafka follower does.
	OriginReplication Origin = 1
	// OriginCoordinator is a transaction marker or the barrier written by
	// the broker itself: epoch and coordinator-epoch checks only.
	OriginCoordinator Origin = 2
)

func (o Origin) String() string {
	switch o {
	case OriginClient:
		return "CLIENT"
	case OriginReplication:
		return "REPLICATION"
	case OriginCoordinator:
		return "COORDINATOR"
	}
	return fmt.Sprintf("Origin(%d)", int8(o))
}

// NumBatchesToRetain is how many batches per producer Kafka keeps for
// deduplication (ProducerStateEntry.NUM_BATCHES_TO_RETAIN); it is also the
// largest max.in.flight.requests.per.connection an idempotent producer may
// use.
const NumBatchesToRetain = 5

// DefaultProducerIDExpirationMs is Kafka's producer.id.expiration.ms default.
const DefaultProducerIDExpirationMs = 86_400_000

// Config tunes a Manager.
type Config struct {
	// MaxBatchesPerProducer is the dedup window, clamped to
	// 1..NumBatchesToRetain; 0 means NumBatchesToRetain.
	MaxBatchesPerProducer int
	// ProducerIDExpirationMs is producer.id.expiration.ms; 0 means the
	// default (one day).
	ProducerIDExpirationMs int64
}

func (c Config) withDefaults() Config {
	if c.MaxBatchesPerProducer <= 0 || c.MaxBatchesPerProducer > NumBatchesToRetain {
		c.MaxBatchesPerProducer = NumBatchesToRetain
	}
	if c.ProducerIDExpirationMs <= 0 {
		c.ProducerIDExpirationMs = DefaultProducerIDExpirationMs
	}
	return c
}

// Sentinel errors. The broker maps them to Kafka error codes.
var (
	// ErrOutOfOrderSequence is OUT_OF_ORDER_SEQUENCE_NUMBER (45).
	ErrOutOfOrderSequence = errors.New("psm: out of order sequence number")
	// ErrInvalidProducerEpoch is INVALID_PRODUCER_EPOCH (47).
	ErrInvalidProducerEpoch = errors.New("psm: invalid producer epoch")
	// ErrInvalidTxnState is INVALID_TXN_STATE (48).
	ErrInvalidTxnState = errors.New("psm: invalid transaction state")
	// ErrTransactionCoordinatorFenced is TRANSACTION_COORDINATOR_FENCED (52).
	ErrTransactionCoordinatorFenced = errors.New("psm: transaction coordinator fenced")
	// ErrControlBatchFromClient is INVALID_RECORD (87): clients may not
	// write control batches.
	ErrControlBatchFromClient = errors.New("psm: control batch from a client")
	// ErrMalformedControl is CORRUPT_MESSAGE (2): a control batch that
	// cannot be decoded, from the coordinator.
	ErrMalformedControl = errors.New("psm: malformed control batch")
	// ErrCorruptSnapshot marks a snapshot that fails its checks.
	ErrCorruptSnapshot = errors.New("psm: corrupt snapshot")
)

// DuplicateError reports that a CLIENT batch repeats one of the producer's
// retained batches. Nothing must be appended; the broker answers with the
// original batch's offsets and no error code (Kafka's behaviour for a
// retried produce).
type DuplicateError struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	Timestamp   int64
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("psm: duplicate batch of producer %d, originally at offsets %d-%d",
		e.ProducerID, e.FirstOffset, e.LastOffset)
}

// BatchMeta is what a producer entry remembers of one appended batch.
type BatchMeta struct {
	FirstSeq    int32
	LastSeq     int32
	FirstOffset int64
	LastOffset  int64
	Timestamp   int64 // the batch's max timestamp
}

// Entry is a copy of one producer's state.
type Entry struct {
	ProducerID int64
	Epoch      int16
	// Batches are the last (up to five) batches of the current epoch,
	// oldest first.
	Batches               []BatchMeta
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64 // -1: no open transaction
	LastTimestamp         int64
}

// TxnInfo is an ongoing transaction.
type TxnInfo struct {
	ProducerID  int64
	Epoch       int16
	FirstOffset int64
}

// CompletedTxn is a transaction ended by a COMMIT or ABORT marker. The
// partition writes aborted ones to the transaction index.
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64 // the marker's offset
	Aborted     bool
	// LastStableOffset is the LSO right after the marker: the first offset
	// of the oldest other ongoing transaction, or LastOffset+1.
	LastStableOffset int64
}

// noEpoch is Kafka's RecordBatch.NO_PRODUCER_EPOCH, noSequence its
// NO_SEQUENCE.
const (
	noEpoch    int16 = -1
	noSequence int32 = -1
)

// entryState is the in-memory form of Entry: fixed-size, so copying it
// into a Pending does not allocate.
type entryState struct {
	producerID       int64
	epoch            int16
	coordinatorEpoch int32
	txnFirstOffset   int64
	lastTimestamp    int64
	numBatches       int
	batches          [NumBatchesToRetain]BatchMeta // oldest first
}

func emptyEntry(pid int64) entryState {
	return entryState{producerID: pid, epoch: noEpoch, coordinatorEpoch: -1,
		txnFirstOffset: -1, lastTimestamp: -1}
}

func (e *entryState) lastSeq() int32 {
	if e.numBatches == 0 {
		return noSequence
	}
	return e.batches[e.numBatches-1].LastSeq
}

// maybeUpdateEpoch switches to epoch, forgetting the batches of the old one.
func (e *entryState) maybeUpdateEpoch(epoch int16) {
	if e.epoch != epoch {
		e.numBatches = 0
		e.epoch = epoch
	}
}

func (e *entryState) addBatch(epoch int16, b BatchMeta, window int) {
	e.maybeUpdateEpoch(epoch)
	if e.numBatches >= window {
		copy(e.batches[:], e.batches[1:e.numBatches])
		e.numBatches--
	}
	e.batches[e.numBatches] = b
	e.numBatches++
	e.lastTimestamp = b.Timestamp
}

func (e *entryState) findDuplicate(epoch int16, firstSeq, lastSeq int32) (BatchMeta, bool) {
	if epoch != e.epoch {
		return BatchMeta{}, false
	}
	for i := 0; i < e.numBatches; i++ {
		if b := e.batches[i]; b.FirstSeq == firstSeq && b.LastSeq == lastSeq {
			return b, true
		}
	}
	return BatchMeta{}, false
}

func (e *entryState) export() Entry {
	out := Entry{ProducerID: e.producerID, Epoch: e.epoch, CoordinatorEpoch: e.coordinatorEpoch,
		CurrentTxnFirstOffset: e.txnFirstOffset, LastTimestamp: e.lastTimestamp}
	if e.numBatches > 0 {
		out.Batches = append([]BatchMeta(nil), e.batches[:e.numBatches]...)
	}
	return out
}

func importEntry(en Entry) entryState {
	s := entryState{producerID: en.ProducerID, epoch: en.Epoch, coordinatorEpoch: en.CoordinatorEpoch,
		txnFirstOffset: en.CurrentTxnFirstOffset, lastTimestamp: en.LastTimestamp}
	b := en.Batches
	if len(b) > NumBatchesToRetain {
		b = b[len(b)-NumBatchesToRetain:]
	}
	s.numBatches = copy(s.batches[:], b)
	return s
}

// Manager is the producer state of one partition. It is not safe for
// concurrent use.
type Manager struct {
	cfg     Config
	logger  *zap.Logger
	metrics *Metrics

	producers map[int64]*entryState
	// ongoing maps producer id to the first offset of its open
	// transaction; it mirrors entryState.txnFirstOffset >= 0.
	ongoing map[int64]int64
	mapEnd  int64 // offset after the last applied batch
	gen     uint64
	pending Pending
}

// NewManager returns an empty manager. logger and metrics may be nil.
func NewManager(cfg Config, logger *zap.Logger, metrics *Metrics) *Manager {
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Manager{
		cfg:       cfg.withDefaults(),
		logger:    logger,
		metrics:   metrics,
		producers: make(map[int64]*entryState),
		ongoing:   make(map[int64]int64),
	}
}

// mutated invalidates any outstanding Pending.
func (m *Manager) mutated() { m.gen++ }

// Entry returns a copy of a producer's state.
func (m *Manager) Entry(pid int64) (Entry, bool) {
	e, ok := m.producers[pid]
	if !ok {
		return Entry{}, false
	}
	return e.export(), true
}

// Entries returns copies of every producer's state, sorted by producer id.
func (m *Manager) Entries() []Entry {
	out := make([]Entry, 0, len(m.producers))
	for _, e := range m.producers {
		out = append(out, e.export())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// Len is the number of tracked producers.
func (m *Manager) Len() int { return len(m.producers) }

// FirstUnstableOffset is the first offset of the oldest ongoing
// transaction; ok is false when there is none (the LSO is then the high
// watermark, which on a single node is the log end offset).
func (m *Manager) FirstUnstableOffset() (int64, bool) {
	first, ok := int64(0), false
	for _, off := range m.ongoing {
		if !ok || off < first {
			first, ok = off, true
		}
	}
	return first, ok
}

// LateTransactionBufferMs is Kafka's LATE_TRANSACTION_BUFFER_MS: how long
// past transaction.max.timeout.ms a transaction may stay open before it is
// reported as hanging.
const LateTransactionBufferMs = 5 * 60 * 1000

// HasLateTransaction reports, as Kafka's hasLateTransaction, whether the
// oldest ongoing transaction's producer has been silent for longer than
// maxTransactionTimeoutMs plus LateTransactionBufferMs: a hanging
// transaction that holds the LSO back.
func (m *Manager) HasLateTransaction(nowMs, maxTransactionTimeoutMs int64) bool {
	oldestPID, oldest, found := int64(0), int64(0), false
	for pid, off := range m.ongoing {
		if !found || off < oldest {
			oldestPID, oldest, found = pid, off, true
		}
	}
	if !found {
		return false
	}
	last := m.producers[oldestPID].lastTimestamp
	return last > 0 && nowMs-last > maxTransactionTimeoutMs+LateTransactionBufferMs
}

// OngoingTxns lists the open transactions, oldest first.
func (m *Manager) OngoingTxns() []TxnInfo {
	out := make([]TxnInfo, 0, len(m.ongoing))
	for pid, off := range m.ongoing {
		out = append(out, TxnInfo{ProducerID: pid, Epoch: m.producers[pid].epoch, FirstOffset: off})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FirstOffset < out[j].FirstOffset })
	return out
}

// Clear removes every producer (the barrier; truncation before a replay).
// The map end offset is kept.
func (m *Manager) Clear() {
	m.mutated()
	clear(m.producers)
	clear(m.ongoing)
}

// Reset clears every producer and sets the map end offset (Kafka's
// truncateFullyAndStartAt, without the snapshot files).
func (m *Manager) Reset(offset int64) {
	m.Clear()
	m.mapEnd = offset
}

// RemoveExpired removes producers idle for producer.id.expiration.ms or
// longer (judged by the last batch's max timestamp, as Kafka does), never
// one with an open transaction. It returns how many were removed.
func (m *Manager) RemoveExpired(nowMs int64) int {
	removed := 0
	for pid, e := range m.producers {
		if m.isExpired(e, nowMs) {
			delete(m.producers, pid)
			removed++
		}
	}
	if removed > 0 {
		m.mutated()
		if m.metrics != nil {
			m.metrics.ProducersExpired.Add(float64(removed))
		}
	}
	return removed
}

func (m *Manager) isExpired(e *entryState, nowMs int64) bool {
	return e.txnFirstOffset < 0 && nowMs-e.lastTimestamp >= m.cfg.ProducerIDExpirationMs
}

// LastOffset is the map end offset: the offset after the last applied
// batch (or the snapshot offset the manager was loaded from).
func (m *Manager) LastOffset() int64 { return m.mapEnd }

// SetLastOffset moves the map end offset (Kafka's updateMapEndOffset), for
// the partition's recovery when a range holds no batches to apply.
func (m *Manager) SetLastOffset(offset int64) { m.mapEnd = offset }

func (m *Manager) loadEntries(entries []Entry) {
	for _, en := range entries {
		s := importEntry(en)
		m.producers[en.ProducerID] = &s
		if s.txnFirstOffset >= 0 {
			m.ongoing[en.ProducerID] = s.txnFirstOffset
		}
	}
}
