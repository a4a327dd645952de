package coordinator

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// TxnConfig tunes the transaction coordinator.
type TxnConfig struct {
	// MaxTimeoutMs is transaction.max.timeout.ms.
	MaxTimeoutMs int32
	// IDExpirationMs is transactional.id.expiration.ms.
	IDExpirationMs int64
}

// TxnMachine is the transaction coordinator's state machine (Kafka's
// TransactionCoordinator + TransactionMetadata transitions). It is a plain
// struct: no goroutines, no clock (every call takes nowMs), no locking (the
// caller serialises calls). It never writes a marker itself: a transition
// into PrepareCommit/PrepareAbort returns a MarkerJob, which the caller
// carries out and then reports with CompleteMarkers.
//
// Every transition is persisted through persist before it is applied; if
// persist fails, the state is unchanged and the error returned.
//
// Where it differs from Kafka:
//
//   - There is no PrepareEpochFence state and no pending-transition flag:
//     the caller serialises calls and persists synchronously, so fencing
//     an open transaction goes straight to PrepareAbort at the bumped
//     epoch (the record Kafka ends up writing), and "a transition is in
//     flight" only exists while markers are written (Prepare* states,
//     answered CONCURRENT_TRANSACTIONS as Kafka does).
//   - Groups joined with AddOffsetsToTxn are kept by name (there is no
//     __consumer_offsets partition to add), and TxnOffsetCommit must name
//     a group of the open transaction (Kafka 3.6+ verification; older
//     Kafka accepted it).
//   - Transaction version 2 (KIP-890 part 2) is in txn_tv2.go: EndTxnV2
//     bumps the epoch on every commit and abort; EndTxn keeps it, as
//     transaction version 0 does.
type TxnMachine struct {
	cfg     TxnConfig
	newPID  func() (int64, error)
	persist func(TxnMetadata) error

	txns  map[string]*TxnMetadata
	byPID map[int64]string // current producer id → transactional id
}

// NewTxnMachine returns an empty machine. newPID hands out producer ids;
// persist makes a transition durable (nil: nothing is persisted).
func NewTxnMachine(cfg TxnConfig, newPID func() (int64, error), persist func(TxnMetadata) error) *TxnMachine {
	if persist == nil {
		persist = func(TxnMetadata) error { return nil }
	}
	return &TxnMachine{cfg: cfg, newPID: newPID, persist: persist,
		txns: map[string]*TxnMetadata{}, byPID: map[int64]string{}}
}

// Load installs a state read back from the transaction log (the last
// record for its id wins; Dead removes the id).
func (m *TxnMachine) Load(md TxnMetadata) {
	if old, ok := m.txns[md.TransactionalID]; ok {
		delete(m.byPID, old.ProducerID)
	}
	if md.State == TxnDead {
		delete(m.txns, md.TransactionalID)
		return
	}
	md = md.clone()
	m.txns[md.TransactionalID] = &md
	m.byPID[md.ProducerID] = md.TransactionalID
}

// apply persists next, then installs it.
func (m *TxnMachine) apply(next TxnMetadata) error {
	if err := m.persist(next); err != nil {
		if errors.Is(err, ErrRecordTooLarge) {
			// Kafka: MESSAGE_TOO_LARGE from the append is answered
			// UNKNOWN_SERVER_ERROR, not a retriable error.
			return err
		}
		return fmt.Errorf("%w: %v", ErrTxnLogUnavailable, err)
	}
	m.Load(next)
	return nil
}

// transition is Kafka's prepareTransitionTo.
func transition(cur *TxnMetadata, state TxnState, nowMs int64) TxnMetadata {
	next := cur.clone()
	next.State = state
	next.LastUpdateMs = nowMs
	return next
}

// InitResult is the answer to InitProducerId.
type InitResult struct {
	ProducerID    int64
	ProducerEpoch int16
}

// InitProducerID serves InitProducerId for a transactional id.
// expectedPID/expectedEpoch are the KIP-360 fields (-1 when absent). When
// the id has an open transaction it is aborted first: the epoch is bumped
// (fencing the previous session), the abort is decided, and the returned
// job's markers must be written; the client gets CONCURRENT_TRANSACTIONS
// and retries, and the retry bumps the epoch again.
func (m *TxnMachine) InitProducerID(txnID string, timeoutMs int32, expectedPID int64, expectedEpoch int16, nowMs int64) (InitResult, *MarkerJob, error) {
	fail := InitResult{ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
	if txnID == "" {
		return fail, nil, ErrInvalidTransactionalID
	}
	if timeoutMs <= 0 || timeoutMs > m.cfg.MaxTimeoutMs {
		return fail, nil, fmt.Errorf("%w: %d ms (transaction.max.timeout.ms is %d)", ErrInvalidTransactionTimeout, timeoutMs, m.cfg.MaxTimeoutMs)
	}
	expected := expectedPID >= 0 && expectedEpoch >= 0
	cur, ok := m.txns[txnID]
	if !ok {
		// Kept in memory with epoch -1 until the bump below is persisted,
		// as Kafka's putTransactionStateIfNotExists.
		pid, err := m.newPID()
		if err != nil {
			return fail, nil, fmt.Errorf("%w: producer id: %v", ErrTxnLogUnavailable, err)
		}
		cur = &TxnMetadata{TransactionalID: txnID, ProducerID: pid, LastProducerID: noProducerID, NextProducerID: noProducerID,
			ProducerEpoch: noProducerEpoch, LastProducerEpoch: noProducerEpoch, TimeoutMs: timeoutMs,
			State: TxnEmpty, StartMs: -1, LastUpdateMs: nowMs}
		m.txns[txnID] = cur
		m.byPID[pid] = txnID
	}
	if expected && !(cur.ProducerEpoch == noProducerEpoch || expectedPID == cur.ProducerID ||
		(expectedPID == cur.LastProducerID && epochExhausted(expectedEpoch))) {
		return fail, nil, fmt.Errorf("%w: producer id %d does not belong to transactional id %q", ErrProducerFenced, expectedPID, txnID)
	}
	switch cur.State {
	case TxnPrepareCommit, TxnPrepareAbort:
		return fail, nil, fmt.Errorf("%w: %q is completing a transaction", ErrConcurrentTransactions, txnID)
	case TxnOngoing:
		// Kafka's prepareFenceProducerEpoch, then an abort not from the
		// client: the bumped epoch is never returned.
		next := transition(cur, TxnPrepareAbort, nowMs)
		next.ProducerEpoch++
		next.LastProducerEpoch = noProducerEpoch
		if err := m.apply(next); err != nil {
			return fail, nil, err
		}
		return fail, jobFor(m.txns[txnID]), fmt.Errorf("%w: aborting the open transaction of %q", ErrConcurrentTransactions, txnID)
	case TxnEmpty, TxnCompleteCommit, TxnCompleteAbort:
	default:
		return fail, nil, fmt.Errorf("%w: %q in state %s", ErrInvalidTxnState, txnID, cur.State)
	}
	next := transition(cur, TxnEmpty, nowMs)
	next.TimeoutMs = timeoutMs
	next.NextProducerID, next.ClientTxnVersion = noProducerID, TxnVersion0
	next.Partitions, next.Groups, next.StartMs = nil, nil, -1
	if epochExhausted(cur.ProducerEpoch) && (!expected || expectedEpoch == cur.ProducerEpoch) {
		// Kafka's prepareProducerIdRotation.
		pid, err := m.newPID()
		if err != nil {
			return fail, nil, fmt.Errorf("%w: producer id: %v", ErrTxnLogUnavailable, err)
		}
		next.LastProducerID, next.ProducerID, next.ProducerEpoch = cur.ProducerID, pid, 0
		next.LastProducerEpoch = noProducerEpoch
		if expected {
			next.LastProducerEpoch = cur.ProducerEpoch
		}
	} else {
		// Kafka's prepareIncrementProducerEpoch.
		switch {
		case !expected:
			next.ProducerEpoch, next.LastProducerEpoch = cur.ProducerEpoch+1, noProducerEpoch
		case cur.ProducerEpoch == noProducerEpoch || expectedEpoch == cur.ProducerEpoch:
			next.ProducerEpoch, next.LastProducerEpoch = cur.ProducerEpoch+1, cur.ProducerEpoch
		case expectedEpoch == cur.LastProducerEpoch:
			// A retry of a bump that succeeded: same answer, no bump.
		default:
			return fail, nil, fmt.Errorf("%w: epoch %d of producer %d is stale (current %d)", ErrProducerFenced, expectedEpoch, expectedPID, cur.ProducerEpoch)
		}
	}
	if err := m.apply(next); err != nil {
		return fail, nil, err
	}
	return InitResult{ProducerID: next.ProducerID, ProducerEpoch: next.ProducerEpoch}, nil, nil
}

// lookup checks the producer id and epoch a client request names.
func (m *TxnMachine) lookup(txnID string, pid int64, epoch int16) (*TxnMetadata, error) {
	cur, ok := m.txns[txnID]
	if !ok || cur.ProducerID != pid {
		return nil, fmt.Errorf("%w: producer id %d, transactional id %q", ErrInvalidProducerIDMapping, pid, txnID)
	}
	if cur.ProducerEpoch != epoch {
		return nil, fmt.Errorf("%w: epoch %d of producer %d, current %d", ErrProducerFenced, epoch, pid, cur.ProducerEpoch)
	}
	return cur, nil
}

// AddPartitions serves AddPartitionsToTxn (client form, v0-v3).
func (m *TxnMachine) AddPartitions(txnID string, pid int64, epoch int16, parts []TopicPartition, nowMs int64) error {
	return m.addPartitions(txnID, pid, epoch, parts, TxnVersion0, nowMs)
}

func (m *TxnMachine) addPartitions(txnID string, pid int64, epoch int16, parts []TopicPartition, tv int8, nowMs int64) error {
	cur, err := m.lookup(txnID, pid, epoch)
	if err != nil {
		return err
	}
	switch cur.State {
	case TxnPrepareCommit, TxnPrepareAbort:
		return fmt.Errorf("%w: %q is completing a transaction", ErrConcurrentTransactions, txnID)
	case TxnOngoing:
		if !slices.ContainsFunc(parts, func(tp TopicPartition) bool { return !cur.hasPartition(tp) }) {
			return nil
		}
	}
	next := m.begin(cur, nowMs)
	next.ClientTxnVersion = tv
	next.Partitions = addPartitions(next.Partitions, parts)
	return m.apply(next)
}

// begin is Kafka's prepareAddPartitions: into Ongoing, starting the
// transaction clock when one was not open.
func (m *TxnMachine) begin(cur *TxnMetadata, nowMs int64) TxnMetadata {
	next := transition(cur, TxnOngoing, nowMs)
	if cur.State != TxnOngoing {
		next.StartMs = nowMs
		next.Partitions, next.Groups = nil, nil
	}
	return next
}

// AddOffsets serves AddOffsetsToTxn: the group joins the transaction (Kafka
// adds the group's __consumer_offsets partition).
func (m *TxnMachine) AddOffsets(txnID string, pid int64, epoch int16, group string, nowMs int64) error {
	return m.addOffsets(txnID, pid, epoch, group, TxnVersion0, nowMs)
}

func (m *TxnMachine) addOffsets(txnID string, pid int64, epoch int16, group string, tv int8, nowMs int64) error {
	cur, err := m.lookup(txnID, pid, epoch)
	if err != nil {
		return err
	}
	switch cur.State {
	case TxnPrepareCommit, TxnPrepareAbort:
		return fmt.Errorf("%w: %q is completing a transaction", ErrConcurrentTransactions, txnID)
	case TxnOngoing:
		if cur.hasGroup(group) {
			return nil
		}
	}
	next := m.begin(cur, nowMs)
	next.ClientTxnVersion = tv
	next.Groups = append(next.Groups, group)
	slices.Sort(next.Groups)
	next.Groups = slices.Compact(next.Groups)
	return m.apply(next)
}

// EndTxn serves EndTxn from a client. On success with a job, the commit or
// abort is decided and durable: write the job's markers, then call
// CompleteMarkers. A retry of an EndTxn that already completed succeeds
// with no job.
func (m *TxnMachine) EndTxn(txnID string, pid int64, epoch int16, commit bool, nowMs int64) (*MarkerJob, error) {
	cur, err := m.lookup(txnID, pid, epoch)
	if err != nil {
		return nil, err
	}
	invalid := fmt.Errorf("%w: %s requested while %q is %s", ErrInvalidTxnState, endName(commit), txnID, cur.State)
	switch cur.State {
	case TxnOngoing:
		state := TxnPrepareAbort
		if commit {
			state = TxnPrepareCommit
		}
		next := transition(cur, state, nowMs)
		next.ClientTxnVersion = TxnVersion0
		if err := m.apply(next); err != nil {
			return nil, err
		}
		return jobFor(m.txns[txnID]), nil
	case TxnCompleteCommit, TxnCompleteAbort:
		if commit == (cur.State == TxnCompleteCommit) {
			return nil, nil
		}
		return nil, invalid
	case TxnPrepareCommit, TxnPrepareAbort:
		if commit == (cur.State == TxnPrepareCommit) {
			return nil, fmt.Errorf("%w: %q is completing its %s", ErrConcurrentTransactions, txnID, endName(commit))
		}
		return nil, invalid
	default:
		return nil, invalid
	}
}

func endName(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}

// CompleteMarkers records that every marker of job is written and its
// groups' offsets completed: PrepareCommit/PrepareAbort becomes
// CompleteCommit/CompleteAbort and the partition set empties.
func (m *TxnMachine) CompleteMarkers(job *MarkerJob, nowMs int64) error {
	cur, ok := m.txns[job.TransactionalID]
	want := TxnPrepareAbort
	if job.Commit {
		want = TxnPrepareCommit
	}
	if !ok || cur.ProducerID != job.ProducerID || cur.ProducerEpoch != job.ProducerEpoch || cur.State != want {
		return fmt.Errorf("%w: markers of %q no longer match its state", ErrInvalidTxnState, job.TransactionalID)
	}
	state := TxnCompleteAbort
	if job.Commit {
		state = TxnCompleteCommit
	}
	next := transition(cur, state, nowMs)
	next.Partitions, next.Groups = nil, nil
	completeV2(&next)
	return m.apply(next)
}

// CheckTxnOffsetCommit checks a TxnOffsetCommit against the transaction:
// the producer must own the id at this epoch, the transaction be open and
// the group added with AddOffsetsToTxn.
func (m *TxnMachine) CheckTxnOffsetCommit(txnID string, pid int64, epoch int16, group string) error {
	cur, err := m.lookup(txnID, pid, epoch)
	if err != nil {
		if cur, ok := m.txns[txnID]; ok && cur.ProducerID == pid {
			// What the offsets partition's producer-state check answers.
			return fmt.Errorf("%w: epoch %d, current %d", ErrInvalidProducerEpoch, epoch, cur.ProducerEpoch)
		}
		return err
	}
	if cur.State != TxnOngoing || !cur.hasGroup(group) {
		return fmt.Errorf("%w: group %q is not in the open transaction of %q", ErrInvalidTxnState, group, txnID)
	}
	return nil
}

// CheckProduce is the check a transactional Produce gets (the KIP-890
// verification Kafka 3.6+ does through AddPartitionsToTxn v4): the
// partition must be in the producer's open transaction.
func (m *TxnMachine) CheckProduce(txnID string, pid int64, epoch int16, tp TopicPartition) error {
	cur, ok := m.txns[txnID]
	if !ok || cur.ProducerID != pid {
		return fmt.Errorf("%w: producer id %d, transactional id %q", ErrInvalidProducerIDMapping, pid, txnID)
	}
	if cur.ProducerEpoch != epoch {
		return fmt.Errorf("%w: epoch %d of producer %d, current %d", ErrInvalidProducerEpoch, epoch, pid, cur.ProducerEpoch)
	}
	if cur.State != TxnOngoing || !cur.hasPartition(tp) {
		return fmt.Errorf("%w: %s-%d is not in the open transaction of %q", ErrInvalidTxnState, tp.Topic, tp.Partition, txnID)
	}
	return nil
}

// TimedOut lists the open transactions past their timeout at nowMs,
// sorted.
func (m *TxnMachine) TimedOut(nowMs int64) []string {
	var out []string
	for id, md := range m.txns {
		if md.State == TxnOngoing && md.StartMs+int64(md.TimeoutMs) < nowMs {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// AbortTimedOut aborts an open transaction past its timeout, as Kafka's
// abortTimedOutTransactions: the epoch is bumped (the producer is fenced)
// and the abort decided. The job's markers must then be written.
func (m *TxnMachine) AbortTimedOut(txnID string, nowMs int64) (*MarkerJob, error) {
	cur, ok := m.txns[txnID]
	if !ok || cur.State != TxnOngoing || cur.StartMs+int64(cur.TimeoutMs) >= nowMs {
		return nil, nil
	}
	next := transition(cur, TxnPrepareAbort, nowMs)
	next.ProducerEpoch++
	next.LastProducerEpoch = noProducerEpoch
	if err := m.apply(next); err != nil {
		return nil, err
	}
	return jobFor(m.txns[txnID]), nil
}

// ExpireIDs removes the transactional ids idle (no transaction open or
// completing) for transactional.id.expiration.ms, as Kafka's
// removeExpiredTransactionalIds: a Dead tombstone is persisted. It returns
// the removed ids, sorted.
func (m *TxnMachine) ExpireIDs(nowMs int64) ([]string, error) {
	var ids []string
	for id, md := range m.txns {
		if m.expired(md, nowMs) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		next := transition(m.txns[id], TxnDead, nowMs)
		if err := m.apply(next); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

func (m *TxnMachine) expired(md *TxnMetadata, nowMs int64) bool {
	switch md.State {
	case TxnEmpty, TxnCompleteCommit, TxnCompleteAbort:
		return md.ProducerEpoch != noProducerEpoch && md.LastUpdateMs+m.cfg.IDExpirationMs <= nowMs
	}
	return false
}

// NextDeadline is the earliest time a timeout or an expiration is due.
func (m *TxnMachine) NextDeadline() (int64, bool) {
	next, ok := int64(0), false
	consider := func(t int64) {
		if !ok || t < next {
			next, ok = t, true
		}
	}
	for _, md := range m.txns {
		switch md.State {
		case TxnOngoing:
			consider(md.StartMs + int64(md.TimeoutMs) + 1)
		case TxnEmpty, TxnCompleteCommit, TxnCompleteAbort:
			if md.ProducerEpoch != noProducerEpoch {
				consider(md.LastUpdateMs + m.cfg.IDExpirationMs)
			}
		}
	}
	return next, ok
}

// PendingMarkers lists the decided transactions whose markers are not all
// written (after a restart, or a failed marker write), sorted by id.
func (m *TxnMachine) PendingMarkers() []*MarkerJob {
	var out []*MarkerJob
	for _, md := range m.txns {
		if md.State == TxnPrepareCommit || md.State == TxnPrepareAbort {
			out = append(out, jobFor(md))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out
}

// Get returns a copy of a transactional id's state (not ids created by an
// InitProducerId that has not completed).
func (m *TxnMachine) Get(txnID string) (TxnMetadata, bool) {
	md, ok := m.txns[txnID]
	if !ok || md.ProducerEpoch == noProducerEpoch {
		return TxnMetadata{}, false
	}
	return md.clone(), true
}

// Len is the number of transactional ids held.
func (m *TxnMachine) Len() int { return len(m.txns) }

// All returns copies of every state, sorted by transactional id.
func (m *TxnMachine) All() []TxnMetadata {
	out := make([]TxnMetadata, 0, len(m.txns))
	for _, md := range m.txns {
		if md.ProducerEpoch != noProducerEpoch {
			out = append(out, md.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out
}
