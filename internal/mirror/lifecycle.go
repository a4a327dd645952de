package mirror

import (
	"errors"
	"fmt"
)

// The mirror lifecycle's states and events, and the table of the legal
// pairs (transition). The core (core.go, with the lifecycle's diagram)
// owns the whole record and the effects of each event; it reads this
// table for the state each event leads to, and refuses every other pair.
// Callers rely on refusals: a fetcher that finishes PREPARING after a
// stop began, or fails after it, changes nothing, because prepared and
// fail are refused in STOPPING.

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
