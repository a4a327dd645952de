package mirror

import (
	"fmt"
	"time"

	"github.com/minibroker/minibroker/internal/partition"
)

// The core: one mirrored partition's lifecycle as a pure state machine,
// after raft's RawNode/Ready split and coordinator/group_core.go. step
// takes the partition's whole record and an event and answers the next
// record and the effects the driver must apply, in order, as values. No
// goroutines, no I/O, no clock (the driver passes the time in the event):
// the same record and event always give the same answer, so the scripts of
// testdata/core/*.txt test every transition and every crash point by
// running events and printing effects (core_test.go).
//
//	   start (no record, STOPPED, FAILED)
//	            │
//	            ▼         prepared
//	       PREPARING ─────────────────▶ MIRRORING ◀──┐
//	        │  ▲  │ pause (stays:                │  │ resume
//	        │  │  │ the fetcher remembers        │  │
//	        │  │  │ it; resume stays and   pause ▼  │
//	        │  │  │ cancels it)                     │
//	        │  │  └─────────────────────────────▶ PAUSED
//	        │  │ restart, retry                 (prepared while
//	        │  │ (new source settings;           paused: PREPARING
//	  fail  │  │  a retriable failure's          → PAUSED)
//	        │  │  backoff over)
//	        ▼  │
//	       FAILED ◀──── fail ──── MIRRORING, PAUSED
//	        │
//	        │ stop (also from PREPARING, MIRRORING, PAUSED, and
//	        ▼       STOPPING again: a failover resumed)
//	       STOPPING ──── stopped ────▶ STOPPED (writable; start again
//	                                            to mirror anew)
//
// STOPPING is a sequence of effects and the events that report them done
// (in this order: what a step decided is persisted before it acts, so a
// crash at any point resumes at the step it was in):
//
//	stop    → persist STOPPING, disarm retry, stop fetcher (and wait),
//	          find the local LSO
//	lso     → persist the LSO as the last mirrored offset (and the offsets
//	          past it as lost), truncate to it, clamp group offsets to it
//	clamped → write the barrier at the last mirrored offset (fsynced;
//	          never a second one: one already there is recognised)
//	stopped → persist STOPPED with the barrier's offset, set writable
//
// That is the default failover mode, truncate-to-lso. In the
// mode abort-open-transactions (mirror.failover.mode, KIP-1279's June 2026
// revision), recorded on the record by the stop, nothing is cut: lso
// persists the log end as the last mirrored offset and the number of
// transactions open there, and clamped writes one ABORT marker for each,
// at the offsets after the last mirrored one, before the barrier (one
// effect a marker: each recognises a marker already there, so a crash
// between them or before the barrier writes none twice):
//
//	lso     → persist the log end as the last mirrored offset and the open
//	          transactions (nothing lost), clamp group offsets to it
//	clamped → write an ABORT marker at last+i for each open transaction i,
//	          then the barrier at last+open
//
// and recover (the broker starting) resumes a STOPPING record at the
// first step its record does not say is done.
//
// The rules the order keeps, each with a negative control in
// core_test.go: a record is persisted before the effects that depend on
// it (what a crash leaves on disk is never behind what the world saw: a
// partition made writable is STOPPED on disk, the offsets cut are counted
// on disk before anything else happens); the only effect before the
// persist is making a partition read-only (a restriction, which the driver
// undoes from the old record when the persist fails); the barrier comes
// after the truncation to the LSO, or after the ABORT markers (else the
// truncation cuts it, or an open transaction's batches are left below it
// unaborted, and a local producer that draws a colliding id is judged
// against the source's producer).
//
// The partition's mode is derived from the state (modeOf), never kept by
// hand: read-only in every state but STOPPED and none.

// Events the lifecycle table does not have: they report effects done,
// or the broker starting.
const (
	EvRecover    Event = "recover"     // the broker started: resume what the record says
	EvLSO        Event = "lso"         // STOPPING found the local LSO (End) and what is past it (Lost)
	EvClamped    Event = "clamped"     // STOPPING lowered the group offsets past the cut
	EvStepFailed Event = "step-failed" // a STOPPING step failed (a disk error)
	EvRetryDue   Event = "retry"       // a retriable failure's backoff is over
	EvFetchOK    Event = "fetch-ok"    // a fetch succeeded after a retry: the streak ends
	// EvSourceEpoch: the source answered the partition's leader epoch
	// (Epoch), on a Metadata answer of the fetcher or the group sync.
	EvSourceEpoch Event = "source-epoch"
)

// failKind is why a partition fails, which decides how it leaves FAILED.
type failKind int

const (
	failSecurity        failKind = iota // the source's settings: restarted when they change
	failTruncateRefused                 // the operator's to decide (start --allow-truncate)
	failRetriable                       // retried with backoff (retry.go)
	failIdentity                        // another cluster or a recreated topic: never retried
)

// coreEvent is an event with what it carries.
type coreEvent struct {
	Kind Event
	// Now is the driver's clock (unix ms): the core reads no clock.
	Now int64
	// Approval is the start's permission to cut local data (start).
	Approval *truncateApproval
	// Paused: a pause asked while PREPARING (prepared).
	Paused bool
	// Reason and Fail: why (fail, step-failed).
	Reason string
	Fail   failKind
	// Retry is the mirror's retry policy (fail).
	Retry retryPolicy
	// End and Lost: the local LSO and the offsets past it (lso);
	// Offset: where the barrier is (stopped).
	End, Lost, Offset int64
	// Open is how many producers have a transaction open in the local
	// log (lso).
	Open int64
	// Mode is the mirror's failover mode (stop).
	Mode FailoverMode
	// Epoch is the source's leader epoch (source-epoch).
	Epoch int32
}

// retryPolicy is the part of the settings a retriable failure reads.
type retryPolicy struct {
	Initial, Max time.Duration
	MaxAttempts  int
}

// effectKind is what the driver does.
type effectKind int

const (
	effPersist      effectKind = iota // save the record (with every other change of the step), fsynced
	effSetMode                        // set the partition's mode (Mode)
	effStartFetcher                   // start the fetcher (Paused; Retried: started by a retry)
	effPauseFetcher                   // pause or resume the running fetcher (Paused)
	effStopFetcher                    // stop the fetcher and wait for it (a fetcher stopping itself does not wait)
	effFindLSO                        // read the local LSO and log end; report lso
	effTruncate                       // cut the log to At (nothing when it ends there)
	effClampGroups                    // lower group offsets past At to At; report clamped
	effWriteBarrier                   // the barrier at At, fsynced, unless one is there (cutting the log to At first); report stopped
	effArmRetry                       // arm the retry timer for At (unix ms)
	effDisarmRetry                    // disarm the retry timer
	effAbortTxn                       // an ABORT marker at At for the earliest transaction still open, unless one is there
	effRaiseEpoch                     // raise the partition's leader epoch to Epoch (never lowers it)
)

var effectNames = [...]string{"persist", "set-mode", "start-fetcher", "pause-fetcher", "stop-fetcher",
	"find-lso", "truncate", "clamp-groups", "write-barrier", "arm-retry", "disarm-retry", "abort-txn", "raise-epoch"}

func (k effectKind) String() string { return effectNames[k] }

// effect is one thing the driver does, in the order step lists them.
type effect struct {
	Kind    effectKind
	Mode    partition.Mode
	Paused  bool
	Retried bool
	At      int64
	// NewEpoch: the failover's first write of its own (the first ABORT
	// marker) starts a leader epoch above every one in the log.
	NewEpoch bool
	Epoch    int32
}

// modeOf is the partition's mode in a state: writable only when the mirror
// has no say (no record) or has let go (STOPPED).
func modeOf(s State) partition.Mode {
	if s == NoState || s == Stopped {
		return partition.Writable
	}
	return partition.Mirrored
}

// setMode sets p's mode as state derives it (owned by the mirror named
// when read-only).
func setMode(p *partition.Partition, state State, mirror string) {
	applyMode(p, modeOf(state), mirror)
}

func applyMode(p *partition.Partition, mode partition.Mode, mirror string) {
	if mode == partition.Writable {
		mirror = ""
	}
	p.SetMode(mode, mirror)
}

// step is the core: the record after ev, and the effects to apply. A
// refused event answers an error wrapping ErrRefusedTransition, rec
// unchanged and no effects. rec is a value: step changes nothing.
func step(rec partitionRecord, ev coreEvent) (partitionRecord, []effect, error) {
	return stepWith(knobs{}, rec, ev)
}

// stepWith is step with the negative controls' knobs (zero in production).
func stepWith(kn knobs, rec partitionRecord, ev coreEvent) (partitionRecord, []effect, error) {
	next, effs, err := stepRules(kn, rec, ev)
	if kn.persistLast { // negative control: every persist after the rest
		var acts, persists []effect
		for _, e := range effs {
			if e.Kind == effPersist {
				persists = append(persists, e)
			} else {
				acts = append(acts, e)
			}
		}
		effs = append(acts, persists...)
	}
	return next, effs, err
}

func stepRules(kn knobs, rec partitionRecord, ev coreEvent) (partitionRecord, []effect, error) {
	from := rec.State
	refused := func() (partitionRecord, []effect, error) {
		_, err := transition(from, ev.Kind)
		if err == nil {
			name := string(from)
			if from == NoState {
				name = "(none)"
			}
			err = fmt.Errorf("%w: %s in %s", ErrRefusedTransition, ev.Kind, name)
		}
		return rec, nil, err
	}
	persist := effect{Kind: effPersist}
	switch ev.Kind {
	case EvRecover:
		// The leader epoch first: the partition opened at its log's
		// latest epoch, which can be below the source's the record kept.
		var effs []effect
		if rec.SourceLeaderEpoch > 0 {
			effs = append(effs, effect{Kind: effRaiseEpoch, Epoch: rec.SourceLeaderEpoch})
		}
		switch {
		case from == Stopping:
			effs = append(append(effs, effect{Kind: effSetMode, Mode: partition.Mirrored}), stoppingNext(rec)...)
		case from.active():
			effs = append(effs, effect{Kind: effSetMode, Mode: partition.Mirrored}, effect{Kind: effStartFetcher, Paused: from == Paused})
		case from == Failed && rec.Retriable && rec.RetryAt > 0:
			effs = append(effs, effect{Kind: effSetMode, Mode: partition.Mirrored}, effect{Kind: effArmRetry, At: rec.RetryAt})
		default:
			effs = append(effs, effect{Kind: effSetMode, Mode: modeOf(from)})
		}
		return rec, effs, nil
	case EvSourceEpoch:
		// KIP-1279's leader-epoch invariant: this node's leader epoch is
		// never below the source's, or a consumer validating an offset
		// committed at the source's epoch (KIP-320) finds an epoch this
		// node does not know. Persisted before the partition's epoch is
		// raised, so a restart raises it again before anything is served
		// (recover); only while the source is followed, and only upwards.
		if !from.active() || ev.Epoch <= rec.SourceLeaderEpoch {
			return rec, nil, nil
		}
		rec.SourceLeaderEpoch = ev.Epoch
		return rec, []effect{persist, {Kind: effRaiseEpoch, Epoch: ev.Epoch}}, nil
	case EvLSO:
		if from != Stopping || rec.LastMirroredOffset >= 0 {
			return refused()
		}
		// Persisted before the cut: a crash after it cuts again to the
		// same offset, and what was lost stays counted (cutting first
		// and persisting after would count 0 lost
		// after a crash between the two).
		rec.LastMirroredOffset, rec.LostAtFailover = ev.End, ev.Lost
		if rec.FailoverMode == FailoverAbortOpenTxns {
			// Nothing is cut: the open transactions are aborted after
			// the log end, before the barrier.
			rec.LastMirroredOffset, rec.LostAtFailover, rec.AbortedTxns = ev.End+ev.Lost, 0, ev.Open
		}
		end := rec.LastMirroredOffset
		return rec, []effect{persist, {Kind: effTruncate, At: end}, {Kind: effClampGroups, At: end}}, nil
	case EvClamped:
		if from != Stopping || rec.LastMirroredOffset < 0 {
			return refused()
		}
		if kn.barrierFirst && rec.BarrierOffset >= 0 { // negative control: written already
			rec.State = Stopped
			return rec, []effect{persist, {Kind: effSetMode, Mode: partition.Writable}}, nil
		}
		return rec, barrierEffects(kn, rec), nil
	case EvStepFailed:
		if from != Stopping {
			return refused()
		}
		rec.Reason = stepFailed(fmt.Errorf("%s", ev.Reason))
		return rec, []effect{persist}, nil
	case EvRetryDue:
		if from != Failed || !rec.Retriable || rec.RetryAt == 0 {
			return refused()
		}
		to, _ := transition(from, EvRestart)
		rec.State, rec.RetryAt, rec.Retriable = to, 0, false
		rec.Retries++
		rec.FailStreak++
		return rec, []effect{persist, {Kind: effStartFetcher, Retried: true}}, nil
	case EvFetchOK:
		if rec.FailStreak == 0 {
			return rec, nil, nil
		}
		rec.FailStreak = 0
		return rec, []effect{persist}, nil
	}
	to, err := transition(from, ev.Kind)
	if err != nil {
		return rec, nil, err
	}
	switch ev.Kind {
	case EvStart:
		// A new mirroring session: a record of its own.
		// The source's leader epoch stays: the partition's epoch was raised
		// to it and never goes back.
		rec = partitionRecord{State: to, LastMirroredOffset: -1, BarrierOffset: -1, AllowTruncate: ev.Approval,
			SourceLeaderEpoch: rec.SourceLeaderEpoch}
		return rec, []effect{{Kind: effSetMode, Mode: partition.Mirrored}, persist, {Kind: effDisarmRetry},
			{Kind: effStartFetcher}}, nil
	case EvPrepared:
		if ev.Paused {
			to, _ = transition(to, EvPause)
		}
		rec.State, rec.AllowTruncate = to, nil
		return rec, []effect{persist}, nil
	case EvPause, EvResume:
		paused := ev.Kind == EvPause
		if to == from { // PREPARING: the fetcher remembers it
			return rec, []effect{{Kind: effPauseFetcher, Paused: paused}}, nil
		}
		rec.State = to
		return rec, []effect{persist, {Kind: effPauseFetcher, Paused: paused}}, nil
	case EvFail:
		rec.State, rec.Reason, rec.AllowTruncate = to, ev.Reason, nil
		rec.SecurityFailure = ev.Fail == failSecurity
		rec.Retriable, rec.RetryAt = ev.Fail == failRetriable, 0
		effs := []effect{persist, {Kind: effStopFetcher}}
		if ev.Fail == failRetriable {
			if rec.FailStreak < ev.Retry.MaxAttempts {
				rec.RetryAt = ev.Now + retryBackoffOf(ev.Retry, rec.FailStreak+1).Milliseconds()
				effs = append(effs, effect{Kind: effArmRetry, At: rec.RetryAt})
			} else {
				rec.Reason += fmt.Sprintf("; not retried again after %d retries in a row (%s)", rec.FailStreak, SettingFailedRetryMaxAttempts)
			}
		}
		return rec, effs, nil
	case EvRestart:
		rec.State, rec.Reason, rec.SecurityFailure = to, "", false
		return rec, []effect{persist, {Kind: effStartFetcher}}, nil
	case EvStop:
		if from != Stopping {
			rec.Retriable, rec.RetryAt, rec.AllowTruncate = false, 0, nil
			// The mode is the stop's: a failover resumed keeps it,
			// whatever the setting says meanwhile.
			rec.FailoverMode = ev.Mode
			if ev.Mode == FailoverTruncateToLSO {
				rec.FailoverMode = "" // the default, as records before the setting had it
			}
		}
		// A failed step's reason goes too: the steps run again.
		rec.State, rec.Reason, rec.SecurityFailure = to, "", false
		return rec, append([]effect{persist}, stopEffects(kn, rec)...), nil
	case EvStopped:
		if kn.barrierFirst && rec.LastMirroredOffset < 0 {
			// Negative control: the barrier is recorded, then the cut.
			rec.BarrierOffset = ev.Offset
			return rec, []effect{persist, {Kind: effFindLSO}}, nil
		}
		want := rec.LastMirroredOffset + rec.AbortedTxns
		if kn.barrierBeforeAborts {
			want = rec.LastMirroredOffset // negative control: the barrier before the markers
		}
		if rec.LastMirroredOffset < 0 || ev.Offset != want {
			// The barrier sits at the last mirrored offset (after the
			// ABORT markers), and only once that offset is persisted.
			return rec, nil, fmt.Errorf("%w: stopped at %d in STOPPING with last mirrored offset %d and %d transactions aborted",
				ErrRefusedTransition, ev.Offset, rec.LastMirroredOffset, rec.AbortedTxns)
		}
		rec.State, rec.BarrierOffset, rec.Reason = to, ev.Offset, ""
		return rec, []effect{persist, {Kind: effSetMode, Mode: modeOf(to)}}, nil
	}
	return refused()
}

// stopEffects are a stop's effects after its persist: the fetcher goes,
// then the first step rec does not say is done. The driver recomputes
// them from the record when its turn comes (one failover runs at a time:
// an earlier one may have moved the record on meanwhile).
func stopEffects(kn knobs, rec partitionRecord) []effect {
	effs := []effect{{Kind: effDisarmRetry}, {Kind: effStopFetcher}}
	if kn.barrierFirst && rec.LastMirroredOffset < 0 && rec.BarrierOffset < 0 {
		// Negative control: the barrier at the log end, before the cut.
		return append(effs, effect{Kind: effWriteBarrier, At: -1})
	}
	return append(effs, stoppingNext(rec)...)
}

// stoppingNext is the first STOPPING step rec does not say is done.
func stoppingNext(rec partitionRecord) []effect {
	if rec.LastMirroredOffset < 0 {
		return []effect{{Kind: effFindLSO}}
	}
	// The clamp is idempotent, and the barrier's effect recognises a
	// barrier at the last mirrored offset, else cuts the log to it before
	// writing one (a crash came before the cut, or after the barrier's
	// write and before STOPPED was persisted): they run again. A cut
	// here would take a barrier written already, and write a second.
	return []effect{{Kind: effClampGroups, At: rec.LastMirroredOffset}}
}

// barrierEffects are the effects after the clamp: the ABORT markers of
// the open transactions (abort-open-transactions), then the barrier.
func barrierEffects(kn knobs, rec partitionRecord) []effect {
	var effs []effect
	for i := range rec.AbortedTxns {
		effs = append(effs, effect{Kind: effAbortTxn, At: rec.LastMirroredOffset + i, NewEpoch: i == 0})
	}
	barrier := effect{Kind: effWriteBarrier, At: rec.LastMirroredOffset + rec.AbortedTxns}
	if kn.barrierBeforeAborts && len(effs) > 0 {
		// Negative control: the barrier first, the markers after it.
		barrier.At = rec.LastMirroredOffset
		for i := range effs {
			effs[i].At++
		}
		return append([]effect{barrier}, effs...)
	}
	return append(effs, barrier)
}

// retryBackoffOf is the wait before retry number streak (1-based) of a
// consecutive run: initial·2^(streak-1), at most max.
func retryBackoffOf(p retryPolicy, streak int) time.Duration {
	d := p.Initial
	for i := 1; i < streak && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}
