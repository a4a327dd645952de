package coordinator

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// subscription is a ConsumerProtocol subscription (v3, as kgo's
// cooperative-sticky writes it) of topics, owning owned.
func subscription(topics []string, owned map[string][]int32, rack string) []byte {
	s := kmsg.NewConsumerMemberMetadata()
	s.Version, s.Topics = 3, topics
	for t, ps := range owned {
		o := kmsg.NewConsumerMemberMetadataOwnedPartition()
		o.Topic, o.Partitions = t, ps
		s.OwnedPartitions = append(s.OwnedPartitions, o)
	}
	if rack != "" {
		s.Rack = &rack
	}
	return s.AppendTo(nil)
}

// cjoin sends a classic JoinGroup (protocol "cooperative-sticky") and
// returns its answer, which a consumer group gives at once.
func (h *cgHarness) cjoin(member, instance string, topics []string, owned map[string][]int32) *JoinResult {
	h.t.Helper()
	h.c.Join(h.now, JoinRequest{Group: "g", MemberID: member, InstanceID: instance, ClientID: "kgo", ProtocolType: "consumer",
		Protocols:      []Protocol{{Name: "cooperative-sticky", Metadata: subscription(topics, owned, "rack-a")}},
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second}, 1)
	h.flush()
	for _, r := range h.c.takeReplies() {
		if r.Waiter == 1 && r.Join != nil {
			return r.Join
		}
	}
	return nil
}

// csync sends a SyncGroup (a follower's: no assignments) and returns the
// decoded assignment, topic name → partitions.
func (h *cgHarness) csync(member string, gen int32, assignments map[string][]byte) (map[string][]int32, error) {
	h.t.Helper()
	h.c.Sync(h.now, SyncRequest{Group: "g", MemberID: member, Generation: gen, Assignments: assignments}, 2)
	h.flush()
	for _, r := range h.c.takeReplies() {
		if r.Waiter == 2 && r.Sync != nil {
			if r.Sync.Err != nil {
				return nil, r.Sync.Err
			}
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(r.Sync.Assignment); err != nil {
				h.t.Fatalf("assignment does not decode: %v", err)
			}
			out := map[string][]int32{}
			for _, t := range a.Topics {
				out[t.Topic] = t.Partitions
			}
			return out, nil
		}
	}
	h.t.Fatal("no SyncGroup answer")
	return nil, nil
}

func (h *cgHarness) chb(member string, gen int32) error {
	err := h.c.Heartbeat(h.now, "g", member, "", gen)
	h.flush()
	return err
}

// newMixedHarness is a cgHarness whose classic session timeouts are
// Kafka's defaults (6 s to 30 min).
func newMixedHarness(t *testing.T, topics map[string]int32) *cgHarness {
	h := newCGHarness(t, topics)
	h.c.cfg.MinSessionTimeout, h.c.cfg.MaxSessionTimeout = 6*time.Second, 30*time.Minute
	return h
}

func ownedOf(h *cgHarness, m *cgMember) []OwnedTopic {
	return topicList(m.assigned)
}

func checkOneOwner(t *testing.T, cg *consumerGroup) {
	t.Helper()
	for k, ms := range owners(cg) {
		if len(ms) > 1 {
			t.Fatalf("partition %v held by %v", k, ms)
		}
	}
}

// A classic member joins a consumer group: its JoinGroup is answered at
// once with its member epoch as the generation, its SyncGroup with the
// partitions reconciliation gave it (none while the consumer-protocol
// member still holds them), its heartbeat asks it to rejoin once they are
// free; no partition has two holders. Its ClassicMemberMetadata survives
// a replay of the group log.
func TestClassicMemberJoinsConsumerGroup(t *testing.T) {
	h := newMixedHarness(t, map[string]int32{"t": 4})
	h.join("a", "t")
	h.beat("a", 1, nil)
	if got := h.member("a").assigned.count(); got != 4 {
		t.Fatalf("a has %d partitions, want 4", got)
	}
	jr := h.cjoin("", "", []string{"t"}, nil)
	if jr.Err != nil || jr.ProtocolType != "consumer" || jr.Protocol != "cooperative-sticky" || jr.Leader != "" {
		t.Fatalf("join: %+v", jr)
	}
	b := jr.MemberID
	if jr.Generation != 2 || h.member(b).state != MemberUnreleasedPartitions {
		t.Fatalf("b: generation %d state %v, want 2 UNRELEASED_PARTITIONS", jr.Generation, h.member(b).state)
	}
	checkOneOwner(t, h.c.groups["g"].cg)
	got, err := h.csync(b, jr.Generation, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("sync before a revoked: %v %v", got, err)
	}
	if err := h.chb(b, jr.Generation); err != nil {
		t.Fatalf("heartbeat while a holds them: %v", err)
	}
	// a revokes.
	r := h.beat("a", 1, ownedOf(h, h.member("a")))
	checkOneOwner(t, h.c.groups["g"].cg)
	h.beat("a", r.MemberEpoch, ownedOf(h, h.member("a")))
	checkOneOwner(t, h.c.groups["g"].cg)
	if err := h.chb(b, jr.Generation); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat after a released: %v, want REBALANCE_IN_PROGRESS", err)
	}
	jr2 := h.cjoin(b, "", []string{"t"}, nil)
	got, err = h.csync(b, jr2.Generation, nil)
	if err != nil || len(got["t"]) != 2 {
		t.Fatalf("sync after rejoin: %v %v", got, err)
	}
	checkOneOwner(t, h.c.groups["g"].cg)
	if err := h.chb(b, jr2.Generation); err != nil {
		t.Fatalf("heartbeat when reconciled: %v", err)
	}
	if err := h.chb(b, jr2.Generation-1); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("old generation: %v", err)
	}
	if _, err := h.csync(b, jr2.Generation, nil); err != nil {
		t.Fatal(err)
	}
	// A ConsumerGroupHeartbeat member is not served classic requests.
	if err := h.chb("a", 2); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("classic heartbeat of a consumer-protocol member: %v", err)
	}
	// Commits: the classic member's generation is its epoch.
	if err := validateConsumerCommit(h.c.groups["g"].cg, b, jr2.Generation, 7, false); err != nil {
		t.Fatalf("classic commit v7: %v", err)
	}
	if err := validateConsumerCommit(h.c.groups["g"].cg, b, 1, 7, false); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("classic commit at a stale generation: %v", err)
	}
	d := h.c.DescribeConsumerGroup("g")
	for _, m := range d.Members {
		if m.Classic != (m.MemberID == b) || (m.MemberID == b && m.RackID != "rack-a") {
			t.Fatalf("describe: %+v", m)
		}
	}

	c2 := h.replay()
	m2 := c2.groups["g"].cg.members[b]
	if m2 == nil || m2.classic == nil || m2.classic.sessionTimeoutMs != 10000 || m2.classic.protocols[0].Name != "cooperative-sticky" ||
		!m2.assigned.equal(h.member(b).assigned) || m2.epoch != h.member(b).epoch {
		t.Fatalf("after replay: %+v", m2)
	}
	if c2.groups["g"].cg.members["a"].classic != nil {
		t.Fatal("a speaks the consumer protocol")
	}

	// Leaving by LeaveGroup bumps the group epoch and does not
	// downgrade.
	errs, top := h.c.Leave(h.now, "g", []LeaveMember{{MemberID: b}, {MemberID: "a"}})
	h.flush()
	if top != nil || errs[0] != nil || !errors.Is(errs[1], ErrUnknownMemberID) {
		t.Fatalf("leave: %v %v", errs, top)
	}
	if g := h.c.groups["g"]; g.cg == nil || len(g.cg.members) != 1 || g.cg.epoch != 3 {
		t.Fatalf("after leave: %+v", g.cg)
	}
}

// classicGroup makes group g a classic group with one member, a, that
// owns all of t (generation 1, Stable).
func classicGroup(h *cgHarness, topic string, n int32) (string, int32) {
	h.t.Helper()
	h.c.Join(h.now, JoinRequest{Group: "g", ClientID: "kgo", ProtocolType: "consumer",
		Protocols:      []Protocol{{Name: "cooperative-sticky", Metadata: subscription([]string{topic}, nil, "")}},
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second}, 1)
	var jr *JoinResult
	for _, r := range h.c.takeReplies() {
		jr = r.Join
	}
	if jr == nil || jr.Err != nil || jr.Leader != jr.MemberID {
		h.t.Fatalf("classic join: %+v", jr)
	}
	all := map[TopicID][]int32{}
	for p := int32(0); p < n; p++ {
		all[h.topc[topic]] = append(all[h.topc[topic]], p)
	}
	if _, err := h.csync(jr.MemberID, jr.Generation, map[string][]byte{jr.MemberID: encodeAssignment(all, h.im, 3)}); err != nil {
		h.t.Fatal(err)
	}
	if h.c.groups["g"].state != StateStable {
		h.t.Fatal("not stable")
	}
	return jr.MemberID, jr.Generation
}

// Upgrade: a ConsumerGroupHeartbeat joining a classic group with members
// converts it (policy bidirectional or upgrade): the classic member keeps
// its partitions at epoch = the generation until it revokes them, the new
// member gets them only then. Negative control: with the policy disabled
// or downgrade, the join is GROUP_ID_NOT_FOUND and the group stays
// classic.
func TestClassicGroupOnlineUpgrade(t *testing.T) {
	for _, policy := range []string{"", "upgrade", "disabled", "downgrade"} {
		t.Run("policy="+policy, func(t *testing.T) {
			h := newMixedHarness(t, map[string]int32{"t": 4})
			h.c.cfg.ConsumerMigrationPolicy = policy
			a, gen := classicGroup(h, "t", 4)
			res := h.hb(ConsumerHeartbeatRequest{MemberID: "c", RebalanceTimeoutMs: 5000, SubscribedTopicNames: []string{"t"}, Owned: []OwnedTopic{}})
			if policy == "disabled" || policy == "downgrade" {
				if !errors.Is(res.Err, ErrGroupIDNotFound) {
					t.Fatalf("join with policy %s: %v, want GROUP_ID_NOT_FOUND", policy, res.Err)
				}
				if g := h.c.groups["g"]; g.cg != nil || len(g.members) != 1 {
					t.Fatal("the group changed")
				}
				return
			}
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			g := h.c.groups["g"]
			if g.cg == nil || len(g.members) != 0 || len(g.cg.members) != 2 {
				t.Fatalf("not converted: %+v", g)
			}
			ma := g.cg.members[a]
			if ma.classic == nil || ma.assigned.count() != 2 && ma.assigned.count() != 4 || h.member("c").assigned.count() != 0 {
				t.Fatalf("a %v c %v", ma.assigned, h.member("c").assigned)
			}
			checkOneOwner(t, g.cg)
			// a is told to rejoin; it still owns everything.
			if err := h.chb(a, gen); !errors.Is(err, ErrRebalanceInProgress) {
				t.Fatalf("heartbeat: %v", err)
			}
			owned := map[string][]int32{"t": {0, 1, 2, 3}}
			jr := h.cjoin(a, "", []string{"t"}, owned)
			if jr.Err != nil || h.member(a).state != MemberUnrevokedPartitions || jr.Generation != gen {
				t.Fatalf("rejoin: %+v state %v", jr, h.member(a).state)
			}
			got, err := h.csync(a, jr.Generation, nil)
			if err != nil || len(got["t"]) != 2 {
				t.Fatalf("sync: %v %v", got, err)
			}
			checkOneOwner(t, g.cg)
			jr = h.cjoin(a, "", []string{"t"}, got) // revoked the rest
			if h.member(a).state != MemberStable || jr.Generation != g.cg.epoch {
				t.Fatalf("after revoking: %v %d", h.member(a).state, jr.Generation)
			}
			r := h.beat("c", res.MemberEpoch, nil)
			if h.member("c").assigned.count() != 2 {
				t.Fatalf("c: %+v", r)
			}
			checkOneOwner(t, g.cg)
			c2 := h.replay()
			if g2 := c2.groups["g"]; g2.cg == nil || len(g2.members) != 0 || g2.cg.members[a].classic == nil {
				t.Fatalf("replay: %+v", g2)
			}
		})
	}
}

// Downgrade: when the last consumer-protocol member leaves and classic
// members remain, the group becomes classic at generation = the group
// epoch and rebalances (policy bidirectional or downgrade); otherwise it
// stays a consumer group.
func TestConsumerGroupOnlineDowngrade(t *testing.T) {
	for _, policy := range []string{"", "downgrade", "upgrade", "disabled"} {
		t.Run("policy="+policy, func(t *testing.T) {
			h := newMixedHarness(t, map[string]int32{"t": 4})
			h.c.cfg.ConsumerMigrationPolicy = policy
			h.join("a", "t")
			h.beat("a", 1, nil)
			jr := h.cjoin("", "", []string{"t"}, nil)
			b := jr.MemberID
			r := h.beat("a", 1, ownedOf(h, h.member("a")))
			r = h.beat("a", r.MemberEpoch, ownedOf(h, h.member("a")))
			jr = h.cjoin(b, "", []string{"t"}, nil)
			epoch := h.c.groups["g"].cg.epoch
			res := h.hb(ConsumerHeartbeatRequest{MemberID: "a", MemberEpoch: leaveEpoch})
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			g := h.c.groups["g"]
			if policy == "upgrade" || policy == "disabled" {
				if g.cg == nil || len(g.cg.members) != 1 {
					t.Fatalf("policy %s: converted", policy)
				}
				return
			}
			if g.cg != nil || len(g.members) != 1 || g.members[b] == nil || g.generation != epoch ||
				g.state != StatePreparingRebalance || g.protocol != "cooperative-sticky" {
				t.Fatalf("not downgraded: cg %v members %d gen %d/%d state %v", g.cg, len(g.members), g.generation, epoch, g.state)
			}
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(g.members[b].assignment); err != nil || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 2 {
				t.Fatalf("stored assignment: %+v %v", a, err)
			}
			if err := h.chb(b, jr.Generation); !errors.Is(err, ErrRebalanceInProgress) {
				t.Fatalf("heartbeat: %v", err)
			}
			c2 := h.replay()
			g2 := c2.groups["g"]
			if g2.cg != nil || g2.members[b] == nil || g2.generation != epoch || !slices.Equal(g2.members[b].assignment, g.members[b].assignment) {
				t.Fatalf("replay: %+v", g2)
			}
			// The classic rebalance completes with b alone.
			h.c.Join(h.now, JoinRequest{Group: "g", MemberID: b, ClientID: "kgo", ProtocolType: "consumer",
				Protocols:      []Protocol{{Name: "cooperative-sticky", Metadata: subscription([]string{"t"}, nil, "")}},
				SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second}, 5)
			for _, r := range h.c.takeReplies() {
				if r.Join.Err != nil || r.Join.Generation != epoch+1 || r.Join.Leader != b {
					t.Fatalf("rejoin: %+v", r.Join)
				}
			}
		})
	}
}

// Downgrade by replacement: the last consumer-protocol member is a
// static member (instance i1); a classic member of the same instance
// joins with no member id (a rolled-back client): the group becomes a
// Stable classic group without a rebalance, the new member holding its
// predecessor's partitions, as Kafka's
// validateOnlineDowngradeWithReplacedMemberId. With the policy upgrade
// the group stays a consumer group with the new member in it.
func TestConsumerGroupDowngradeByStaticReplacement(t *testing.T) {
	for _, policy := range []string{"", "upgrade"} {
		t.Run("policy="+policy, func(t *testing.T) {
			h := newMixedHarness(t, map[string]int32{"t": 4})
			h.c.cfg.ConsumerMigrationPolicy = policy
			r := h.hb(ConsumerHeartbeatRequest{MemberID: "s", InstanceID: strp("i1"), RebalanceTimeoutMs: 5000, SubscribedTopicNames: []string{"t"}, Owned: []OwnedTopic{}})
			r = h.beat("s", r.MemberEpoch, nil)
			jr := h.cjoin("", "", []string{"t"}, nil)
			b := jr.MemberID
			s := h.member("s")
			r = h.hb(ConsumerHeartbeatRequest{MemberID: "s", InstanceID: strp("i1"), MemberEpoch: s.epoch, RebalanceTimeoutMs: -1, Owned: topicList(s.assigned)})
			r = h.hb(ConsumerHeartbeatRequest{MemberID: "s", InstanceID: strp("i1"), MemberEpoch: r.MemberEpoch, RebalanceTimeoutMs: -1, Owned: topicList(h.member("s").assigned)})
			sParts := h.member("s").assigned.clone()
			if sParts.count() != 2 {
				t.Fatalf("s holds %v", sParts)
			}
			h.cjoin(b, "", []string{"t"}, nil)
			// The static instance comes back as a classic member.
			jr2 := h.cjoin("", "i1", []string{"t"}, nil)
			if jr2.Err != nil {
				t.Fatal(jr2.Err)
			}
			g := h.c.groups["g"]
			if policy == "upgrade" {
				if g.cg == nil || g.cg.members[jr2.MemberID] == nil || g.cg.members["s"] != nil {
					t.Fatalf("policy upgrade: %+v", g.cg)
				}
				return
			}
			if g.cg != nil || g.state != StateStable || len(g.members) != 2 || g.members[jr2.MemberID] == nil || g.static["i1"] != jr2.MemberID {
				t.Fatalf("not downgraded: cg %v state %v members %d", g.cg, g.state, len(g.members))
			}
			got, err := h.csync(jr2.MemberID, g.generation, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := decodeAssignment(encodeAssignment(sParts, h.im, 3), h.im)
			if !slices.Equal(got["t"], want[h.topc["t"]]) {
				t.Fatalf("the new member got %v, its predecessor held %v", got, sParts)
			}
		})
	}
}

// An upgrade while a cooperative classic member still owns partitions its
// last assignment withheld (it revokes them, then rejoins): those
// partitions, which no member is assigned, are held as the member's
// pending revocation, so the consumer-protocol member that triggered the
// upgrade is not given them before the classic member's next JoinGroup
// shows them gone. Negative control: when the member's metadata does not
// say it owns them (Kafka's fromClassicGroup starts from the assignments
// alone), the new member is given them at once, while the classic member
// may still consume them.
func TestUpgradeHoldsWithheldPartitions(t *testing.T) {
	for _, reportsOwned := range []bool{true, false} {
		h := newMixedHarness(t, map[string]int32{"t": 4})
		a, gen := classicGroup(h, "t", 4)
		tid := h.topc["t"]
		// The last rebalance gave a {0, 1}; it still owns {2, 3} too.
		cm := h.c.groups["g"].members[a]
		cm.assignment = encodeAssignment(assignment{tid: {0, 1}}, h.im, 3)
		var owned map[string][]int32
		if reportsOwned {
			owned = map[string][]int32{"t": {0, 1, 2, 3}}
		}
		cm.protocols = []Protocol{{Name: "cooperative-sticky", Metadata: subscription([]string{"t"}, owned, "")}}
		r := h.hb(ConsumerHeartbeatRequest{MemberID: "c", RebalanceTimeoutMs: 5000, SubscribedTopicNames: []string{"t"}, Owned: []OwnedTopic{}})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		got := h.member("c").assigned[tid]
		if !reportsOwned {
			if !slices.Equal(got, []int32{2, 3}) {
				t.Fatalf("negative control: c has %v, want [2 3] at once", got)
			}
			continue
		}
		if len(got) != 0 || h.member(a).state != MemberUnrevokedPartitions || !slices.Equal(h.member(a).pending[tid], []int32{2, 3}) {
			t.Fatalf("c has %v while a still owns [2 3] (a: %v pending %v)", got, h.member(a).state, h.member(a).pending)
		}
		checkOneOwner(t, h.c.groups["g"].cg)
		if err := h.chb(a, gen); !errors.Is(err, ErrRebalanceInProgress) {
			t.Fatalf("heartbeat: %v", err)
		}
		jr := h.cjoin(a, "", []string{"t"}, map[string][]int32{"t": {0, 1}}) // revoked 2 and 3
		if jr.Err != nil {
			t.Fatal(jr.Err)
		}
		r = h.beat("c", r.MemberEpoch, nil)
		if got := h.member("c").assigned[tid]; !slices.Equal(got, []int32{2, 3}) {
			t.Fatalf("after a revoked: c has %v", got)
		}
		checkOneOwner(t, h.c.groups["g"].cg)
	}
}
