package main

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

const (
	topicIdem = "soak-idem" // idempotent producers; plain consumers and the group read it
	topicTxn  = "soak-txn"  // transactional producers; a read_committed consumer reads it
	groupName = "soak-group"

	idemPartitions = 4
	txnPartitions  = 3
)

// ledger is what the clients were told: every record the broker
// acknowledged, every transaction's outcome, every group commit it
// accepted. The final read is checked against it.
type ledger struct {
	mu sync.Mutex // guards the maps below

	idemAcked  map[string]struct{} // produce acknowledged: must be present exactly once
	idemFailed map[string]struct{} // produce failed: present at most once

	txnCommitted map[string]struct{} // EndTxn(commit) acknowledged: present exactly once
	txnAborted   map[string]struct{} // commit never requested: never visible
	txnUnknown   map[string][]string // txn id -> its records: commit unconfirmed, all or none
	liveTxnSeen  map[string]int      // keys the live read_committed consumer saw
	commitAcked  map[int32]int64     // group: highest offset commit the broker acknowledged
	commitTried  map[int32]int64     // group: highest offset commit attempted
	violations   []string            // found while running
	notes        map[string]int      // counted client-side errors, by text
	txnOutcomes  map[string]int      // committed / aborted / unknown
	groupResumes map[string]int      // how assignments resumed: at-commit / behind / ...

	idemProduced   atomic.Int64
	txnProduced    atomic.Int64
	plainConsumed  atomic.Int64
	groupConsumed  atomic.Int64
	liveTxnRead    atomic.Int64
	groupCommits   atomic.Int64
	groupRebalance atomic.Int64
	churns         atomic.Int64
}

func newLedger() *ledger {
	return &ledger{
		idemAcked: map[string]struct{}{}, idemFailed: map[string]struct{}{},
		txnCommitted: map[string]struct{}{}, txnAborted: map[string]struct{}{},
		txnUnknown: map[string][]string{}, liveTxnSeen: map[string]int{},
		commitAcked: map[int32]int64{}, commitTried: map[int32]int64{},
		notes: map[string]int{}, txnOutcomes: map[string]int{}, groupResumes: map[string]int{},
	}
}

func (l *ledger) violation(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	if len(l.violations) < 200 {
		l.violations = append(l.violations, msg)
	} else if len(l.violations) == 200 {
		l.violations = append(l.violations, "… further violations not listed")
	}
}

// note counts a client-side error that is expected around restarts.
func (l *ledger) note(what string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.notes[fmt.Sprintf("%s: %v", what, err)]++
}

func (l *ledger) idemResult(key string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.idemAcked[key] = struct{}{}
	} else {
		l.idemFailed[key] = struct{}{}
		l.notes[fmt.Sprintf("idempotent produce: %v", err)]++
	}
}

type txnOutcome int

const (
	txnCommitted txnOutcome = 1
	txnAborted   txnOutcome = 2
	txnUnknown   txnOutcome = 3
)

func (l *ledger) txnResult(txn string, keys []string, outcome txnOutcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch outcome {
	case txnCommitted:
		l.txnOutcomes["committed"]++
		for _, k := range keys {
			l.txnCommitted[k] = struct{}{}
		}
	case txnAborted:
		l.txnOutcomes["aborted"]++
		for _, k := range keys {
			l.txnAborted[k] = struct{}{}
		}
	case txnUnknown:
		l.txnOutcomes["unknown (commit unconfirmed)"]++
		l.txnUnknown[txn] = keys
	}
}

func (l *ledger) liveTxnRecord(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.liveTxnSeen[key]++
}

func (l *ledger) commitAttempt(p int32, offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.commitTried[p] = max(l.commitTried[p], offset)
}

func (l *ledger) commitAck(p int32, offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.commitAcked[p] = max(l.commitAcked[p], offset)
}

// resumed checks where a group member started a newly assigned partition:
// not before the highest acknowledged commit (a lost or regressed commit)
// and not after the highest attempted one (skipped records).
func (l *ledger) resumed(member string, p int32, offset int64) {
	l.mu.Lock()
	acked, tried := l.commitAcked[p], l.commitTried[p]
	switch {
	case offset < acked:
		l.groupResumes["behind an acknowledged commit"]++
	case offset > tried:
		l.groupResumes["past every commit"]++
	case offset == acked:
		l.groupResumes["at the acknowledged commit"]++
	default:
		l.groupResumes["at an unconfirmed commit"]++
	}
	l.mu.Unlock()
	if offset < acked {
		l.violation("group: %s resumed partition %d at %d, behind the acknowledged commit %d", member, p, offset, acked)
	}
	if offset > tried {
		l.violation("group: %s resumed partition %d at %d, past every commit (highest tried %d): records skipped", member, p, offset, tried)
	}
}

func (l *ledger) sortedNotes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, n := range l.notes {
		out = append(out, fmt.Sprintf("%6d× %s", n, k))
	}
	sort.Strings(out)
	return out
}
