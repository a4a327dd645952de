package coordinator

import (
	"fmt"
	"slices"
	"testing"
)

// assignGroup is a consumer group of members (id → subscribed topics,
// instance id, rack) whose previous target is prev.
type assignSpec struct {
	id, instance, rack string
	topics             []string
}

func assignOnce(t *testing.T, assignor string, im *TopicImage, specs []assignSpec, prev map[string]assignment) map[string]assignment {
	t.Helper()
	c := newGroupCore(GroupConfig{ConsumerAssignors: []string{assignor}}, nil)
	cg := newConsumerGroup()
	for _, s := range specs {
		cg.members[s.id] = &cgMember{id: s.id, instanceID: s.instance, rackID: s.rack, subscribedNames: s.topics, assigned: assignment{}, pending: assignment{}}
	}
	for id, a := range prev {
		cg.target[id] = a
	}
	return c.assign(cg, im)
}

// owner maps each partition of the assignment to its member.
func ownerOf(a map[string]assignment) map[string]string {
	out := map[string]string{}
	for m, as := range a {
		for t, ps := range as {
			for _, p := range ps {
				out[fmt.Sprintf("%x-%d", t[0], p)] = m
			}
		}
	}
	return out
}

func members(n int, topics ...string) []assignSpec {
	var out []assignSpec
	for i := range n {
		out = append(out, assignSpec{id: fmt.Sprintf("m%02d", i), topics: topics})
	}
	return out
}

// The uniform assignor is sticky as Kafka's (balance first, then
// stickiness): a member joining a balanced group takes only the
// partitions it must have (each other member gives up what is over its
// new quota and nothing else), and a member leaving moves only its own
// partitions; the group stays balanced to within one partition.
func TestUniformAssignorMovesTheMinimum(t *testing.T) {
	im := NewTopicImage(1, []TopicInfo{{Name: "t", ID: TopicID{1}, Partitions: 13}, {Name: "u", ID: TopicID{2}, Partitions: 7}})
	for _, n := range []int{1, 2, 3, 5, 8} {
		before := assignOnce(t, "uniform", im, members(n, "t", "u"), nil)
		// One joins.
		after := assignOnce(t, "uniform", im, members(n+1, "t", "u"), before)
		ob, oa := ownerOf(before), ownerOf(after)
		moved := 0
		for p, m := range oa {
			if ob[p] != m {
				moved++
			}
		}
		newcomer := fmt.Sprintf("m%02d", n)
		if got := after[newcomer].count(); moved != got {
			t.Fatalf("%d→%d members: %d partitions moved, the newcomer got %d (only its share may move)", n, n+1, moved, got)
		}
		counts := []int{}
		for _, a := range after {
			counts = append(counts, a.count())
		}
		if slices.Max(counts)-slices.Min(counts) > 1 || moved < 20/(n+1) {
			t.Fatalf("%d→%d members: counts %v, moved %d", n, n+1, counts, moved)
		}
		// The newcomer leaves again: only its partitions move.
		back := assignOnce(t, "uniform", im, members(n, "t", "u"), after)
		ob2 := ownerOf(back)
		for p, m := range oa {
			if m != newcomer && ob2[p] != m {
				t.Fatalf("%d→%d members: partition %s moved from %s to %s", n+1, n, p, m, ob2[p])
			}
		}
	}
}

// Kafka's server-side range assignor is not sticky (KAFKA-16944): each
// topic is split into contiguous ranges over its subscribers, static
// members first by instance id, then the others by member id; the same
// partition numbers of co-partitioned topics go to the same member. So a
// static group keeps its ranges when its members come back under new
// member ids (Kafka's example: I0 [T1P0, T1P1, T2P0, T2P1], I1 [T1P2,
// T2P2]), while a dynamic member joining with a lower member id shifts
// the ranges.
func TestRangeAssignorOrderAsKafka(t *testing.T) {
	im := NewTopicImage(1, []TopicInfo{{Name: "t1", ID: TopicID{1}, Partitions: 3}, {Name: "t2", ID: TopicID{2}, Partitions: 3}})
	want := func(a map[string]assignment, m string, ps ...int32) {
		t.Helper()
		if !slices.Equal(a[m][TopicID{1}], ps) || !slices.Equal(a[m][TopicID{2}], ps) {
			t.Fatalf("%s: %v, want %v of each topic", m, a[m], ps)
		}
	}
	a := assignOnce(t, "range", im, []assignSpec{{id: "m3", instance: "I0", topics: []string{"t1", "t2"}}, {id: "m2", instance: "I1", topics: []string{"t1", "t2"}}}, nil)
	want(a, "m3", 0, 1)
	want(a, "m2", 2)
	// A rolling bounce: new member ids, ordered the other way round.
	a = assignOnce(t, "range", im, []assignSpec{{id: "m0", instance: "I0", topics: []string{"t1", "t2"}}, {id: "m9", instance: "I1", topics: []string{"t1", "t2"}}}, a)
	want(a, "m0", 0, 1)
	want(a, "m9", 2)
	// A dynamic member sorts after the static ones whatever its id.
	a = assignOnce(t, "range", im, []assignSpec{{id: "m0", instance: "I0", topics: []string{"t1", "t2"}}, {id: "m9", instance: "I1", topics: []string{"t1", "t2"}},
		{id: "a", topics: []string{"t1", "t2"}}}, a)
	want(a, "m0", 0)
	want(a, "m9", 1)
	want(a, "a", 2)
	// Not sticky: dynamic members in member id order.
	d := assignOnce(t, "range", im, []assignSpec{{id: "b", topics: []string{"t1", "t2"}}, {id: "c", topics: []string{"t1", "t2"}}}, nil)
	d = assignOnce(t, "range", im, []assignSpec{{id: "a", topics: []string{"t1", "t2"}}, {id: "b", topics: []string{"t1", "t2"}}, {id: "c", topics: []string{"t1", "t2"}}}, d)
	want(d, "a", 0)
	want(d, "b", 1)
	want(d, "c", 2)
}

// Rack ids are carried as Kafka carries them: stored with the member
// (persisted, replayed, described) and not used by the assignors (the
// target is the same with or without racks), as Kafka's built-in
// assignors do not use them.
func TestAssignorsCarryRacks(t *testing.T) {
	im := NewTopicImage(1, []TopicInfo{{Name: "t", ID: TopicID{1}, Partitions: 6}})
	for _, assignor := range []string{"uniform", "range"} {
		plain := assignOnce(t, assignor, im, members(3, "t"), nil)
		racked := members(3, "t")
		for i := range racked {
			racked[i].rack = fmt.Sprintf("rack-%d", 2-i)
		}
		if got := assignOnce(t, assignor, im, racked, nil); fmt.Sprint(got) != fmt.Sprint(plain) {
			t.Fatalf("%s: racks changed the assignment: %v vs %v", assignor, got, plain)
		}
	}
	h := newCGHarness(t, map[string]int32{"t": 2})
	r := h.hb(ConsumerHeartbeatRequest{MemberID: "a", RebalanceTimeoutMs: 5000, SubscribedTopicNames: []string{"t"}, RackID: strp("rack-x"), Owned: []OwnedTopic{}})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if d := h.c.DescribeConsumerGroup("g"); d.Members[0].RackID != "rack-x" {
		t.Fatalf("described rack: %q", d.Members[0].RackID)
	}
	if m := h.replay().groups["g"].cg.members["a"]; m.rackID != "rack-x" {
		t.Fatalf("replayed rack: %q", m.rackID)
	}
}
