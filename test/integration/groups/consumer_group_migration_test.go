package groups

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// mixedGroupClient sends one group's requests as a classic member and as
// a member speaking the consumer protocol would, one request at a time.
type mixedGroupClient struct {
	t     *testing.T
	cl    *kgo.Client
	group string
	topic string
}

func (m *mixedGroupClient) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 15*time.Second)
}

// hb848 is a ConsumerGroupHeartbeat; epoch 0 joins (subscribing to the
// topic), owned nil sends an empty list.
func (m *mixedGroupClient) hb848(member string, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	ctx, cancel := m.ctx()
	defer cancel()
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = m.group, member, epoch, -1
	r.Topics = owned
	if r.Topics == nil {
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if epoch == 0 {
		r.RebalanceTimeoutMillis, r.SubscribedTopicNames = 5000, []string{m.topic}
	}
	resp, err := r.RequestWith(ctx, m.cl)
	if err != nil {
		m.t.Fatalf("ConsumerGroupHeartbeat: %v", err)
	}
	return resp
}

// subscription is a ConsumerProtocol subscription (v3) owning owned.
func (m *mixedGroupClient) subscription(owned []int32) []byte {
	s := kmsg.NewConsumerMemberMetadata()
	s.Version, s.Topics = 3, []string{m.topic}
	if len(owned) > 0 {
		o := kmsg.NewConsumerMemberMetadataOwnedPartition()
		o.Topic, o.Partitions = m.topic, owned
		s.OwnedPartitions = append(s.OwnedPartitions, o)
	}
	return s.AppendTo(nil)
}

// Join is a classic JoinGroup (v9: an unknown member is given its id with
// MEMBER_ID_REQUIRED and joins again with it).
func (m *mixedGroupClient) Join(member string, owned []int32) *kmsg.JoinGroupResponse {
	m.t.Helper()
	ctx, cancel := m.ctx()
	defer cancel()
	for {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.MemberID, r.ProtocolType = m.group, member, "consumer"
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 5000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "cooperative-sticky", m.subscription(owned)
		r.Protocols = append(r.Protocols, p)
		resp, err := r.RequestWith(ctx, m.cl)
		if err != nil {
			m.t.Fatalf("JoinGroup: %v", err)
		}
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			member = resp.MemberID
			continue
		}
		return resp
	}
}

// sync is a follower's SyncGroup; it returns the assigned partitions.
func (m *mixedGroupClient) sync(member string, gen int32) ([]int32, int16) {
	m.t.Helper()
	ctx, cancel := m.ctx()
	defer cancel()
	r := kmsg.NewPtrSyncGroupRequest()
	r.Group, r.MemberID, r.Generation = m.group, member, gen
	r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("cooperative-sticky")
	resp, err := r.RequestWith(ctx, m.cl)
	if err != nil {
		m.t.Fatalf("SyncGroup: %v", err)
	}
	if resp.ErrorCode != 0 {
		return nil, resp.ErrorCode
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(resp.MemberAssignment); err != nil {
		m.t.Fatalf("the assignment does not decode: %v", err)
	}
	var out []int32
	for _, t := range a.Topics {
		out = append(out, t.Partitions...)
	}
	return out, 0
}

func (m *mixedGroupClient) heartbeat(member string, gen int32) int16 {
	m.t.Helper()
	ctx, cancel := m.ctx()
	defer cancel()
	r := kmsg.NewPtrHeartbeatRequest()
	r.Group, r.MemberID, r.Generation = m.group, member, gen
	resp, err := r.RequestWith(ctx, m.cl)
	if err != nil {
		m.t.Fatalf("Heartbeat: %v", err)
	}
	return resp.ErrorCode
}

// commit commits offset for partitions ps as member at generation gen
// (OffsetCommit at version v).
func (m *mixedGroupClient) commit(v int16, member string, gen int32, ps []int32, offset int64) {
	m.t.Helper()
	ctx, cancel := m.ctx()
	defer cancel()
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = v
	r.Group, r.MemberID, r.Generation = m.group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = m.topic
	for _, p := range ps {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, offset
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = append(r.Topics, rt)
	resp, err := m.cl.Request(ctx, r)
	if err != nil {
		m.t.Fatalf("OffsetCommit v%d: %v", v, err)
	}
	for _, p := range resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions {
		if p.ErrorCode != 0 {
			m.t.Fatalf("OffsetCommit v%d of %s at %d: partition %d: %v", v, member, gen, p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}

func owned848(r *kmsg.ConsumerGroupHeartbeatResponse) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r.Assignment != nil {
		for _, t := range r.Assignment.Topics {
			out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	}
	return out
}

// A consumer group with a member speaking the consumer protocol and a
// classic member (JoinGroup, SyncGroup, Heartbeat, OffsetCommit v8)
// survives a crash of the broker: after the restart the same members at
// the same epochs hold the same partitions (the classic one still
// described as MemberType 0), the committed offsets are there, and both
// members go on with their epochs (the classic member's heartbeat at its
// generation is accepted) with no rebalance.
func TestConsumerGroupMixedSurvivesCrash(t *testing.T) {
	const topic, group = "mix", "gmix"
	c := minibrokertest.Start(t, append(itest.Fast848(), minibrokertest.Topic(topic, 4))...)
	m := &mixedGroupClient{t: t, cl: itest.NewClient(t, c.Addr()), group: group, topic: topic}

	k := m.hb848("k", 0, nil)
	k = m.hb848("k", k.MemberEpoch, owned848(k))
	kOwned := owned848(k)
	jr := m.Join("", nil)
	if jr.ErrorCode != 0 || jr.LeaderID != "" || *jr.ProtocolType != "consumer" {
		t.Fatalf("classic join: %+v", jr)
	}
	b := jr.MemberID
	// k revokes half; b is told to rejoin once they are free.
	for range 3 {
		k2 := m.hb848("k", k.MemberEpoch, kOwned)
		if k2.Assignment != nil {
			kOwned = owned848(k2)
		}
		k = k2
	}
	if code := m.heartbeat(b, jr.Generation); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat: %v, want REBALANCE_IN_PROGRESS", kerr.ErrorForCode(code))
	}
	jr = m.Join(b, nil)
	bParts, code := m.sync(b, jr.Generation)
	if code != 0 || len(bParts) != 2 {
		t.Fatalf("classic sync: %v %v", bParts, kerr.ErrorForCode(code))
	}
	if code := m.heartbeat(b, jr.Generation); code != 0 {
		t.Fatalf("classic heartbeat when reconciled: %v", kerr.ErrorForCode(code))
	}
	m.commit(8, b, jr.Generation, bParts, 7)
	var kParts []int32
	for _, o := range kOwned {
		kParts = append(kParts, o.Partitions...)
	}
	m.commit(9, "k", k.MemberEpoch, kParts, 5)

	before := describe848(t, c.Addr(), group)
	if before.State != "Stable" || len(before.Members) != 2 {
		t.Fatalf("before the crash: %+v", before)
	}
	c.Kill()
	c.Revive()
	after := describe848(t, c.Addr(), group)
	bj, _ := json.Marshal(before)
	aj, _ := json.Marshal(after)
	if string(bj) != string(aj) {
		t.Fatalf("after the crash:\n%s\nbefore:\n%s", aj, bj)
	}
	types := map[string]int8{}
	for _, mm := range after.Members {
		types[mm.MemberID] = mm.MemberType
	}
	if types[b] != 0 || types["k"] != 1 {
		t.Fatalf("member types: %v", types)
	}
	m.cl = itest.NewClient(t, c.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = group
	fresp, err := of.RequestWith(ctx, m.cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]int64{}
	for _, ft := range fresp.Topics {
		for _, p := range ft.Partitions {
			got[p.Partition] = p.Offset
		}
	}
	for _, p := range bParts {
		if got[p] != 7 {
			t.Fatalf("offsets after the restart: %v", got)
		}
	}
	for _, p := range kParts {
		if got[p] != 5 {
			t.Fatalf("offsets after the restart: %v", got)
		}
	}
	if code := m.heartbeat(b, jr.Generation); code != 0 {
		t.Fatalf("classic heartbeat after the restart: %v", kerr.ErrorForCode(code))
	}
	if r := m.hb848("k", k.MemberEpoch, kOwned); r.ErrorCode != 0 || r.MemberEpoch != k.MemberEpoch {
		t.Fatalf("heartbeat after the restart: %+v", r)
	}
	if d := describe848(t, c.Addr(), group); d.Epoch != before.Epoch || d.State != "Stable" {
		t.Fatalf("a rebalance after the restart: %+v", d)
	}
}

// group.consumer.migration.policy: a ConsumerGroupHeartbeat joining a
// classic group that has a member (a kgo cooperative-sticky consumer) is
// GROUP_ID_NOT_FOUND ("not a consumer group") with the policy disabled
// and the group stays classic; with the default (bidirectional) the same
// heartbeat converts the group, the classic member kept in it.
func TestConsumerGroupMigrationPolicy(t *testing.T) {
	for _, policy := range []string{"disabled", "bidirectional"} {
		t.Run(policy, func(t *testing.T) {
			const topic, group = "pol", "gpol"
			c := minibrokertest.Start(t, append(itest.Fast848(), minibrokertest.Topic(topic, 2),
				minibrokertest.Set("group.consumer.migration.policy", policy))...)
			itest.NewClient(t, c.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
				kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.HeartbeatInterval(200*time.Millisecond))
			m := &mixedGroupClient{t: t, cl: itest.NewClient(t, c.Addr()), group: group, topic: topic}
			groupType := func() string {
				ctx, cancel := m.ctx()
				defer cancel()
				resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, m.cl)
				if err != nil {
					t.Fatal(err)
				}
				for _, g := range resp.Groups {
					if g.Group == group {
						return g.GroupType + "/" + g.GroupState
					}
				}
				return ""
			}
			itest.WaitFor(t, "the classic group Stable", func() bool { return groupType() == "classic/Stable" })
			r := m.hb848("k", 0, nil)
			if policy == "disabled" {
				if r.ErrorCode != kerr.GroupIDNotFound.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "not a consumer group") {
					t.Fatalf("heartbeat: %v %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
				}
				if got := groupType(); got != "classic/Stable" {
					t.Fatalf("the group is %s", got)
				}
				return
			}
			if r.ErrorCode != 0 {
				t.Fatalf("heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
			}
			d := describe848(t, c.Addr(), group)
			if len(d.Members) != 2 {
				t.Fatalf("converted group: %+v", d)
			}
		})
	}
}
