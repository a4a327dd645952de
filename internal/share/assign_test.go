package share

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// assignmentOf is every member's partitions of topicA.
func assignmentOf(c *Coordinator) map[string][]int32 {
	out := map[string][]int32{}
	for _, m := range c.Describe("g").Members {
		out[m.ID] = slices.Clone(m.Assigned[topicA])
	}
	return out
}

// checkBalanced: every partition has a member, members hold one each
// when they are at least as many as the partitions (each partition then
// shared by at most ceil(M/P)), else at most ceil(P/M) and one member a
// partition.
func checkBalanced(t *testing.T, a map[string][]int32, P int) {
	t.Helper()
	M := len(a)
	sharing := make([]int, P)
	for id, ps := range a {
		for _, p := range ps {
			sharing[p]++
		}
		switch {
		case M >= P && len(ps) != 1:
			t.Fatalf("%d members, %d partitions: %s holds %v", M, P, id, ps)
		case M < P && len(ps) > (P+M-1)/M:
			t.Fatalf("%d members, %d partitions: %s holds %v", M, P, id, ps)
		}
	}
	for p, n := range sharing {
		limit := 1
		if M >= P {
			limit = (M + P - 1) / P
		}
		if n == 0 || n > limit {
			t.Fatalf("%d members, %d partitions: partition %d has %d members (%v)", M, P, p, n, a)
		}
	}
}

// Members join a 4-partition topic one by one up to 6 and leave again:
// every step is balanced and sticky, a member keeping what the bounds
// let it keep (a member present before and after a join holds a subset
// of what it held; after a leave, a superset, or the same one partition
// when members are still at least as many as partitions; a leave from a
// group whose partitions were shared is not checked, a member of a
// partition that must lose sharers may have to move). Heartbeats without a change move nothing.
// Negative control (the knob noStickyAssign): the same steps move
// partitions between members that stay.
func TestAssignSticky(t *testing.T) {
	for _, sticky := range []bool{true, false} {
		t.Run(fmt.Sprintf("sticky=%v", sticky), func(t *testing.T) {
			const P = 4
			c, _ := newCoord(t, P)
			c.opt.private.noStickyAssign = !sticky
			// Member ids in the reverse order of joining, so that an
			// assignor dealing by id order moves partitions.
			names := []string{"m6", "m5", "m4", "m3", "m2", "m1"}
			moved := 0
			step := func(change func(), wantSubset bool) {
				before := assignmentOf(c)
				change()
				after := assignmentOf(c)
				checkBalanced(t, after, P)
				if !wantSubset && len(before) > P {
					// Shared partitions become less shared: a member
					// whose partition keeps fewer sharers may have to
					// move; not counted.
					return
				}
				for id, was := range before {
					now, ok := after[id]
					if !ok {
						continue
					}
					small, big := now, was
					if !wantSubset {
						small, big = was, now
						if len(after) >= P {
							small, big = now, was
						}
					}
					for _, p := range small {
						if !slices.Contains(big, p) {
							moved++
							if sticky {
								t.Fatalf("%s held %v, now %v", id, was, now)
							}
						}
					}
				}
			}
			for _, m := range names {
				step(func() { join(c, m) }, true)
			}
			for i := 0; i < 3; i++ {
				before := assignmentOf(c)
				for _, m := range names {
					c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: m, MemberEpoch: c.Describe("g").Epoch, SessionTimeout: 10 * time.Second})
				}
				if after := assignmentOf(c); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("heartbeats moved partitions: %v -> %v", before, after)
				}
			}
			for _, m := range []string{"m1", "m3", "m5", "m2"} {
				step(func() { c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: m, MemberEpoch: -1}) }, false)
			}
			if sticky && moved != 0 {
				t.Fatalf("%d partitions moved", moved)
			}
			if !sticky && moved == 0 {
				t.Fatal("control: the non-sticky assignor moved nothing")
			}
			t.Logf("sticky=%v: %d partitions moved between members that stayed", sticky, moved)
		})
	}
}
