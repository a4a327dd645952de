package groups

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// describe848 answers ConsumerGroupDescribe for one group.
func describe848(t *testing.T, addr, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	cl := itest.NewClient(t, addr)
	defer cl.Close()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Groups[0]
}

// A kgo consumer with ServerSideBalancer joins a KIP-848 consumer group
// (ConsumerGroupHeartbeat), consumes every record and commits; the group
// is a "consumer" group, Stable, its member at the group epoch with the
// three partitions; a second member gets a share after the first revoked
// it; the committed offsets are the records' ends; ListGroups shows the
// type and filters by it.
func TestConsumerGroup848Kgo(t *testing.T) {
	const topic, group, n = "cg848", "g848", 300
	c := minibrokertest.Start(t, append(itest.Fast848(), minibrokertest.Topic(topic, 3))...)
	itest.GroupsProduce(t, c.Addr(), topic, "v", n)

	a := itest.New848Consumer(t, c.Addr(), group, []string{topic})
	seen := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(seen) < n {
		fs := a.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d: %v", len(seen), n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	if err := a.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	d := describe848(t, c.Addr(), group)
	if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 1 {
		t.Fatalf("describe: error %d state %q members %d", d.ErrorCode, d.State, len(d.Members))
	}
	m := d.Members[0]
	if m.MemberEpoch != d.Epoch || d.AssignmentEpoch != d.Epoch || len(m.Assignment.TopicPartitions) != 1 ||
		len(m.Assignment.TopicPartitions[0].Partitions) != 3 || m.Assignment.TopicPartitions[0].Topic != topic {
		t.Fatalf("describe: epoch %d/%d member %+v", d.Epoch, d.AssignmentEpoch, m)
	}

	// A second member: the partitions are shared once a revoked them.
	b := itest.New848Consumer(t, c.Addr(), group, []string{topic})
	go func() {
		for ctx.Err() == nil {
			b.PollFetches(ctx)
		}
	}()
	go func() {
		for ctx.Err() == nil {
			a.PollFetches(ctx)
		}
	}()
	itest.WaitFor(t, "two members with 3 partitions between them", func() bool {
		d := describe848(t, c.Addr(), group)
		if d.State != "Stable" || len(d.Members) != 2 {
			return false
		}
		total := 0
		for _, m := range d.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				total += len(tp.Partitions)
				if len(tp.Partitions) == 0 || len(tp.Partitions) > 2 {
					return false
				}
			}
		}
		return total == 3
	})

	adm := itest.KadmClient(t, c.Addr())
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != n {
		t.Fatalf("committed offsets sum to %d, want %d", sum, n)
	}
	listed, err := adm.ListGroupsByType(ctx, []string{"consumer"}, "stable")
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[group].ProtocolType != "consumer" || listed[group].State != "Stable" {
		t.Fatalf("ListGroups type consumer: %+v", listed)
	}
	classic, err := adm.ListGroupsByType(ctx, []string{"classic"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := classic[group]; ok {
		t.Fatalf("ListGroups type classic lists the consumer group: %+v", classic)
	}
}

// ConsumerGroupHeartbeat's answers as Kafka gives them, raw: validation,
// unknown members and groups, epochs ahead or behind (FENCED_MEMBER_EPOCH),
// unsupported assignors, bad regexes, static members, and OffsetCommit /
// OffsetFetch with member epochs (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID).
func TestConsumerGroup848Errors(t *testing.T) {
	const topic = "cg848e"
	c := minibrokertest.Start(t, append(itest.Fast848(), minibrokertest.Topic(topic, 2))...)
	cl := itest.NewClient(t, c.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var topicID [16]byte
	md := itest.KadmMetadata(t, c.Addr(), topic)
	topicID = md.Topics[topic].ID

	hb := func(mut func(r *kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "ge", "m1", 0, 5000
		r.SubscribedTopicNames, r.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		mut(r)
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	code := func(resp *kmsg.ConsumerGroupHeartbeatResponse) string {
		if resp.ErrorCode == 0 {
			return "NONE"
		}
		return kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Message
	}
	expect := func(what string, resp *kmsg.ConsumerGroupHeartbeatResponse, want string) {
		t.Helper()
		if got := code(resp); got != want {
			t.Errorf("%s: %s (%v), want %s", what, got, resp.ErrorMessage, want)
		}
	}
	expect("empty group", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }), "INVALID_REQUEST")
	expect("no member id (v1)", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }), "INVALID_REQUEST")
	expect("join without rebalance timeout", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }), "INVALID_REQUEST")
	expect("join owning partitions", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicID, Partitions: []int32{0}}}
	}), "INVALID_REQUEST")
	expect("epoch -3", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }), "INVALID_REQUEST")
	expect("unknown assignor", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }), "UNSUPPORTED_ASSIGNOR")
	expect("bad regex", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr("(")
	}), "INVALID_REGULAR_EXPRESSION")
	expect("heartbeat to a group that does not exist", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 1 }), "GROUP_ID_NOT_FOUND")

	join := hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) {})
	expect("join", join, "NONE")
	if join.MemberEpoch != 1 || join.Assignment == nil || len(join.Assignment.Topics) != 1 || len(join.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("join: epoch %d assignment %+v", join.MemberEpoch, join.Assignment)
	}
	expect("unknown member", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "zz", 1 }), "UNKNOWN_MEMBER_ID")
	expect("epoch ahead", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 5 }), "FENCED_MEMBER_EPOCH")

	// OffsetCommit v9+ with the member epoch as generation.
	commit := func(member string, epoch int32, version int16) string {
		t.Helper()
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version = version
		r.Group, r.MemberID, r.Generation = "ge", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 7
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		rc := itest.DialRaw(t, c.Addr()) // the version pinned (kgo would choose its own)
		rc.Write(itest.RequestFrame(r, 1))
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		if err := resp.ReadFrom(rc.ReadResponse(1, r.IsFlexible())); err != nil {
			t.Fatal(err)
		}
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			return kerr.ErrorForCode(c).(*kerr.Error).Message
		}
		return "NONE"
	}
	for _, tc := range []struct {
		member  string
		epoch   int32
		version int16
		want    string
	}{
		{"m1", 1, 9, "NONE"},
		{"m1", 0, 9, "STALE_MEMBER_EPOCH"},
		{"m1", 2, 9, "STALE_MEMBER_EPOCH"},
		{"zz", 1, 9, "UNKNOWN_MEMBER_ID"},
		{"", -1, 9, "UNKNOWN_MEMBER_ID"}, // a group with members takes no simple commit
		{"m1", 1, 8, "UNSUPPORTED_VERSION"},
	} {
		if got := commit(tc.member, tc.epoch, tc.version); got != tc.want {
			t.Errorf("OffsetCommit v%d member %q epoch %d: %s, want %s", tc.version, tc.member, tc.epoch, got, tc.want)
		}
	}
	fetch := func(member *string, epoch int32) string {
		t.Helper()
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "ge", member, epoch
		r.Groups = append(r.Groups, g)
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		rg := resp.Groups[0]
		if rg.ErrorCode != 0 {
			return kerr.ErrorForCode(rg.ErrorCode).(*kerr.Error).Message
		}
		return fmt.Sprint(len(rg.Topics))
	}
	if got := fetch(kmsg.StringPtr("m1"), 1); got != "1" {
		t.Errorf("OffsetFetch member epoch 1: %s", got)
	}
	if got := fetch(kmsg.StringPtr("m1"), 0); got != "STALE_MEMBER_EPOCH" {
		t.Errorf("OffsetFetch stale epoch: %s", got)
	}
	if got := fetch(kmsg.StringPtr("zz"), 1); got != "UNKNOWN_MEMBER_ID" {
		t.Errorf("OffsetFetch unknown member: %s", got)
	}
	if got := fetch(nil, -1); got != "1" {
		t.Errorf("OffsetFetch as an admin: %s", got)
	}

	// DeleteGroups and DescribeGroups on a consumer group.
	adm := itest.KadmClient(t, c.Addr())
	del, _ := adm.DeleteGroups(ctx, "ge")
	if err := del["ge"].Err; err != kerr.NonEmptyGroup {
		t.Errorf("DeleteGroups with a member: %v", err)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"ge"}
	dresp, err := dg.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := dresp.Groups[0]; g.State != "Dead" || g.ErrorCode != kerr.GroupIDNotFound.Code || g.ErrorMessage == nil || !strings.Contains(*g.ErrorMessage, "not a classic group") {
		t.Errorf("DescribeGroups on a consumer group: %+v", g)
	}

	// Static members: an instance id in use is UNRELEASED_INSTANCE_ID for
	// another member id; after a -2 leave the new id takes the instance's
	// assignment.
	static := func(member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		return hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Group, r.MemberID, r.MemberEpoch, r.InstanceID = "gs", member, epoch, kmsg.StringPtr("inst")
			if epoch != 0 {
				r.SubscribedTopicNames, r.Topics, r.RebalanceTimeoutMillis = nil, nil, -1
			}
		})
	}
	s1 := static("s1", 0)
	expect("static join", s1, "NONE")
	expect("second member with the instance id", static("s2", 0), "UNRELEASED_INSTANCE_ID")
	expect("static leave -2", static("s1", -2), "NONE")
	s2 := static("s2", 0)
	expect("static rejoin", s2, "NONE")
	if s2.Assignment == nil || len(s2.Assignment.Topics) != 1 || len(s2.Assignment.Topics[0].Partitions) != 2 {
		t.Errorf("static rejoin: assignment %+v", s2.Assignment)
	}
	expect("old member id of the instance", static("s1", 1), "FENCED_INSTANCE_ID")

	// Leave: the group is Empty and can be deleted.
	expect("leave", hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.MemberEpoch, r.SubscribedTopicNames, r.Topics = -1, nil, nil
	}), "NONE")
	del, _ = adm.DeleteGroups(ctx, "ge")
	if err := del["ge"].Err; err != nil {
		t.Errorf("DeleteGroups of the empty consumer group: %v", err)
	}
}

// A group's consumer.heartbeat.interval.ms (IncrementalAlterConfigs on the
// GROUP resource) is the interval its members are given; without it, the
// broker's group.consumer.heartbeat.interval.ms.
func TestConsumerGroup848GroupConfigs(t *testing.T) {
	const topic = "cg848c"
	c := minibrokertest.Start(t, minibrokertest.Set("group.consumer.heartbeat.interval.ms", "1234"), minibrokertest.Topic(topic, 1))
	cl := itest.NewClient(t, c.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	join := func(group string) *kmsg.ConsumerGroupHeartbeatResponse {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.RebalanceTimeoutMillis = group, "m", 5000
		r.SubscribedTopicNames, r.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := r.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("join %s: %v %+v", group, err, resp)
		}
		return resp
	}
	if got := join("plain").HeartbeatIntervalMillis; got != 1234 {
		t.Fatalf("broker setting: heartbeat interval %d, want 1234", got)
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "tuned"}
	rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "consumer.heartbeat.interval.ms", Value: kmsg.StringPtr("7000")}}
	alter.Resources = append(alter.Resources, rr)
	aresp, err := alter.RequestWith(ctx, cl)
	if err != nil || aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group config: %v %+v", err, aresp)
	}
	if got := join("tuned").HeartbeatIntervalMillis; got != 7000 {
		t.Fatalf("group config: heartbeat interval %d, want 7000", got)
	}
}

// A kgo member subscribed by regex (SubscribedTopicRegex, kgo.ConsumeRegex
// with ServerSideBalancer) is assigned a topic created after it joined, and
// reads it; a topic the regex does not match is not assigned.
func TestConsumerGroup848RegexNewTopic(t *testing.T) {
	c := minibrokertest.Start(t, append(itest.Fast848(), minibrokertest.Topic("orders-a", 1), minibrokertest.Topic("other", 1))...)
	cl := itest.New848Consumer(t, c.Addr(), "gre", []string{"orders-.*"}, kgo.ConsumeRegex())
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	if _, err := itest.KadmClient(t, c.Addr()).CreateTopic(ctx, 2, 1, nil, "orders-b"); err != nil {
		t.Fatal(err)
	}
	itest.WaitFor(t, "orders-b assigned to the regex member", func() bool {
		d := describe848(t, c.Addr(), "gre")
		if len(d.Members) != 1 {
			return false
		}
		topics := map[string]int{}
		for _, tp := range d.Members[0].Assignment.TopicPartitions {
			topics[tp.Topic] = len(tp.Partitions)
		}
		return d.State == "Stable" && topics["orders-a"] == 1 && topics["orders-b"] == 2 && len(topics) == 2
	})
}
