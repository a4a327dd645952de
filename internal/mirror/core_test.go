package mirror

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/minibroker/minibroker/internal/partition"
)

// TestCoreScripts runs testdata/core/*.txt: scripts of events and the
// effects the core answers (core.go), and crash matrices that run a
// failover or a start against a model of the partition, crash before
// every effect, restart, and check what the rules promise.
//
//	record STATE [last=N] [barrier=N] [lost=N] [streak=N] [retries=N]
//	       [retry-at=N] [retriable] [security] [approval] [mode=abort] [aborted=N]
//	       [source-epoch=N]
//	    sets the record (no output but the record).
//	event KIND [now=N] [paused] [reason=S] [fail=security|truncate|retriable|identity]
//	      [end=N] [lost=N] [open=N] [offset=N] [attempts=N] [initial=MS] [max=MS]
//	      [mode=abort|truncate] [epoch=N]
//	    steps the record: prints the transition, the effects in order
//	    and the record after (or the refusal).
//	crash-matrix failover|start log=E,E,… [mode=abort]
//	             [knob=persist-last|barrier-first|barrier-before-aborts]
//	    the model run with a crash before each effect in turn (and none),
//	    then a restart (recover, and the operator's stop or start again
//	    when the crash came before it was persisted); one line a crash
//	    point, with the rules it broke.
//
// Run with -rewrite to regenerate the expected output after a change,
// and read the difference.
func TestCoreScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/core", func(t *testing.T, path string) {
		var rec partitionRecord
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "record":
				rec = parseRecord(t, d)
				return formatRecord(rec) + "\n"
			case "event":
				ev := parseEvent(t, d)
				next, effs, err := step(rec, ev)
				var b strings.Builder
				if err != nil {
					fmt.Fprintf(&b, "refused: %v\n", err)
					if next != rec || effs != nil {
						t.Fatalf("a refusal changed the record or gave effects")
					}
					return b.String()
				}
				if next.State != rec.State {
					fmt.Fprintf(&b, "%s -> %s\n", stateName(rec.State), stateName(next.State))
				}
				for _, e := range effs {
					fmt.Fprintf(&b, "  %s\n", formatEffect(e))
				}
				fmt.Fprintf(&b, "record: %s\n", formatRecord(next))
				rec = next
				return b.String()
			case "crash-matrix":
				return crashMatrix(t, d)
			default:
				t.Fatalf("unknown command %q", d.Cmd)
				return ""
			}
		})
	})
}

func stateName(s State) string {
	if s == NoState {
		return "(none)"
	}
	return string(s)
}

func parseRecord(t *testing.T, d *datadriven.TestData) partitionRecord {
	if len(d.CmdArgs) == 0 {
		t.Fatal("record: no state")
	}
	rec := partitionRecord{State: State(d.CmdArgs[0].Key), LastMirroredOffset: -1, BarrierOffset: -1}
	if d.CmdArgs[0].Key == "none" {
		rec.State = NoState
	}
	for _, a := range d.CmdArgs[1:] {
		n := func() int64 {
			v, err := strconv.ParseInt(a.Vals[0], 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", a.Key, err)
			}
			return v
		}
		switch a.Key {
		case "last":
			rec.LastMirroredOffset = n()
		case "barrier":
			rec.BarrierOffset = n()
		case "lost":
			rec.LostAtFailover = n()
		case "streak":
			rec.FailStreak = int(n())
		case "retries":
			rec.Retries = int(n())
		case "retry-at":
			rec.RetryAt = n()
		case "retriable":
			rec.Retriable = true
		case "security":
			rec.SecurityFailure = true
		case "approval":
			rec.AllowTruncate = &truncateApproval{TruncateTo: 3, LocalLogEnd: 5}
		case "reason":
			rec.Reason = a.Vals[0]
		case "mode":
			rec.FailoverMode = modeArg(t, a.Vals[0])
		case "aborted":
			rec.AbortedTxns = n()
		case "source-epoch":
			rec.SourceLeaderEpoch = int32(n())
		default:
			t.Fatalf("record: unknown argument %q", a.Key)
		}
	}
	return rec
}

func parseEvent(t *testing.T, d *datadriven.TestData) coreEvent {
	if len(d.CmdArgs) == 0 {
		t.Fatal("event: no kind")
	}
	ev := coreEvent{Kind: Event(d.CmdArgs[0].Key),
		Retry: retryPolicy{Initial: time.Second, Max: 8 * time.Second, MaxAttempts: 3}}
	for _, a := range d.CmdArgs[1:] {
		n := func() int64 {
			v, err := strconv.ParseInt(a.Vals[0], 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", a.Key, err)
			}
			return v
		}
		switch a.Key {
		case "now":
			ev.Now = n()
		case "paused":
			ev.Paused = true
		case "reason":
			ev.Reason = a.Vals[0]
		case "fail":
			kinds := map[string]failKind{"security": failSecurity, "truncate": failTruncateRefused,
				"retriable": failRetriable, "identity": failIdentity}
			k, ok := kinds[a.Vals[0]]
			if !ok {
				t.Fatalf("unknown failure %q", a.Vals[0])
			}
			ev.Fail = k
		case "end":
			ev.End = n()
		case "lost":
			ev.Lost = n()
		case "open":
			ev.Open = n()
		case "mode":
			ev.Mode = modeArg(t, a.Vals[0])
		case "offset":
			ev.Offset = n()
		case "attempts":
			ev.Retry.MaxAttempts = int(n())
		case "initial":
			ev.Retry.Initial = time.Duration(n()) * time.Millisecond
		case "max":
			ev.Retry.Max = time.Duration(n()) * time.Millisecond
		case "approval":
			ev.Approval = &truncateApproval{TruncateTo: 3, LocalLogEnd: 5}
		case "epoch":
			ev.Epoch = int32(n())
		default:
			t.Fatalf("event: unknown argument %q", a.Key)
		}
	}
	return ev
}

// modeArg is a script's mode=abort|truncate.
func modeArg(t *testing.T, v string) FailoverMode {
	switch v {
	case "abort":
		return FailoverAbortOpenTxns
	case "truncate":
		return FailoverTruncateToLSO
	}
	t.Fatalf("unknown mode %q", v)
	return ""
}

func formatRecord(r partitionRecord) string {
	parts := []string{stateName(r.State)}
	add := func(cond bool, s string, args ...any) {
		if cond {
			parts = append(parts, fmt.Sprintf(s, args...))
		}
	}
	add(r.LastMirroredOffset != -1, "last=%d", r.LastMirroredOffset)
	add(r.BarrierOffset != -1, "barrier=%d", r.BarrierOffset)
	add(r.LostAtFailover != 0, "lost=%d", r.LostAtFailover)
	add(r.FailoverMode == FailoverAbortOpenTxns, "mode=abort")
	add(r.FailoverMode != "" && r.FailoverMode != FailoverAbortOpenTxns, "mode=%s", r.FailoverMode)
	add(r.AbortedTxns != 0, "aborted=%d", r.AbortedTxns)
	add(r.Retriable, "retriable")
	add(r.RetryAt != 0, "retry-at=%d", r.RetryAt)
	add(r.Retries != 0, "retries=%d", r.Retries)
	add(r.FailStreak != 0, "streak=%d", r.FailStreak)
	add(r.SecurityFailure, "security")
	add(r.AllowTruncate != nil, "approval")
	add(r.Reason != "", "reason=%q", r.Reason)
	add(r.SourceLeaderEpoch != 0, "source-epoch=%d", r.SourceLeaderEpoch)
	return strings.Join(parts, " ")
}

func formatEffect(e effect) string {
	s := e.Kind.String()
	switch e.Kind {
	case effSetMode:
		if e.Mode == partition.Writable {
			return s + " writable"
		}
		return s + " read-only"
	case effStartFetcher:
		if e.Paused {
			s += " paused"
		}
		if e.Retried {
			s += " retried"
		}
	case effPauseFetcher:
		if e.Paused {
			return s + " pause"
		}
		return s + " resume"
	case effClampGroups, effTruncate:
		s += fmt.Sprintf(" to=%d", e.At)
	case effWriteBarrier:
		if e.At < 0 {
			return s + " at=log-end"
		}
		s += fmt.Sprintf(" at=%d", e.At)
	case effArmRetry:
		s += fmt.Sprintf(" at=%d", e.At)
	case effAbortTxn:
		s += fmt.Sprintf(" at=%d", e.At)
		if e.NewEpoch {
			s += " new-epoch"
		}
	case effRaiseEpoch:
		s += fmt.Sprintf(" to=%d", e.Epoch)
	}
	return s
}

// world is the model a crash matrix runs against: the partition's log (an
// entry a line: dP committed data of source producer P, tP an open
// transaction's data of P, aP an ABORT marker of P, b the barrier, lP a
// local producer's write), what is on disk, and what clients saw.
type world struct {
	kn       knobs
	failover FailoverMode // the mirror's setting, given with the stop
	log      []string
	durable  partitionRecord // the last persisted record
	mem      partitionRecord
	mode     partition.Mode
	fetcher  bool
	// prepared: the fetcher aligns the local log with the source when
	// it starts (start scenario), cutting local entries.
	aligned, cutWithoutDurableStart bool
	group                           int64 // a group's committed offset
	localWrites                     int   // local records acknowledged
	localCommit                     int64 // a local consumer's commit; -1 none
	barriersWritten                 int
	effects                         int // effects applied so far
	crashAt                         int // crash before effect number crashAt; -1 never
	crashed                         bool
	lastEffect                      string
	cutAt                           int64 // the start scenario's divergence point
	broken                          []string
}

// openTxns is the transactions open at the end of log: producer → the
// offset of its first record (the model's entries are one offset each).
// An ABORT marker closes its producer's; the barrier clears them all
// when clearing (the producer state), not for the LSO the model's
// find-lso reads (the negative control barrier-first cuts the barrier
// with the open transaction).
func modelOpenTxns(log []string, clearing bool) map[string]int64 {
	open := map[string]int64{}
	for i, e := range log {
		switch {
		case strings.HasPrefix(e, "t"):
			if _, ok := open[e[1:]]; !ok {
				open[e[1:]] = int64(i)
			}
		case strings.HasPrefix(e, "a"):
			delete(open, e[1:])
		case e == "b" && clearing:
			clear(open)
		}
	}
	return open
}

// lso is the first open transaction's offset, or the log end.
func lsoOf(log []string) int64 {
	lso := int64(len(log))
	for _, first := range modelOpenTxns(log, false) {
		lso = min(lso, first)
	}
	return lso
}

func (w *world) lso() int64 { return lsoOf(w.log) }

// run steps ev and applies the effects, with the events they report,
// until none is left or the crash point comes.
func (w *world) run(t *testing.T, ev coreEvent) {
	queue := []coreEvent{ev}
	for len(queue) > 0 && !w.crashed {
		ev, queue = queue[0], queue[1:]
		next, effs, err := stepWith(w.kn, w.mem, ev)
		if err != nil {
			t.Fatalf("model: %s in %s: %v", ev.Kind, stateName(w.mem.State), err)
		}
		w.mem = next
		for _, e := range effs {
			if w.effects == w.crashAt {
				w.crashed, w.lastEffect = true, e.Kind.String()
				return
			}
			w.effects++
			if r := w.apply(e); r != nil {
				queue = append(queue, *r)
			}
		}
	}
}

// apply does one effect to the model, answering the event it reports.
func (w *world) apply(e effect) *coreEvent {
	switch e.Kind {
	case effPersist:
		w.durable = w.mem
	case effSetMode:
		w.mode = e.Mode
		if e.Mode == partition.Writable {
			// Clients see a writable partition at once: a local producer
			// (drawing id 5, the source's too) writes, and a consumer
			// commits past it.
			w.log = append(w.log, "l5")
			w.localWrites++
			w.localCommit = int64(len(w.log))
			w.group = w.localCommit
		}
	case effStartFetcher:
		w.fetcher = true
		if !w.aligned && int64(len(w.log)) > w.cutAt {
			// PREPARING cuts the local data past the source, as the
			// approval recorded with the start allows.
			if w.durable.State != Preparing || w.durable.AllowTruncate == nil {
				w.cutWithoutDurableStart = true
			}
			w.log = w.log[:w.cutAt]
		}
		w.aligned = true
		if w.mem.State != Preparing {
			return nil
		}
		return &coreEvent{Kind: EvPrepared}
	case effPauseFetcher:
	case effStopFetcher:
		w.fetcher = false
	case effFindLSO:
		end, lso := int64(len(w.log)), w.lso()
		return &coreEvent{Kind: EvLSO, End: lso, Lost: end - lso, Open: int64(len(modelOpenTxns(w.log, false)))}
	case effAbortTxn:
		switch {
		case e.At < int64(len(w.log)):
			if !strings.HasPrefix(w.log[e.At], "a") && !w.kn.barrierBeforeAborts {
				w.broken = append(w.broken, fmt.Sprintf("%s at %d where the marker goes", w.log[e.At], e.At))
			}
			return nil // there already: never a second one
		case e.At > int64(len(w.log)):
			w.broken = append(w.broken, fmt.Sprintf("marker at %d past the log end %d", e.At, len(w.log)))
			return nil
		}
		producer, first := "", int64(-1)
		for p, off := range modelOpenTxns(w.log, false) {
			if first < 0 || off < first {
				producer, first = p, off
			}
		}
		if first >= 0 {
			w.log = append(w.log, "a"+producer)
		}
	case effTruncate:
		if int64(len(w.log)) > e.At {
			w.log = w.log[:e.At]
		}
	case effClampGroups:
		if w.localCommit > e.At {
			w.broken = append(w.broken, fmt.Sprintf("a local commit at %d lowered to %d", w.localCommit, e.At))
		}
		w.group = min(w.group, e.At)
		return &coreEvent{Kind: EvClamped}
	case effWriteBarrier:
		at := e.At
		if at < 0 {
			at = int64(len(w.log))
		}
		if at < int64(len(w.log)) && w.log[at] == "b" {
			return &coreEvent{Kind: EvStopped, Offset: at} // there already: never a second one
		}
		w.log = append(w.log[:at], "b")
		w.barriersWritten++
		return &coreEvent{Kind: EvStopped, Offset: at}
	case effArmRetry, effDisarmRetry:
	}
	return nil
}

// crash loses what memory held: the process restarts from the disk.
func (w *world) restart(t *testing.T) {
	w.crashed, w.crashAt = false, -1
	w.mem, w.fetcher, w.mode = w.durable, false, partition.Writable
	w.run(t, coreEvent{Kind: EvRecover})
}

func crashMatrix(t *testing.T, d *datadriven.TestData) string {
	scenario := d.CmdArgs[0].Key
	var kn knobs
	var entries []string
	mode := FailoverTruncateToLSO
	for _, a := range d.CmdArgs[1:] {
		switch a.Key {
		case "log":
			entries = a.Vals
		case "mode":
			mode = modeArg(t, a.Vals[0])
		case "knob":
			switch a.Vals[0] {
			case "persist-last":
				kn.persistLast = true
			case "barrier-first":
				kn.barrierFirst = true
			case "barrier-before-aborts":
				kn.barrierBeforeAborts = true
			default:
				t.Fatalf("unknown knob %q", a.Vals[0])
			}
		}
	}
	fresh := func(crashAt int) *world {
		w := &world{kn: kn, failover: mode, log: slices.Clone(entries), crashAt: crashAt, localCommit: -1}
		switch scenario {
		case "failover":
			w.durable = partitionRecord{State: Mirroring, LastMirroredOffset: -1, BarrierOffset: -1}
			w.mode, w.fetcher, w.aligned = partition.Mirrored, true, true
			w.group = int64(len(w.log)) // synced from the source, past the cut
		case "start":
			// The local log ends past where it diverges from the source.
			w.durable = partitionRecord{State: NoState, LastMirroredOffset: -1, BarrierOffset: -1}
			w.mode, w.cutAt = partition.Writable, 2
		default:
			t.Fatalf("unknown scenario %q", scenario)
		}
		w.mem = w.durable
		return w
	}
	operator := func(w *world) coreEvent {
		if scenario == "failover" {
			return coreEvent{Kind: EvStop, Mode: w.failover}
		}
		return coreEvent{Kind: EvStart, Approval: &truncateApproval{TruncateTo: 2, LocalLogEnd: int64(len(entries))}}
	}
	// The run without a crash counts the effects.
	base := fresh(-1)
	base.run(t, operator(base))
	want := outcome{lost: int64(len(entries)) - lsoOf(entries)}
	if mode == FailoverAbortOpenTxns {
		want = outcome{aborted: int64(len(modelOpenTxns(entries, false))), kept: entries}
	}
	var b strings.Builder
	for crashAt := 0; crashAt <= base.effects; crashAt++ {
		w := fresh(crashAt)
		w.run(t, operator(w))
		what := "no crash"
		if w.crashed {
			what = fmt.Sprintf("crash before %d (%s)", crashAt, w.lastEffect)
			w.restart(t)
			// A stop or start not persisted before the crash was not
			// acknowledged: the operator asks again.
			if scenario == "failover" && w.mem.State != Stopping && w.mem.State != Stopped ||
				scenario == "start" && w.mem.State == NoState {
				w.run(t, operator(w))
			}
		}
		fmt.Fprintf(&b, "%s: %s log=%s", what, formatRecord(w.mem), strings.Join(w.log, ","))
		for _, v := range w.violations(scenario, want) {
			fmt.Fprintf(&b, "\n  BROKEN: %s", v)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// outcome is what a failover must record and keep: the offsets it cut
// (truncate-to-lso), the transactions it aborted and the mirrored log it
// keeps whole (abort-open-transactions).
type outcome struct {
	lost, aborted int64
	kept          []string
}

// violations are the rules the model's end state breaks.
func (w *world) violations(scenario string, want outcome) []string {
	var out []string
	if w.durable != w.mem {
		out = append(out, "memory ahead of the disk")
	}
	if scenario == "start" {
		if w.mem.State != Mirroring || w.mode != partition.Mirrored || !w.fetcher {
			out = append(out, "not mirroring read-only after the start")
		}
		if w.cutWithoutDurableStart {
			out = append(out, "local data cut under a start no restart finds")
		}
		return out
	}
	if w.mem.State != Stopped || w.mode != partition.Writable {
		out = append(out, "not STOPPED and writable")
	}
	if w.barriersWritten != 1 {
		out = append(out, fmt.Sprintf("%d barriers written", w.barriersWritten))
	}
	// The local producer (id 5) must find no state of the source's
	// producer 5: a barrier between them, and no open transaction left
	// before it.
	lastBarrier := -1
	for i, e := range w.log {
		switch {
		case e == "b":
			lastBarrier = i
		case strings.HasPrefix(e, "l"):
			for _, s := range w.log[lastBarrier+1 : i] {
				if s == "d5" || s == "t5" {
					out = append(out, fmt.Sprintf("local producer 5 at %d judged against the source's producer 5", i))
					break
				}
			}
		case e == "b":
		}
	}
	// No transaction open when the barrier comes: its producer state
	// would go with no marker, and read_committed consumers would read
	// its records.
	for i, e := range w.log {
		if e != "b" {
			continue
		}
		for _, first := range modelOpenTxns(w.log[:i], true) {
			out = append(out, fmt.Sprintf("open transaction at %d below the barrier", first))
		}
	}
	if w.mem.LostAtFailover != want.lost {
		out = append(out, fmt.Sprintf("lost=%d recorded, %d cut", w.mem.LostAtFailover, want.lost))
	}
	if w.mem.AbortedTxns != want.aborted {
		out = append(out, fmt.Sprintf("aborted=%d recorded, %d open", w.mem.AbortedTxns, want.aborted))
	}
	if want.kept != nil && (len(w.log) < len(want.kept) || !slices.Equal(w.log[:len(want.kept)], want.kept)) {
		out = append(out, "mirrored records cut")
	}
	if n := strings.Count(strings.Join(w.log, ","), "l"); n != w.localWrites {
		out = append(out, fmt.Sprintf("%d local writes acknowledged, %d kept", w.localWrites, n))
	}
	return append(out, w.broken...)
}
