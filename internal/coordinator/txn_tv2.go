package coordinator

import (
	"fmt"
	"math"
	"slices"
)

// Transaction versions (Kafka's transaction.version feature levels, its
// TransactionVersion). A request's version decides which rules it gets, as
// in Kafka: EndTxn v5+, Produce v12+, TxnOffsetCommit v5+ and the
// broker-to-broker AddPartitionsToTxn v5 are transaction version 2
// (KIP-890 part 2); anything older is version 0. The finalized level only
// tells clients which to use (ApiVersions); a broker finalizing a lower
// level still serves a client that sends the newer versions, as Kafka does.
const (
	TxnVersion0 int8 = 0
	TxnVersion1 int8 = 1
	TxnVersion2 int8 = 2
)

// EndResult is what EndTxn v5+ answers: the producer id and epoch the
// client uses from now on (-1/-1 with an error).
type EndResult struct {
	ProducerID    int64
	ProducerEpoch int16
}

var noEndResult = EndResult{ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}

// EndTxnV2 serves EndTxn v5+ (Kafka's TransactionCoordinator.endTransaction
// for a client of transaction version 2). Every commit and every abort
// bumps the producer epoch: the decision (PrepareCommit/PrepareAbort) is
// recorded at epoch+1 and the markers are written with it, so data the
// producer sends afterwards at its old epoch is fenced by every partition
// of the transaction, and a late EndTxn at the old epoch is no longer the
// current one. An epoch about to be exhausted moves the id to a new
// producer id (NextProducerID) once the markers are written.
//
// Retries and the states with no open transaction, as Kafka 4's table
// (Retry: the request's epoch is the current one minus 1, or the id was
// rotated and the request names the previous id at MaxInt16-1; Current:
// the current epoch):
//
//	                 Abort            Commit
//	                 Retry  Current   Retry  Current
//	Empty            FENCED bump      FENCED INVALID_TXN_STATE
//	CompleteAbort    NONE   bump      FENCED INVALID_TXN_STATE
//	CompleteCommit   ITS    bump      NONE   INVALID_TXN_STATE
//
// where bump is an empty abort: the epoch is bumped with nothing to mark
// (kgo aborts that way when none of its produces succeeded). A commit
// retried into CompleteAbort is PRODUCER_FENCED rather than
// INVALID_TXN_STATE (KAFKA-20785: only an abort the coordinator made
// itself, a timeout, leads there). Other epochs are PRODUCER_FENCED. While
// markers are being written (Prepare*), the current or retried epoch gets
// CONCURRENT_TRANSACTIONS for the same decision and INVALID_TXN_STATE for
// the other (KAFKA-18464 checks the pending transition before the epoch,
// so an empty abort right after a commit waits instead of fencing itself).
//
// noBump is the negative control of the epoch bump (the rule removed):
// the decision keeps the epoch, as transaction version 0 does, and
// retries are told apart as EndTxn does for it.
func (m *TxnMachine) EndTxnV2(txnID string, pid int64, epoch int16, commit bool, noBump bool, nowMs int64) (EndResult, *MarkerJob, error) {
	cur, ok := m.txns[txnID]
	if !ok || cur.ProducerEpoch == noProducerEpoch {
		return noEndResult, nil, fmt.Errorf("%w: transactional id %q", ErrInvalidProducerIDMapping, txnID)
	}
	if noBump {
		job, err := m.EndTxn(txnID, pid, epoch, commit, nowMs)
		if err != nil {
			return noEndResult, nil, err
		}
		cur = m.txns[txnID]
		return EndResult{ProducerID: cur.ProducerID, ProducerEpoch: cur.ProducerEpoch}, job, nil
	}
	retryOnOverflow := cur.LastProducerID == pid && epoch == math.MaxInt16-1 && cur.ProducerEpoch == 0
	if cur.ProducerID != pid && !retryOnOverflow {
		return noEndResult, nil, fmt.Errorf("%w: producer id %d, transactional id %q", ErrInvalidProducerIDMapping, pid, txnID)
	}
	retryOnBump := cur.ProducerID == pid && int(cur.ProducerEpoch) == int(epoch)+1
	isRetry := retryOnBump || retryOnOverflow
	current := cur.ProducerID == pid && epoch == cur.ProducerEpoch
	fenced := fmt.Errorf("%w: epoch %d of producer %d, current %d", ErrProducerFenced, epoch, pid, cur.ProducerEpoch)
	invalid := fmt.Errorf("%w: %s requested while %q is %s", ErrInvalidTxnState, endName(commit), txnID, cur.State)
	same := EndResult{ProducerID: cur.ProducerID, ProducerEpoch: cur.ProducerEpoch}
	switch cur.State {
	case TxnPrepareCommit, TxnPrepareAbort:
		if !current && !isRetry {
			return noEndResult, nil, fenced
		}
		if commit == (cur.State == TxnPrepareCommit) || current {
			return noEndResult, nil, fmt.Errorf("%w: %q is completing its %s", ErrConcurrentTransactions, txnID, endName(cur.State == TxnPrepareCommit))
		}
		return noEndResult, nil, invalid
	case TxnOngoing:
		if !current {
			return noEndResult, nil, fenced
		}
		state := TxnPrepareAbort
		if commit {
			state = TxnPrepareCommit
		}
		return m.decideV2(cur, state, false, nowMs)
	case TxnEmpty:
		switch {
		case !current:
			return noEndResult, nil, fenced
		case commit:
			return noEndResult, nil, invalid
		}
		return m.decideV2(cur, TxnPrepareAbort, true, nowMs)
	case TxnCompleteCommit, TxnCompleteAbort:
		done := commit == (cur.State == TxnCompleteCommit)
		switch {
		case !current && !isRetry:
			return noEndResult, nil, fenced
		case isRetry && done:
			return same, nil, nil
		case isRetry && commit:
			return noEndResult, nil, fmt.Errorf("%w: commit retried at epoch %d after the coordinator aborted the transaction", ErrProducerFenced, epoch)
		case isRetry:
			return noEndResult, nil, invalid
		case commit:
			return noEndResult, nil, invalid
		}
		return m.decideV2(cur, TxnPrepareAbort, true, nowMs)
	default:
		return noEndResult, nil, invalid
	}
}

// decideV2 is Kafka's prepareAbortOrCommit for transaction version 2:
// the epoch is bumped (a new producer id is taken when the epoch is
// exhausted, used once the markers are written); empty is an abort with
// nothing added (no partition, no group), whose start time is now.
func (m *TxnMachine) decideV2(cur *TxnMetadata, state TxnState, empty bool, nowMs int64) (EndResult, *MarkerJob, error) {
	next := transition(cur, state, nowMs)
	next.ClientTxnVersion = TxnVersion2
	next.NextProducerID = noProducerID
	if epochExhausted(cur.ProducerEpoch) {
		pid, err := m.newPID()
		if err != nil {
			return noEndResult, nil, fmt.Errorf("%w: producer id: %v", ErrTxnLogUnavailable, err)
		}
		next.NextProducerID = pid
	}
	next.LastProducerEpoch = cur.ProducerEpoch
	next.ProducerEpoch = cur.ProducerEpoch + 1
	if empty {
		next.Partitions, next.Groups, next.StartMs = nil, nil, nowMs
	}
	if err := m.apply(next); err != nil {
		return noEndResult, nil, err
	}
	res := EndResult{ProducerID: next.ProducerID, ProducerEpoch: next.ProducerEpoch}
	if next.NextProducerID >= 0 {
		res = EndResult{ProducerID: next.NextProducerID, ProducerEpoch: 0}
	}
	return res, jobFor(m.txns[cur.TransactionalID]), nil
}

// completeV2 is the part of Kafka's prepareComplete a transaction ended
// by version 2 adds: the last epoch becomes the bumped one (so an
// InitProducerId naming the epoch before the bump is fenced, as in
// Kafka), and an exhausted epoch moves to the next producer id at epoch
// 0, the previous id and the client's last epoch (MaxInt16-1) kept for a
// retried EndTxn or InitProducerId.
func completeV2(next *TxnMetadata) {
	if next.ClientTxnVersion < TxnVersion2 {
		return
	}
	if next.NextProducerID < 0 {
		next.LastProducerEpoch = next.ProducerEpoch
		return
	}
	next.LastProducerID, next.ProducerID = next.ProducerID, next.NextProducerID
	next.ProducerEpoch, next.LastProducerEpoch = 0, math.MaxInt16-1
	next.NextProducerID = noProducerID
}

// AddPartitionsImplicit adds partitions for a transaction version 2
// request: a Produce v12+ adding its partition itself, or the
// broker-to-broker AddPartitionsToTxn v5 that asks for it (Kafka's
// AddPartitionsToTxnManager with ADD_PARTITION). The checks are those of
// AddPartitions.
func (m *TxnMachine) AddPartitionsImplicit(txnID string, pid int64, epoch int16, parts []TopicPartition, nowMs int64) error {
	return m.addPartitions(txnID, pid, epoch, parts, TxnVersion2, nowMs)
}

// AddOffsetsImplicit joins a group to the transaction for TxnOffsetCommit
// v5+ (KIP-890 part 2: the client sends no AddOffsetsToTxn; Kafka adds
// the group's __consumer_offsets partition from the offset commit).
func (m *TxnMachine) AddOffsetsImplicit(txnID string, pid int64, epoch int16, group string, nowMs int64) error {
	return m.addOffsets(txnID, pid, epoch, group, TxnVersion2, nowMs)
}

// VerifyPartitions is Kafka's handleVerifyPartitionsInTransaction (the
// verify-only form of AddPartitionsToTxn v4+): an error for the whole
// transaction (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
// CONCURRENT_TRANSACTIONS while markers are written), else per
// partition nil or ErrTransactionAbortable when it is not in the
// transaction.
func (m *TxnMachine) VerifyPartitions(txnID string, pid int64, epoch int16, parts []TopicPartition) (map[TopicPartition]error, error) {
	cur, err := m.lookup(txnID, pid, epoch)
	if err != nil {
		return nil, err
	}
	if cur.State == TxnPrepareCommit || cur.State == TxnPrepareAbort {
		return nil, fmt.Errorf("%w: %q is completing a transaction", ErrConcurrentTransactions, txnID)
	}
	out := make(map[TopicPartition]error, len(parts))
	for _, tp := range parts {
		if !cur.hasPartition(tp) {
			out[tp] = fmt.Errorf("%w: %s-%d is not in the transaction of %q", ErrTransactionAbortable, tp.Topic, tp.Partition, txnID)
		} else {
			out[tp] = nil
		}
	}
	return out, nil
}

// needsAdd reports whether a version 2 produce to tp must add it first:
// the producer owns the id at this epoch, no decision is being carried out,
// and tp is not in an open transaction.
func (m *TxnMachine) needsAdd(txnID string, pid int64, epoch int16, tp TopicPartition) bool {
	cur, err := m.lookup(txnID, pid, epoch)
	if err != nil || cur.State == TxnPrepareCommit || cur.State == TxnPrepareAbort {
		return false
	}
	return cur.State != TxnOngoing || !slices.ContainsFunc(cur.Partitions, func(p TopicPartition) bool { return p == tp })
}
