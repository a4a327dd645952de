package mirror

import (
	"errors"
	"fmt"
)

// The mirror lifecycle of one partition, as a pure transition function:
// state + event → next state, or an error naming the refused transition.
// No goroutines, no I/O, no clock (as coordinator/group_core.go and raft's
// RawNode): the Manager, its fetchers and STOPPING change a partition's
// state only through transition, and persist the result in the state log.
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
//	        │  │ restart                        (prepared while
//	        │  │ (new source settings)           paused: PREPARING
//	  fail  │  │                                 → MIRRORING → PAUSED)
//	        ▼  │
//	       FAILED ◀──── fail ──── MIRRORING, PAUSED
//	        │
//	        │ stop (also from PREPARING, MIRRORING, PAUSED, and
//	        ▼       STOPPING again: a failover resumed after a crash)
//	       STOPPING ──── stopped ────▶ STOPPED (writable; start again
//	                                            to mirror anew)
//
// Every other pair is refused. Callers rely on refusals: a fetcher that
// finishes PREPARING after a stop began, or fails after it, changes
// nothing, because prepared and fail are refused in STOPPING.

// Event is what happens to a mirrored partition.
type Event string

const (
	EvStart    Event = "start"    // mirror start selects the partition
	EvPrepared Event = "prepared" // the fetcher aligned the local log with the source
	EvPause    Event = "pause"
	EvResume   Event = "resume"
	EvFail     Event = "fail"    // the source's settings cannot work (client, credentials, certificate)
	EvRestart  Event = "restart" // the source's settings were replaced after a failure
	EvStop     Event = "stop"    // failover begins (persisted before any log is touched)
	EvStopped  Event = "stopped" // the STOPPING steps are done: writable
)

// NoState is the state of a partition the mirror has no record of.
const NoState State = ""

// ErrRefusedTransition is wrapped by every refusal of transition.
var ErrRefusedTransition = errors.New("mirror: refused transition")

// transitions lists, per event, the states it applies in and the state it
// leads to.
var transitions = map[Event]map[State]State{
	EvStart:    {NoState: Preparing, Stopped: Preparing, Failed: Preparing},
	EvPrepared: {Preparing: Mirroring},
	EvPause:    {Preparing: Preparing, Mirroring: Paused},
	EvResume:   {Paused: Mirroring, Preparing: Preparing},
	EvFail:     {Preparing: Failed, Mirroring: Failed, Paused: Failed},
	EvRestart:  {Failed: Preparing},
	EvStop:     {Preparing: Stopping, Mirroring: Stopping, Paused: Stopping, Failed: Stopping, Stopping: Stopping},
	EvStopped:  {Stopping: Stopped},
}

// transition is the lifecycle: the state after ev in from, or an error
// wrapping ErrRefusedTransition that names both.
func transition(from State, ev Event) (State, error) {
	to, ok := transitions[ev][from]
	if !ok {
		name := string(from)
		if from == NoState {
			name = "(none)"
		}
		return from, fmt.Errorf("%w: %s in %s", ErrRefusedTransition, ev, name)
	}
	return to, nil
}
