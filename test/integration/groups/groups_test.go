package groups

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/minibroker/minibroker/minibrokertest"
)

// groupMember is a kgo group consumer that tracks its assignment.
type groupMember struct {
	cl       *kgo.Client
	mu       sync.Mutex
	assigned map[int32]bool
}

func newGroupMember(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{assigned: map[int32]bool{}}
	base := []kgo.Opt{
		kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			for _, p := range a[topic] {
				m.assigned[p] = true
			}
			m.mu.Unlock()
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, cl *kgo.Client, r map[string][]int32) {
			cl.CommitUncommittedOffsets(context.Background())
			m.mu.Lock()
			for _, p := range r[topic] {
				delete(m.assigned, p)
			}
			m.mu.Unlock()
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			m.mu.Lock()
			for _, p := range l[topic] {
				delete(m.assigned, p)
			}
			m.mu.Unlock()
		}),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	t.Cleanup(cl.Close)
	return m
}

func (m *groupMember) assignment() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.assigned)
}

// pollInto polls once (briefly) and adds the record values to seen,
// failing on a duplicate.
func (m *groupMember) pollInto(t *testing.T, seen map[string]int, dups *int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	fs := m.cl.PollFetches(ctx)
	fs.EachError(func(topic string, p int32, err error) {
		if err != context.DeadlineExceeded {
			t.Logf("fetch %s/%d: %v", topic, p, err)
		}
	})
	for _, r := range fs.Records() {
		seen[string(r.Value)]++
		if seen[string(r.Value)] > 1 {
			*dups++
		}
	}
}

func (m *groupMember) commit(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// groupsConsumeExactly polls members until want records (values prefix-0..n-1)
// arrived, and fails on any other or duplicate record.
func groupsConsumeExactly(t *testing.T, prefix string, n int, members ...*groupMember) {
	t.Helper()
	seen := map[string]int{}
	dups := 0
	deadline := time.Now().Add(30 * time.Second)
	for len(seen) < n && time.Now().Before(deadline) {
		for _, m := range members {
			m.pollInto(t, seen, &dups)
		}
	}
	for v := range seen {
		var i int
		if _, err := fmt.Sscanf(v, prefix+"-%d", &i); err != nil || i >= n {
			t.Fatalf("unexpected record %q (want only %s-0..%d: committed offsets not resumed?)", v, prefix, n-1)
		}
	}
	if len(seen) != n || dups != 0 {
		t.Fatalf("consumed %d distinct of %d %s records, %d duplicates", len(seen), n, prefix, dups)
	}
}

// TestGroupsKgo: a kgo consumer group with two members splits the
// partitions, rebalances to the survivor when one leaves, and committed
// offsets resume after a member restart, a broker restart and a crash.
func TestGroupsKgo(t *testing.T) {
	const topic, group, parts = "gk", "gk-group", 4
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, parts))
	itest.GroupsProduce(t, c.Addr(), topic, "a", 40)

	// Two members consume everything exactly once between them.
	m1 := newGroupMember(t, c.Addr(), group, topic)
	m2 := newGroupMember(t, c.Addr(), group, topic)
	groupsConsumeExactly(t, "a", 40, m1, m2)
	itest.WaitFor(t, "both members assigned", func() bool {
		return m1.assignment() > 0 && m2.assignment() > 0 && m1.assignment()+m2.assignment() == parts
	})
	m1.commit(t)
	m2.commit(t)

	// m2 leaves: m1 takes every partition and reads only what is new.
	m2.cl.Close()
	itest.WaitFor(t, "survivor owns every partition", func() bool {
		m1.pollInto(t, map[string]int{}, new(int))
		return m1.assignment() == parts
	})
	itest.GroupsProduce(t, c.Addr(), topic, "b", 20)
	groupsConsumeExactly(t, "b", 20, m1)
	m1.commit(t)
	m1.cl.Close()

	// A member restart resumes from the committed offsets.
	itest.GroupsProduce(t, c.Addr(), topic, "c", 20)
	m3 := newGroupMember(t, c.Addr(), group, topic)
	groupsConsumeExactly(t, "c", 20, m3)
	m3.commit(t)
	m3.cl.Close()

	// So does a broker restart.
	c.Restart()
	itest.GroupsProduce(t, c.Addr(), topic, "d", 20)
	m4 := newGroupMember(t, c.Addr(), group, topic)
	groupsConsumeExactly(t, "d", 20, m4)
	m4.commit(t)
	m4.cl.Close()

	// And a crash right after the commits were acknowledged.
	c.Kill()
	c.Revive()
	itest.GroupsProduce(t, c.Addr(), topic, "e", 20)
	m5 := newGroupMember(t, c.Addr(), group, topic)
	groupsConsumeExactly(t, "e", 20, m5)
	m5.cl.Close()
}

// groupsCheckValues fails unless values are exactly prefix-0..n-1 (in any
// order, no duplicates).
func groupsCheckValues(t *testing.T, who, prefix string, n int, values []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, v := range values {
		var i int
		if _, err := fmt.Sscanf(v, prefix+"-%d", &i); err != nil || i >= n {
			t.Fatalf("%s: unexpected record %q (want only %s-0..%d: committed offsets not resumed?)", who, v, prefix, n-1)
		}
		if seen[v] {
			t.Fatalf("%s: duplicate record %q", who, v)
		}
		seen[v] = true
	}
	if len(seen) != n {
		t.Fatalf("%s: %d of %d %s records", who, len(seen), n, prefix)
	}
}

// TestGroupsSarama: sarama's consumer group, at several protocol versions,
// consumes and commits; a new member resumes from the committed offsets,
// also after a broker restart.
func TestGroupsSarama(t *testing.T) {
	versions := []sarama.KafkaVersion{sarama.V1_0_0_0, sarama.V2_3_0_0, sarama.V3_6_0_0}
	var opts []minibrokertest.Option
	for i := range versions {
		opts = append(opts, minibrokertest.Topic(fmt.Sprintf("gs%d", i), 3))
	}
	c := minibrokertest.Start(t, opts...)
	for i, v := range versions {
		topic, group := fmt.Sprintf("gs%d", i), fmt.Sprintf("sg%d", i)
		itest.GroupsProduce(t, c.Addr(), topic, "a", 30)
		groupsCheckValues(t, "sarama "+v.String(), "a", 30, itest.SaramaGroupConsume(t, c.Addr(), group, topic, v, 30))
		itest.GroupsProduce(t, c.Addr(), topic, "b", 10)
		groupsCheckValues(t, "sarama "+v.String()+" resumed", "b", 10, itest.SaramaGroupConsume(t, c.Addr(), group, topic, v, 10))
	}
	c.Restart()
	for i, v := range versions {
		topic, group := fmt.Sprintf("gs%d", i), fmt.Sprintf("sg%d", i)
		itest.GroupsProduce(t, c.Addr(), topic, "c", 10)
		groupsCheckValues(t, "sarama "+v.String()+" after restart", "c", 10, itest.SaramaGroupConsume(t, c.Addr(), group, topic, v, 10))
	}
}

// TestGroupsKafkaGo: kafka-go's Reader with a GroupID commits as it reads;
// a new reader resumes after the committed offsets, also after a crash.
func TestGroupsKafkaGo(t *testing.T) {
	const topic, group = "gkg", "kg"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 3))
	read := func(prefix string, n int) {
		t.Helper()
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: []string{c.Addr()}, GroupID: group, Topic: topic, StartOffset: kafka.FirstOffset,
			MaxWait: 100 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond,
			SessionTimeout: 6 * time.Second, RebalanceTimeout: 5 * time.Second,
			ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: 100 * time.Millisecond,
		})
		defer r.Close()
		var values []string
		for len(values) < n {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			m, err := r.ReadMessage(ctx) // commits synchronously (CommitInterval 0)
			cancel()
			if err != nil {
				t.Fatalf("kafka-go read %d of %d: %v", len(values), n, err)
			}
			values = append(values, string(m.Value))
		}
		// Nothing more should come.
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		if m, err := r.ReadMessage(ctx); err == nil {
			values = append(values, string(m.Value))
		}
		cancel()
		groupsCheckValues(t, "kafka-go", prefix, n, values)
	}
	itest.GroupsProduce(t, c.Addr(), topic, "a", 30)
	read("a", 30)
	itest.GroupsProduce(t, c.Addr(), topic, "b", 10)
	read("b", 10)
	c.Kill()
	c.Revive()
	itest.GroupsProduce(t, c.Addr(), topic, "c", 10)
	read("c", 10)
}

// TestGroupsKcat: librdkafka's balanced consumer (kcat -G) commits on
// close; the next run resumes after the committed offsets.
func TestGroupsKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not found on PATH: run `make deps` to install it (librdkafka group test)")
	}
	const topic, group = "gkc", "kc"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 2))
	read := func(prefix string, n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, "-b", c.Addr(), "-G", group, "-c", fmt.Sprint(n), "-f", "%s\n", "-q",
			"-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=200",
			"-X", "fetch.wait.max.ms=100", "-X", "topic.metadata.refresh.interval.ms=1000", topic)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kcat -G: %v\nstderr: %s", err, stderr.String())
		}
		groupsCheckValues(t, "kcat -G", prefix, n, strings.Fields(string(out)))
	}
	itest.GroupsProduce(t, c.Addr(), topic, "a", 20)
	read("a", 20)
	itest.GroupsProduce(t, c.Addr(), topic, "b", 10)
	read("b", 10)
	c.Restart()
	itest.GroupsProduce(t, c.Addr(), topic, "c", 10)
	read("c", 10)
}

// TestGroupsAdmin: kadm's view of groups — ListGroups (state and type
// filters), DescribeGroups, batched FindCoordinator and multi-group
// OffsetFetch, and the errors for deleting groups and offsets that are in
// use — plus the group metrics.
func TestGroupsAdmin(t *testing.T) {
	const topic, group = "ga", "ga-g"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 2))
	ctx := context.Background()
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	itest.GroupsProduce(t, c.Addr(), topic, "a", 10)

	m := newGroupMember(t, c.Addr(), group, topic)
	groupsConsumeExactly(t, "a", 10, m)
	itest.WaitFor(t, "member assigned", func() bool { return m.assignment() == 2 })
	m.commit(t)

	listed, err := adm.ListGroups(ctx, "Stable")
	if err != nil || len(listed) != 1 || listed[group].State != "Stable" || listed[group].ProtocolType != "consumer" {
		t.Fatalf("ListGroups(Stable) = %+v, %v", listed, err)
	}
	if listed, err := adm.ListGroups(ctx, "Empty"); err != nil || len(listed) != 0 {
		t.Fatalf("ListGroups(Empty) = %+v, %v", listed, err)
	}
	if listed, err := adm.ListGroupsByType(ctx, []string{"consumer"}); err != nil || len(listed) != 0 {
		t.Fatalf("ListGroupsByType(consumer) = %+v, %v (every group here is classic)", listed, err)
	}
	described, err := adm.DescribeGroups(ctx, group, "nope")
	if err != nil {
		t.Fatal(err)
	}
	d := described[group]
	if d.Err != nil || d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol == "" || len(d.Members) != 1 {
		t.Fatalf("DescribeGroups = %+v", d)
	}
	if a, ok := d.Members[0].Assigned.AsConsumer(); !ok || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 2 {
		t.Fatalf("described assignment = %+v", d.Members[0].Assigned)
	}
	if described["nope"].State != "Dead" {
		t.Fatalf("unknown group described as %q, want Dead", described["nope"].State)
	}
	for _, r := range adm.FindGroupCoordinators(ctx, group, "other") {
		if r.Err != nil || r.NodeID != 0 || r.Port == 0 {
			t.Fatalf("FindCoordinator(%s) = %+v", r.Name, r)
		}
	}

	// In use: neither the group nor its subscribed topic's offsets go, and
	// an admin commit is refused.
	if r, _ := adm.DeleteGroups(ctx, group); !errors.Is(r[group].Err, kerr.NonEmptyGroup) {
		t.Fatalf("DeleteGroups(active) = %v, want NON_EMPTY_GROUP", r[group].Err)
	}
	dr, err := adm.DeleteOffsets(ctx, group, kadm.TopicsSet{topic: {0: {}}})
	if err != nil || !errors.Is(dr[topic][0], kerr.GroupSubscribedToTopic) {
		t.Fatalf("DeleteOffsets(subscribed) = %v, %v", dr, err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	if cr, err := adm.CommitOffsets(ctx, group, os); err == nil && cr.Error() == nil {
		t.Fatal("admin commit to an active group succeeded")
	}

	// Metrics: one Stable group, one member, at least one rebalance.
	itest.WaitFor(t, "group metrics", func() bool {
		return gaugeValue(t, c, "minibroker_groups", "Stable") == 1 &&
			gaugeValue(t, c, "minibroker_group_members", "") == 1 &&
			gaugeValue(t, c, "minibroker_group_rebalances_total", "") >= 1
	})

	m.cl.Close() // leaves: the group is Empty
	itest.WaitFor(t, "group Empty", func() bool {
		d, err := adm.DescribeGroups(ctx, group)
		return err == nil && d[group].State == "Empty"
	})
	// Simple commits for a second group, then both fetched at once (v8+).
	os = kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 3, LeaderEpoch: -1, Metadata: "m"})
	if cr, err := adm.CommitOffsets(ctx, "ga-simple", os); err != nil || cr.Error() != nil {
		t.Fatalf("simple commit: %v %v", err, cr.Error())
	}
	many := adm.FetchManyOffsets(ctx, group, "ga-simple")
	if err := many.Error(); err != nil {
		t.Fatal(err)
	}
	if o, _ := many[group].Fetched.Lookup(topic, 0); o.At != 5 {
		t.Fatalf("fetched %s/0 = %+v, want 5", topic, o)
	}
	if o, _ := many["ga-simple"].Fetched.Lookup(topic, 1); o.At != 3 || o.Metadata != "m" {
		t.Fatalf("fetched simple %s/1 = %+v", topic, o)
	}
	// Empty: its offsets and then the group itself can go.
	if dr, err := adm.DeleteOffsets(ctx, group, kadm.TopicsSet{topic: {0: {}}}); err != nil || dr.Error() != nil {
		t.Fatalf("DeleteOffsets(empty group) = %v, %v", dr, err)
	}
	if r, err := adm.DeleteGroups(ctx, group); err != nil || r[group].Err != nil {
		t.Fatalf("DeleteGroups(empty) = %v, %v", r, err)
	}
	if r, _ := adm.DeleteGroups(ctx, group); !errors.Is(r[group].Err, kerr.GroupIDNotFound) {
		t.Fatalf("DeleteGroups(deleted) = %v, want GROUP_ID_NOT_FOUND", r[group].Err)
	}
	if listed, _ := adm.ListGroups(ctx); len(listed) != 1 {
		t.Fatalf("groups after delete: %v", listed.Groups())
	}
}

// gaugeValue reads one sample from the broker's registry (label state, if
// given).
func gaugeValue(t *testing.T, c *minibrokertest.Cluster, name, state string) float64 {
	t.Helper()
	mfs, err := c.Broker().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if state != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != state) {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// TestGroupsKgoVersions: kgo's group consumer pinned to older protocol
// versions (JoinGroup v2 without KIP-394, v4 with MEMBER_ID_REQUIRED, v6
// flexible with static membership, and the latest) joins, commits and
// resumes.
func TestGroupsKgoVersions(t *testing.T) {
	versions := []struct {
		name string
		v    *kversion.Versions
	}{{"0.11", kversion.V0_11_0()}, {"2.2", kversion.V2_2_0()}, {"2.4", kversion.V2_4_0()}, {"latest", kversion.Stable()}}
	var opts []minibrokertest.Option
	for i := range versions {
		opts = append(opts, minibrokertest.Topic(fmt.Sprintf("gv%d", i), 2))
	}
	c := minibrokertest.Start(t, opts...)
	for i, v := range versions {
		topic, group := fmt.Sprintf("gv%d", i), fmt.Sprintf("gv%d-g", i)
		itest.GroupsProduce(t, c.Addr(), topic, "a", 20)
		m := newGroupMember(t, c.Addr(), group, topic, kgo.MaxVersions(v.v))
		groupsConsumeExactly(t, "a", 20, m)
		m.commit(t)
		m.cl.Close()
		itest.GroupsProduce(t, c.Addr(), topic, "b", 10)
		m = newGroupMember(t, c.Addr(), group, topic, kgo.MaxVersions(v.v))
		groupsConsumeExactly(t, "b", 10, m)
		m.cl.Close()
	}
}

// TestGroupsKgoStaticMembership: a static member (group.instance.id) that
// restarts within its session gets its partitions back without a
// rebalance of the group; its old member id is fenced. (The range balancer:
// a restarted cooperative-sticky leader rejoins on purpose when its own plan
// differs from the kept one, as kgo does against Kafka too.)
func TestGroupsKgoStaticMembership(t *testing.T) {
	const topic, group, parts = "gst", "gst-g", 4
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, parts))
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	ctx := context.Background()
	itest.GroupsProduce(t, c.Addr(), topic, "a", 40)
	m1 := newGroupMember(t, c.Addr(), group, topic, kgo.InstanceID("i1"), kgo.Balancers(kgo.RangeBalancer()))
	m2 := newGroupMember(t, c.Addr(), group, topic, kgo.InstanceID("i2"), kgo.Balancers(kgo.RangeBalancer()))
	groupsConsumeExactly(t, "a", 40, m1, m2)
	itest.WaitFor(t, "both static members assigned", func() bool {
		return m1.assignment() > 0 && m2.assignment() > 0 && m1.assignment()+m2.assignment() == parts
	})
	m1.commit(t)
	m2.commit(t)
	time.Sleep(300 * time.Millisecond) // metrics follow the coordinator's 100ms tick
	before := gaugeValue(t, c, "minibroker_group_rebalances_total", "")
	d, _ := adm.DescribeGroups(ctx, group)
	oldIDs := map[string]string{}
	for _, m := range d[group].Members {
		oldIDs[*m.InstanceID] = m.MemberID
	}

	m1.cl.Close() // a static member does not leave the group on close
	if d, _ := adm.DescribeGroups(ctx, group); len(d[group].Members) != 2 {
		t.Fatalf("after a static member closed: %d members, want 2", len(d[group].Members))
	}
	m1 = newGroupMember(t, c.Addr(), group, topic, kgo.InstanceID("i1"), kgo.Balancers(kgo.RangeBalancer()))
	itest.WaitFor(t, "restarted static member assigned", func() bool {
		m1.pollInto(t, map[string]int{}, new(int))
		return m1.assignment() > 0
	})
	d, _ = adm.DescribeGroups(ctx, group)
	if d[group].State != "Stable" || len(d[group].Members) != 2 {
		t.Fatalf("group after static rejoin: %+v", d[group])
	}
	for _, m := range d[group].Members {
		if *m.InstanceID == "i1" && m.MemberID == oldIDs["i1"] {
			t.Fatal("restarted static member kept its old member id")
		}
		if *m.InstanceID == "i2" && m.MemberID != oldIDs["i2"] {
			t.Fatal("the other static member was replaced")
		}
	}
	time.Sleep(300 * time.Millisecond)
	if after := gaugeValue(t, c, "minibroker_group_rebalances_total", ""); after != before {
		t.Fatalf("a static member's restart rebalanced the group (%v → %v rebalances)", before, after)
	}
	// The old member id is fenced.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = group, oldIDs["i1"], 1
	inst := "i1"
	hb.InstanceID = &inst
	resp, err := hb.RequestWith(ctx, itest.NewClient(t, c.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); !errors.Is(err, kerr.FencedInstanceID) {
		t.Fatalf("heartbeat with the fenced member id: %v, want FENCED_INSTANCE_ID", err)
	}
}

// TestGroupsKgoMemberAcrossBrokerRestart: a member that stays up while the
// broker restarts (and later crashes) keeps consuming from its committed
// offsets: the group's membership was persisted, so its heartbeats and
// commits are accepted after the restart.
func TestGroupsKgoMemberAcrossBrokerRestart(t *testing.T) {
	const topic, group = "gr", "gr-g"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 2))
	itest.GroupsProduce(t, c.Addr(), topic, "a", 20)
	m := newGroupMember(t, c.Addr(), group, topic)
	groupsConsumeExactly(t, "a", 20, m)
	m.commit(t)
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	ctx := context.Background()
	before, _ := adm.DescribeGroups(ctx, group)

	c.Restart()
	after, err := adm.DescribeGroups(ctx, group)
	if err != nil || after[group].State != "Stable" || len(after[group].Members) != 1 ||
		after[group].Members[0].MemberID != before[group].Members[0].MemberID {
		t.Fatalf("group after a restart: %+v (before: %+v)", after[group], before[group])
	}
	itest.GroupsProduce(t, c.Addr(), topic, "b", 20)
	groupsConsumeExactly(t, "b", 20, m)
	m.commit(t)

	c.Kill()
	c.Revive()
	itest.GroupsProduce(t, c.Addr(), topic, "c", 20)
	groupsConsumeExactly(t, "c", 20, m)
	m.commit(t)
}

// TestGroupsBinaryKill9: the built binary is killed with SIGKILL while
// clients commit offsets as fast as they can; after each restart every
// partition's committed offset is at least the last one acknowledged.
func TestGroupsBinaryKill9(t *testing.T) {
	const topic, group, parts = "k9", "k9-g", 4
	dir := t.TempDir()
	p := itest.StartBinary(t, dir)
	ctx := context.Background()
	if _, err := kadm.NewClient(itest.NewClient(t, p.Addr)).CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var acked [parts]atomic.Int64
	next := int64(1) // offsets from 1, so an acked value of 0 means none yet
	for round := range 3 {
		adm := kadm.NewClient(itest.NewClient(t, p.Addr, kgo.RetryTimeout(time.Second)))
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for part := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for at := next; ; at++ {
					select {
					case <-stop:
						return
					default:
					}
					var os kadm.Offsets
					os.Add(kadm.Offset{Topic: topic, Partition: int32(part), At: at, LeaderEpoch: -1})
					cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					r, err := adm.CommitOffsets(cctx, group, os)
					cancel()
					if err == nil && r.Error() == nil {
						acked[part].Store(at)
					}
				}
			}()
		}
		time.Sleep(time.Duration(200+100*round) * time.Millisecond)
		// Kill only once every partition has had a commit of this round
		// acknowledged: on a loaded machine the first may take longer than
		// the sleep, and a kill before any acknowledgement proves nothing.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			all := true
			for part := range parts {
				all = all && acked[part].Load() >= next
			}
			if all {
				break
			}
		}
		p.Stop(t, syscall.SIGKILL)
		close(stop)
		wg.Wait()
		t.Logf("round %d: killed; acked %v", round, [parts]int64{acked[0].Load(), acked[1].Load(), acked[2].Load(), acked[3].Load()})
		next += 1 << 20

		p = itest.StartBinary(t, dir)
		fetched, err := kadm.NewClient(itest.NewClient(t, p.Addr)).FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		for part := range parts {
			got, _ := fetched.Lookup(topic, int32(part))
			if want := acked[part].Load(); got.At < want || want < next-1<<20 {
				t.Fatalf("round %d, partition %d: committed offset %d after kill -9, last acknowledged %d", round, part, got.At, want)
			}
		}
	}
}

// TestGroupsWireVersions: one member's whole life — JoinGroup (with
// MEMBER_ID_REQUIRED from v4), SyncGroup, Heartbeat, OffsetCommit,
// OffsetFetch, LeaveGroup — at every JoinGroup version, with the other
// group APIs capped to the versions a client of that era sends.
func TestGroupsWireVersions(t *testing.T) {
	const topic = "gw"
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, 1))
	ctx := context.Background()
	for v := int16(0); v <= 9; v++ {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			vs := kversion.Stable()
			// OffsetCommit/OffsetFetch versions of the same client era.
			commitV := []int16{2, 2, 3, 4, 6, 7, 8, 8, 9, 9}[v]
			fetchV := []int16{1, 1, 3, 4, 5, 6, 6, 6, 8, 9}[v]
			caps := map[int16]int16{11: v, 14: min(v, 5), 12: min(v, 4), 13: min(v, 5), 8: commitV, 9: fetchV}
			for k, max := range caps {
				vs.SetMaxKeyVersion(k, max)
			}
			cl := itest.NewClient(t, c.Addr(), kgo.MaxVersions(vs))
			group := fmt.Sprint("gw-", v)
			meta := (&kmsg.ConsumerMemberMetadata{Topics: []string{topic}}).AppendTo(nil)

			join := kmsg.NewPtrJoinGroupRequest()
			join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = group, 10000, 5000, "consumer"
			join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta}}
			jr, err := join.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if v >= 4 {
				if err := kerr.ErrorForCode(jr.ErrorCode); !errors.Is(err, kerr.MemberIDRequired) || jr.MemberID == "" {
					t.Fatalf("first join v%d: %v member %q, want MEMBER_ID_REQUIRED with an id", v, err, jr.MemberID)
				}
				join.MemberID = jr.MemberID
				if jr, err = join.RequestWith(ctx, cl); err != nil {
					t.Fatal(err)
				}
			}
			if jr.ErrorCode != 0 || jr.Generation != 1 || jr.LeaderID != jr.MemberID || len(jr.Members) != 1 || jr.Protocol == nil || *jr.Protocol != "range" {
				t.Fatalf("join v%d: %+v", v, jr)
			}
			member := jr.MemberID

			sync := kmsg.NewPtrSyncGroupRequest()
			sync.Group, sync.Generation, sync.MemberID = group, 1, member
			assignment := (&kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: []int32{0}}}}).AppendTo(nil)
			sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: assignment}}
			sr, err := sync.RequestWith(ctx, cl)
			if err != nil || sr.ErrorCode != 0 || string(sr.MemberAssignment) != string(assignment) {
				t.Fatalf("sync: %+v, %v", sr, err)
			}

			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Group, hb.Generation, hb.MemberID = group, 1, member
			if hr, err := hb.RequestWith(ctx, cl); err != nil || hr.ErrorCode != 0 {
				t.Fatalf("heartbeat: %+v, %v", hr, err)
			}
			hb.Generation = 7
			if hr, _ := hb.RequestWith(ctx, cl); hr.ErrorCode != kerr.IllegalGeneration.Code {
				t.Fatalf("heartbeat of a wrong generation: %v", kerr.ErrorForCode(hr.ErrorCode))
			}

			commit := kmsg.NewPtrOffsetCommitRequest()
			commit.Group, commit.Generation, commit.MemberID = group, 1, member
			commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 17, LeaderEpoch: -1}}}}
			if cr, err := commit.RequestWith(ctx, cl); err != nil || cr.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("commit: %+v, %v", cr, err)
			}
			fetch := kmsg.NewPtrOffsetFetchRequest()
			if fetchV < 8 {
				fetch.Group = group
				fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
			} else {
				fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
			}
			fr, err := fetch.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			var got int64 = -2
			if fetchV < 8 && len(fr.Topics) == 1 && len(fr.Topics[0].Partitions) == 1 {
				got = fr.Topics[0].Partitions[0].Offset
			} else if fetchV >= 8 && len(fr.Groups) == 1 && len(fr.Groups[0].Topics) == 1 && len(fr.Groups[0].Topics[0].Partitions) == 1 {
				got = fr.Groups[0].Topics[0].Partitions[0].Offset
			}
			if got != 17 {
				t.Fatalf("fetch v%d: %+v", fetchV, fr)
			}

			leave := kmsg.NewPtrLeaveGroupRequest()
			leave.Group, leave.MemberID = group, member
			leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}}
			lr, err := leave.RequestWith(ctx, cl)
			if err != nil || lr.ErrorCode != 0 || (v >= 3 && (len(lr.Members) != 1 || lr.Members[0].ErrorCode != 0)) {
				t.Fatalf("leave: %+v, %v", lr, err)
			}
			if d, _ := kadm.NewClient(cl).DescribeGroups(ctx, group); d[group].State != "Empty" {
				t.Fatalf("after leave: %s", d[group].State)
			}
		})
	}
}
