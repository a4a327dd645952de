package coordinator

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// cgHarness drives a groupCore's consumer groups with a topic image and
// keeps every record written, encoded, for replays.
type cgHarness struct {
	t    *testing.T
	c    *groupCore
	im   *TopicImage
	now  time.Time
	log  []byte
	topc map[string]TopicID
}

func newCGHarness(t *testing.T, topics map[string]int32) *cgHarness {
	h := &cgHarness{t: t, c: newGroupCore(GroupConfig{}, func(p string) string { return p }), now: scriptEpoch, topc: map[string]TopicID{}}
	h.setTopics(topics)
	return h
}

func (h *cgHarness) setTopics(topics map[string]int32) {
	var infos []TopicInfo
	for name, n := range topics {
		id, ok := h.topc[name]
		if !ok {
			id = TopicID{byte(len(h.topc) + 1)}
			h.topc[name] = id
		}
		infos = append(infos, TopicInfo{Name: name, ID: id, Partitions: n})
	}
	gen := uint64(1)
	if h.im != nil {
		gen = h.im.Gen + 1
	}
	h.im = NewTopicImage(gen, infos)
	h.c.image = h.im
}

func (h *cgHarness) flush() {
	for _, r := range h.c.takeRecords() {
		h.log = appendFrame(h.log, &r)
	}
}

func (h *cgHarness) hb(req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	h.t.Helper()
	req.Version = 1
	if req.Group == "" {
		req.Group = "g"
	}
	res := h.c.ConsumerHeartbeat(h.now, h.im, req)
	h.flush()
	return res
}

func (h *cgHarness) join(member string, topics ...string) ConsumerHeartbeatResult {
	h.t.Helper()
	res := h.hb(ConsumerHeartbeatRequest{MemberID: member, RebalanceTimeoutMs: 5000, SubscribedTopicNames: topics, Owned: []OwnedTopic{}})
	if res.Err != nil {
		h.t.Fatalf("join %s: %v", member, res.Err)
	}
	return res
}

// beat heartbeats with the member's epoch and what it owns.
func (h *cgHarness) beat(member string, epoch int32, owned []OwnedTopic) ConsumerHeartbeatResult {
	h.t.Helper()
	if owned == nil {
		owned = []OwnedTopic{}
	}
	return h.hb(ConsumerHeartbeatRequest{MemberID: member, MemberEpoch: epoch, RebalanceTimeoutMs: -1, Owned: owned})
}

func (h *cgHarness) member(id string) *cgMember { return h.c.groups["g"].cg.members[id] }

// replay loads the records written so far into a fresh core.
func (h *cgHarness) replay() *groupCore {
	c := newGroupCore(GroupConfig{}, func(p string) string { return p })
	c.replaying, c.replayNow = true, h.now
	scanFrames(append(groupLogHeader(), h.log...), c.apply)
	c.replaying = false
	return c
}

// owners maps each partition to the members holding it (assigned or
// pending revocation).
func owners(cg *consumerGroup) map[[2]int32][]string {
	out := map[[2]int32][]string{}
	for _, m := range cg.sortedMembers() {
		for _, a := range []assignment{m.assigned, m.pending} {
			for t, ps := range a {
				for _, p := range ps {
					k := [2]int32{int32(t[0]), p}
					out[k] = append(out[k], m.id)
				}
			}
		}
	}
	return out
}

// Kafka's reconciliation: when b joins, a keeps its partitions until its
// heartbeat shows it revoked them; b gets them only then. At no point
// does a partition have two holders. Negative control: with the rule
// removed (assignBeforeRevoke), b is given a's partition while a still
// holds it.
func TestConsumerGroupRevokeBeforeAssign(t *testing.T) {
	for _, knob := range []bool{false, true} {
		t.Run(fmt.Sprintf("assignBeforeRevoke=%v", knob), func(t *testing.T) {
			h := newCGHarness(t, map[string]int32{"t": 4})
			h.c.knobs.hooks.AssignBeforeRevoke = knob
			tid := h.topc["t"]
			ra := h.join("a", "t")
			if ra.MemberEpoch != 1 || !reflect.DeepEqual(ra.Assignment, []OwnedTopic{{tid, []int32{0, 1, 2, 3}}}) {
				t.Fatalf("a joins: %+v", ra)
			}
			rb := h.join("b", "t")
			double := false
			for k, hs := range owners(h.c.groups["g"].cg) {
				if len(hs) > 1 {
					double = true
					t.Logf("partition %v held by %v", k, hs)
				}
			}
			if knob {
				if !double {
					t.Fatal("negative control: no partition held twice with assignment before revocation")
				}
				return
			}
			if double {
				t.Fatal("a partition is held by two members")
			}
			if rb.MemberEpoch != 2 || len(rb.Assignment) != 0 || h.member("b").state != MemberUnreleasedPartitions {
				t.Fatalf("b joins: %+v state %v", rb, h.member("b").state)
			}
			// a's heartbeat at epoch 1: told to keep two partitions.
			r := h.beat("a", 1, []OwnedTopic{{tid, []int32{0, 1, 2, 3}}})
			if r.MemberEpoch != 1 || h.member("a").state != MemberUnrevokedPartitions || len(r.Assignment) != 1 || len(r.Assignment[0].Partitions) != 2 {
				t.Fatalf("a told to revoke: %+v state %v", r, h.member("a").state)
			}
			kept := r.Assignment[0].Partitions
			// b heartbeats: still nothing (a has not revoked).
			if r := h.beat("b", 2, nil); len(h.member("b").assigned) != 0 {
				t.Fatalf("b assigned before a revoked: %+v", r)
			}
			// a revokes: epoch 2, stable.
			r = h.beat("a", 1, []OwnedTopic{{tid, kept}})
			if r.MemberEpoch != 2 || h.member("a").state != MemberStable {
				t.Fatalf("a after revoking: %+v state %v", r, h.member("a").state)
			}
			r = h.beat("b", 2, nil)
			if len(r.Assignment) != 1 || len(r.Assignment[0].Partitions) != 2 || h.c.groups["g"].cg.stateName() != "Stable" {
				t.Fatalf("b after a revoked: %+v state %s", r, h.c.groups["g"].cg.stateName())
			}
			if slices.ContainsFunc(r.Assignment[0].Partitions, func(p int32) bool { return slices.Contains(kept, p) }) {
				t.Fatalf("b got a kept partition: %v vs %v", r.Assignment[0].Partitions, kept)
			}
		})
	}
}

// Replaying the group log gives the same consumer groups (epochs,
// members, targets, current assignments, partition epochs); so does a
// compaction's snapshot.
func TestConsumerGroupReplay(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"t": 3, "u": 2})
	h.join("a", "t", "u")
	h.hb(ConsumerHeartbeatRequest{MemberID: "b", RebalanceTimeoutMs: 3000, SubscribedTopicNames: []string{"t"},
		Owned: []OwnedTopic{}, InstanceID: strp("inst-b"), RackID: strp("r1"), ServerAssignor: strp("range")})
	h.beat("a", 1, []OwnedTopic{{h.topc["t"], []int32{0, 1, 2}}, {h.topc["u"], []int32{0, 1}}})
	want := h.c.groups["g"].cg
	check := func(what string, c *groupCore) {
		t.Helper()
		got := c.groups["g"].cg
		if got == nil {
			t.Fatalf("%s: no consumer group", what)
		}
		if got.epoch != want.epoch || got.assignmentEpoch != want.assignmentEpoch || got.metadataHash != want.metadataHash ||
			!reflect.DeepEqual(got.target, want.target) || !reflect.DeepEqual(got.partitionEpochs, want.partitionEpochs) ||
			!reflect.DeepEqual(got.static, want.static) || len(got.members) != len(want.members) {
			t.Fatalf("%s: %+v\nwant %+v", what, got, want)
		}
		for id, w := range want.members {
			g := got.members[id]
			if g == nil || !sameMemberMeta(g, w) || g.epoch != w.epoch || g.prevEpoch != w.prevEpoch || g.state != w.state ||
				!g.assigned.equal(w.assigned) || !g.pending.equal(w.pending) {
				t.Fatalf("%s: member %s: %+v, want %+v", what, id, g, w)
			}
		}
	}
	check("replay", h.replay())
	var snap []byte
	for _, r := range h.c.snapshotRecords() {
		snap = appendFrame(snap, &r)
	}
	h.log = snap
	check("snapshot", h.replay())
}

func strp(s string) *string { return &s }

// A regex subscription picks up a topic created later: the image's new
// generation bumps the group epoch at the next tick, and the member is
// given the new topic's partitions.
func TestConsumerGroupRegexNewTopic(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"orders-1": 1, "other": 1})
	r := h.hb(ConsumerHeartbeatRequest{MemberID: "a", RebalanceTimeoutMs: 5000, SubscribedTopicRegex: strp("orders-.*"), Owned: []OwnedTopic{}})
	if r.Err != nil || len(r.Assignment) != 1 || r.Assignment[0].ID != h.topc["orders-1"] {
		t.Fatalf("join: %+v", r)
	}
	h.setTopics(map[string]int32{"orders-1": 1, "other": 1, "orders-2": 2, "xorders-3": 1})
	h.c.Tick(h.now)
	h.flush()
	r = h.beat("a", r.MemberEpoch, []OwnedTopic{{h.topc["orders-1"], []int32{0}}})
	if r.Err != nil || len(r.Assignment) != 2 || r.MemberEpoch != 2 {
		t.Fatalf("after orders-2 was created: %+v", r)
	}
	if got := h.c.groups["g"].cg.topicsOf(h.member("a"), h.im); !slices.Equal(got, []string{"orders-1", "orders-2"}) {
		t.Fatalf("regex matches %v (must match whole names)", got)
	}
}

// A member that does not heartbeat for its session timeout is fenced and
// its partitions go to the others; one that does not revoke within its
// rebalance timeout too.
func TestConsumerGroupTimeouts(t *testing.T) {
	h := newCGHarness(t, map[string]int32{"t": 2})
	h.join("a", "t")
	h.join("b", "t")
	h.now = h.now.Add(44 * time.Second)
	h.beat("b", 2, nil)
	h.now = h.now.Add(2 * time.Second)
	h.c.Tick(h.now) // a: 46 s without a heartbeat, b: 2 s
	h.flush()
	if h.member("a") != nil || h.member("b") == nil {
		t.Fatalf("session timeout: a %v b %v", h.member("a"), h.member("b"))
	}
	if h.c.fenced["session_timeout"] != 1 {
		t.Fatalf("fenced %v, want one session_timeout", h.c.fenced)
	}
	r := h.beat("b", 2, nil)
	if len(r.Assignment) != 1 || len(r.Assignment[0].Partitions) != 2 {
		t.Fatalf("b after a was fenced: %+v", r)
	}
	// Rebalance timeout: c joins; b is asked to revoke one and never does.
	h.join("c", "t")
	h.beat("b", r.MemberEpoch, r.Assignment) // still owns both
	if h.member("b").state != MemberUnrevokedPartitions {
		t.Fatalf("b: %v", h.member("b").state)
	}
	h.now = h.now.Add(6 * time.Second) // b's rebalance timeout is 5 s
	h.beat("c", h.member("c").epoch, nil)
	h.c.Tick(h.now)
	h.flush()
	if h.member("b") != nil {
		t.Fatal("b not fenced at its rebalance timeout")
	}
	if h.c.fenced["rebalance_timeout"] != 1 || h.c.fenced["session_timeout"] != 1 {
		t.Fatalf("fenced %v, want one of each", h.c.fenced)
	}
}
