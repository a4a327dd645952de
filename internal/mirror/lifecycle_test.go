package mirror

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestLifecycleScripts runs testdata/lifecycle*.txt through transition in
// the datadriven format, as psm's scripts run the producer-state manager:
//
//	state S      set the state (none: no record); prints it
//	EVENT        apply the event; prints the state it leads to, or
//	             "refused" (the state stays)
//
// Every (state, event) pair must appear in the scripts, so each refused
// transition is tested too.
func TestLifecycleScripts(t *testing.T) {
	states := map[string]State{"none": NoState, "PREPARING": Preparing, "MIRRORING": Mirroring, "PAUSED": Paused,
		"STOPPING": Stopping, "STOPPED": Stopped, "FAILED": Failed}
	name := map[State]string{}
	for n, s := range states {
		name[s] = n
	}
	events := map[string]Event{}
	for ev := range transitions {
		events[string(ev)] = ev
	}
	type pair struct {
		s State
		e Event
	}
	seen := map[pair]bool{}
	files, err := filepath.Glob(filepath.Join("testdata", "lifecycle*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range files {
		cur := NoState
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "state" {
				if len(d.CmdArgs) != 1 {
					t.Fatalf("%s: state S", d.Pos)
				}
				s, ok := states[d.CmdArgs[0].Key]
				if !ok {
					t.Fatalf("%s: unknown state %q", d.Pos, d.CmdArgs[0].Key)
				}
				cur = s
				return name[cur] + "\n"
			}
			ev, ok := events[d.Cmd]
			if !ok || len(d.CmdArgs) != 0 {
				t.Fatalf("%s: unknown directive %q", d.Pos, d.FullCmd())
			}
			seen[pair{cur, ev}] = true
			next, err := transition(cur, ev)
			if err != nil {
				if !errors.Is(err, ErrRefusedTransition) || next != cur {
					t.Fatalf("%s: %s in %q: %q, %v: an error that is not a refusal, or a refusal that moved", d.Pos, ev, cur, next, err)
				}
				if !strings.Contains(err.Error(), string(ev)) {
					t.Errorf("%s: refusal %q does not name the event", d.Pos, err)
				}
				return "refused\n"
			}
			cur = next
			return name[cur] + "\n"
		})
	}
	for _, s := range states {
		for _, e := range events {
			if !seen[pair{s, e}] {
				t.Errorf("no script line for %s in %q", e, s)
			}
		}
	}
}
