package coordinator

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// TxnState is a transactional id's state, as Kafka's TransactionState. The
// numbers are persisted in the transaction log; never renumber them.
type TxnState int8

const (
	// TxnEmpty: the producer id is initialised and no transaction is open.
	TxnEmpty TxnState = 0
	// TxnOngoing: partitions or a group were added; the transaction is open.
	TxnOngoing TxnState = 1
	// TxnPrepareCommit: the commit is decided (durably); markers are being
	// written.
	TxnPrepareCommit TxnState = 2
	// TxnPrepareAbort: the abort is decided; markers are being written.
	TxnPrepareAbort TxnState = 3
	// TxnCompleteCommit: every COMMIT marker is written.
	TxnCompleteCommit TxnState = 4
	// TxnCompleteAbort: every ABORT marker is written.
	TxnCompleteAbort TxnState = 5
	// TxnDead: the transactional id expired (a tombstone in the log).
	TxnDead TxnState = 6
)

var txnStateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead"}

// String is Kafka's name for the state (DescribeTransactions,
// ListTransactions).
func (s TxnState) String() string {
	if s >= 0 && int(s) < len(txnStateNames) {
		return txnStateNames[s]
	}
	return fmt.Sprintf("TxnState(%d)", int8(s))
}

// ParseTxnState parses a Kafka state name (case-insensitive).
func ParseTxnState(name string) (TxnState, bool) {
	for i, n := range txnStateNames {
		if strings.EqualFold(n, name) {
			return TxnState(i), true
		}
	}
	return 0, false
}

// TxnStates lists every state, for metrics.
func TxnStates() []TxnState {
	out := make([]TxnState, len(txnStateNames))
	for i := range out {
		out[i] = TxnState(i)
	}
	return out
}

// noProducerID and noProducerEpoch are Kafka's RecordBatch.NO_PRODUCER_ID
// and NO_PRODUCER_EPOCH.
const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
)

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted: the
// coordinator keeps one epoch in reserve for fencing, so an id whose epoch
// reached MaxInt16-1 is rotated to a new producer id.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// Transaction coordinator errors. The broker's error table turns each into
// the Kafka error code of the same name (PRODUCER_FENCED becomes
// INVALID_PRODUCER_EPOCH for request versions that predate it).
var (
	ErrProducerFenced            = errors.New("coordinator: producer fenced")
	ErrInvalidProducerEpoch      = errors.New("coordinator: invalid producer epoch")
	ErrInvalidProducerIDMapping  = errors.New("coordinator: invalid producer id mapping")
	ErrConcurrentTransactions    = errors.New("coordinator: concurrent transactions")
	ErrInvalidTxnState           = errors.New("coordinator: invalid transaction state")
	ErrInvalidTransactionTimeout = errors.New("coordinator: invalid transaction timeout")
	ErrTransactionalIDNotFound   = errors.New("coordinator: transactional id not found")
	ErrInvalidTransactionalID    = errors.New("coordinator: invalid (empty) transactional id")
	// ErrTransactionAbortable: the transaction cannot commit (a partition
	// of it cannot take the COMMIT marker) and stays open for the client
	// to abort; TRANSACTION_ABORTABLE (KIP-890) from EndTxn v4 on.
	ErrTransactionAbortable = errors.New("coordinator: transaction abortable")
	// ErrTxnLogUnavailable: the transaction log cannot be written; the
	// broker answers COORDINATOR_NOT_AVAILABLE (retriable).
	ErrTxnLogUnavailable = errors.New("coordinator: transaction log unavailable")
)

// TxnMetadata is one transactional id's state: what the transaction log
// stores and DescribeTransactions shows. Partitions and Groups are sorted
// and unique.
type TxnMetadata struct {
	TransactionalID string
	ProducerID      int64
	// LastProducerID is the id before the last rotation (epoch
	// exhaustion), -1 if none; a retried InitProducerId may name it.
	LastProducerID int64
	ProducerEpoch  int16
	// LastProducerEpoch is the epoch before the last InitProducerId bump,
	// so a retry of a bump that succeeded gets the same answer; -1 if none.
	LastProducerEpoch int16
	TimeoutMs         int32
	State             TxnState
	Partitions        []TopicPartition
	// Groups are the consumer groups added with AddOffsetsToTxn.
	Groups []string
	// StartMs is when the open (or last) transaction began, -1 if none.
	StartMs      int64
	LastUpdateMs int64

	// Transaction version 2 (KIP-890 part 2), persisted in type-3 records
	// of the transaction log (txn_log.go). Kafka's TransactionLogValue
	// fields: LastProducerID is PreviousProducerId, NextProducerID is
	// NextProducerId, ClientTxnVersion is ClientTransactionVersion.

	// NextProducerID is the producer id a version 2 commit or abort that
	// exhausted the epoch moves to once its markers are written; -1 if
	// none.
	NextProducerID int64
	// ClientTxnVersion is the transaction version of the request that
	// made this state (2: EndTxn v5+, Produce v12+, TxnOffsetCommit v5+,
	// AddPartitionsToTxn v5; else 0).
	ClientTxnVersion int8
}

func (m TxnMetadata) clone() TxnMetadata {
	m.Partitions = slices.Clone(m.Partitions)
	m.Groups = slices.Clone(m.Groups)
	return m
}

func (m TxnMetadata) hasPartition(tp TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(m.Partitions, tp, compareTP)
	return ok
}

func (m TxnMetadata) hasGroup(g string) bool {
	_, ok := slices.BinarySearch(m.Groups, g)
	return ok
}

func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// addPartitions returns the sorted union.
func addPartitions(have, add []TopicPartition) []TopicPartition {
	out := append(slices.Clone(have), add...)
	slices.SortFunc(out, compareTP)
	return slices.Compact(out)
}

// MarkerJob is the work a decided transaction still needs: a marker in
// each partition, then its groups' offsets completed.
type MarkerJob struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	Partitions      []TopicPartition
	HasGroups       bool
}

func jobFor(m *TxnMetadata) *MarkerJob {
	return &MarkerJob{TransactionalID: m.TransactionalID, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
		Commit: m.State == TxnPrepareCommit, Partitions: slices.Clone(m.Partitions), HasGroups: len(m.Groups) > 0}
}
