package coordinator

import (
	"errors"
	"fmt"
)

// The transaction coordinator's transaction version 2 entry points
// (KIP-890 part 2); the rules are TxnMachine's (txn_tv2.go).

// EndTxnV2 serves EndTxn v5+ (TxnMachine.EndTxnV2): as EndTxn, the
// decision is durable and its markers written before it returns, and the
// answer is the producer id and epoch the client goes on with. noBump
// removes the epoch bump (the broker's negative-control knob).
func (t *Transactions) EndTxnV2(txnID string, pid int64, epoch int16, commit, noBump bool) (EndResult, error) {
	var res EndResult
	err := t.endTxn(txnID, pid, epoch, commit, func(now int64) (*MarkerJob, error) {
		r, job, err := t.machine.EndTxnV2(txnID, pid, epoch, commit, noBump, now)
		res = r
		return job, err
	})
	if err != nil {
		return noEndResult, err
	}
	t.poke() // an empty abort or a new epoch: the id's expiration moved
	return res, nil
}

// AddPartitionsImplicit serves the broker-to-broker AddPartitionsToTxn v5
// (not verify-only): partitions join the transaction as a Produce v12
// would add them.
func (t *Transactions) AddPartitionsImplicit(txnID string, pid int64, epoch int16, parts []TopicPartition) error {
	t.mu.Lock()
	err := t.machine.AddPartitionsImplicit(txnID, pid, epoch, parts, t.nowMs())
	after := t.pointLocked(txnID)
	t.mu.Unlock()
	t.poke()
	if err != nil {
		return err
	}
	return t.durable(after)
}

// VerifyPartitions serves the verify-only AddPartitionsToTxn v4+.
func (t *Transactions) VerifyPartitions(txnID string, pid int64, epoch int16, parts []TopicPartition) (map[TopicPartition]error, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.machine.VerifyPartitions(txnID, pid, epoch, parts)
}

// AddAndVerifyProduce is VerifyProduce for a Produce v12+ (transaction
// version 2): a partition not yet in the producer's transaction is added
// first, durably, as Kafka's AddPartitionsToTxnManager adds it before the
// append (so no data can land outside a transaction the coordinator
// knows of, even across a crash). The check and the append happen under
// the same shared decideMu, so no decision can come between them. On
// success the caller must call release once its append is done.
//
// The wait for the add's fsync is not under decideMu: held shared across
// that wait, it would make every EndTxn (decideMu exclusive) wait for the
// fsyncs of other producers' adds, and every Produce behind that EndTxn
// for its decision. So the check runs under decideMu, the add is made
// durable without it, and decideMu is taken shared again: if no exclusive holder came in
// between (decideGen unchanged), nothing was decided, fenced or aborted
// since the check, so the check still holds and the add it relied on is
// durable; otherwise all of it runs again. After maxOptimisticAdds such
// rounds the wait is made under decideMu, so a stream of decisions cannot
// keep a Produce from ever appending.
func (t *Transactions) AddAndVerifyProduce(txnID string, pid int64, epoch int16, tp TopicPartition) (release func(), err error) {
	add := func() (syncPoint, error) { return t.addForProduce(txnID, pid, epoch, tp) }
	if err := t.addDurably(add, t.opts.private.afterProduceAddDurable); err != nil {
		return func() {}, err
	}
	return t.decideMu.RUnlock, nil
}

// addDurably is the optimistic add shared by AddAndVerifyProduce and
// TxnOffsetCommitV2: add (an implicit add and its check) runs under
// decideMu held shared, what it returns is made durable without decideMu,
// and decideMu is taken shared again; if an exclusive holder came in
// between (decideGen changed), all of it runs again, and from round
// maxOptimisticAdds on (or with the durableUnderDecideMu knob) the wait is
// made holding decideMu. It returns with decideMu held shared, for the
// caller to release after its append, or with an error and decideMu
// released. afterDurable, if set, is a test hook run after an optimistic
// round's fsync.
func (t *Transactions) addDurably(add func() (syncPoint, error), afterDurable func()) error {
	for round := 0; ; round++ {
		holdAcross := round >= maxOptimisticAdds || t.opts.private.durableUnderDecideMu
		t.decideMu.RLock()
		gen := t.decideGen
		after, err := add()
		if err == nil && holdAcross {
			err = t.durable(after)
			if err == nil {
				return nil
			}
		}
		if err != nil {
			t.decideMu.RUnlock()
			return err
		}
		t.decideMu.RUnlock()
		if err := t.durable(after); err != nil {
			return err
		}
		if afterDurable != nil {
			afterDurable()
		}
		t.decideMu.RLock()
		if t.decideGen != gen && !t.opts.private.skipDecideGenCheck {
			t.decideMu.RUnlock()
			continue
		}
		return nil
	}
}

// maxOptimisticAdds bounds addDurably's rounds that wait for the add's
// fsync without decideMu.
const maxOptimisticAdds = 3

// addForProduce adds tp to the producer's transaction if it is not there
// yet and checks the Produce against it; it returns what the answer must
// wait for. decideMu held (shared).
func (t *Transactions) addForProduce(txnID string, pid int64, epoch int16, tp TopicPartition) (syncPoint, error) {
	t.mu.Lock()
	now := t.nowMs()
	added := false
	var err error
	if t.machine.needsAdd(txnID, pid, epoch, tp) {
		err = t.machine.AddPartitionsImplicit(txnID, pid, epoch, []TopicPartition{tp}, now)
		added = err == nil
	}
	if err == nil {
		err = t.machine.CheckProduce(txnID, pid, epoch, tp)
		if errors.Is(err, ErrInvalidTxnState) {
			// Only a decision being carried out leaves a version 2
			// producer's partition outside an open transaction here.
			err = fmt.Errorf("%w: %v", ErrConcurrentTransactions, err)
		}
	}
	after := t.pointLocked(txnID)
	t.mu.Unlock()
	if added {
		t.poke() // a new transaction's timeout may be the next deadline
	}
	return after, err
}

// TxnOffsetCommitV2 is TxnOffsetCommit for v5+: the group joins the
// producer's transaction itself (no AddOffsetsToTxn), durably, before the
// offsets are staged. As in AddAndVerifyProduce, the join and the check
// are made under decideMu (shared), the join's fsync is waited for
// without it, and decideMu is taken again: if no exclusive holder came in
// between (decideGen), the check still holds and the offsets are staged
// under the same hold (stageAndWait: their own fsync is waited for
// without it); otherwise all of it runs again, and after
// maxOptimisticAdds rounds the join's fsync is waited for holding
// decideMu. So the offsets never follow a decision of their transaction,
// nor land for a fenced or aborted producer.
func (t *Transactions) TxnOffsetCommitV2(txnID string, pid int64, epoch int16, group string, stage StageFunc) error {
	add := func() (syncPoint, error) { return t.addForOffsets(txnID, pid, epoch, group) }
	if err := t.addDurably(add, t.opts.private.afterOffsetsAddDurable); err != nil {
		return err
	}
	return t.stageAndWait(stage, t.opts.private.durableUnderDecideMu)
}

// addForOffsets joins group to the producer's transaction if it is not
// there yet and checks the TxnOffsetCommit against it; it returns what
// the staging must wait for. decideMu held (shared).
func (t *Transactions) addForOffsets(txnID string, pid int64, epoch int16, group string) (syncPoint, error) {
	t.mu.Lock()
	err := t.machine.AddOffsetsImplicit(txnID, pid, epoch, group, t.nowMs())
	if err == nil {
		err = t.machine.CheckTxnOffsetCommit(txnID, pid, epoch, group)
	} else if cur, ok := t.machine.txns[txnID]; ok && cur.ProducerID == pid && errors.Is(err, ErrProducerFenced) {
		// What the offsets partition's producer-state check answers.
		err = fmt.Errorf("%w: %v", ErrInvalidProducerEpoch, err)
	}
	after := t.pointLocked(txnID)
	t.mu.Unlock()
	t.poke()
	return after, err
}
