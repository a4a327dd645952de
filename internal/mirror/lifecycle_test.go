package mirror

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLifecycleScripts runs testdata/lifecycle*.txt through transition,
// as psm's scripts run the producer-state manager. A line is
//
//	state S               set the state (none: no record)
//	EVENT -> S            the event leads to S
//	EVENT -> refused      the event is refused (the state stays)
//
// and # starts a comment. Every (state, event) pair must appear in the
// scripts, so each refused transition is tested too.
func TestLifecycleScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "lifecycle*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	states := map[string]State{"none": NoState, "PREPARING": Preparing, "MIRRORING": Mirroring, "PAUSED": Paused,
		"STOPPING": Stopping, "STOPPED": Stopped, "FAILED": Failed}
	events := map[string]Event{}
	for ev := range transitions {
		events[string(ev)] = ev
	}
	type pair struct {
		s State
		e Event
	}
	seen := map[pair]bool{}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		cur, line := NoState, 0
		for sc.Scan() {
			line++
			text, _, _ := strings.Cut(sc.Text(), "#")
			fields := strings.Fields(text)
			switch {
			case len(fields) == 0:
				continue
			case len(fields) == 2 && fields[0] == "state":
				s, ok := states[fields[1]]
				if !ok {
					t.Fatalf("%s:%d: unknown state %q", file, line, fields[1])
				}
				cur = s
			case len(fields) == 3 && fields[1] == "->":
				ev, ok := events[fields[0]]
				if !ok {
					t.Fatalf("%s:%d: unknown event %q", file, line, fields[0])
				}
				seen[pair{cur, ev}] = true
				next, err := transition(cur, ev)
				if fields[2] == "refused" {
					if !errors.Is(err, ErrRefusedTransition) || next != cur {
						t.Errorf("%s:%d: %s in %q: got %q, %v; want refused", file, line, ev, cur, next, err)
					} else if !strings.Contains(err.Error(), string(ev)) {
						t.Errorf("%s:%d: refusal %q does not name the event", file, line, err)
					}
					continue
				}
				want, ok := states[fields[2]]
				if !ok {
					t.Fatalf("%s:%d: unknown state %q", file, line, fields[2])
				}
				if err != nil || next != want {
					t.Errorf("%s:%d: %s in %q: got %q, %v; want %q", file, line, ev, cur, next, err, want)
				}
				cur = next
			default:
				t.Fatalf("%s:%d: cannot parse %q", file, line, sc.Text())
			}
		}
		f.Close()
	}
	for _, s := range states {
		for _, e := range events {
			if !seen[pair{s, e}] {
				t.Errorf("no script line for %s in %q", e, s)
			}
		}
	}
}
