package clients

import (
	"fmt"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// The consumer-group rows of the compat matrix (classic and KIP-848
// groups) and the waits they share; the other rows' helpers are in
// helpers_compat_test.go.

// compatGroupRow: two members of a group split a four-partition topic;
// both commit what they read; one leaves; the survivor takes every
// partition and resumes from the committed offsets: exactly the new
// records, none lost, none again.
func compatGroupRow(t *testing.T, m *compatMatrix, client string, c *minibrokertest.Cluster,
	join func(t *testing.T, group, topic string) itest.CompatMember) {
	compatGroupCell(t, m, client, c, rowGroup, "grp", waitGroupAssignment, join)
}

// compatGroup848Row is compatGroupRow with a KIP-848 consumer group: join
// must make a member speaking the consumer group protocol; the group's
// assignment is read with ConsumerGroupDescribe.
func compatGroup848Row(t *testing.T, m *compatMatrix, client string, c *minibrokertest.Cluster,
	join func(t *testing.T, group, topic string) itest.CompatMember) {
	compatGroupCell(t, m, client, c, rowGroup848, "grp848", waitGroup848Assignment, join)
}

func compatGroupCell(t *testing.T, m *compatMatrix, client string, c *minibrokertest.Cluster, row compatRow, topic string,
	wait func(t *testing.T, adm *kadm.Client, group, topic string, members int) map[string][]int32,
	join func(t *testing.T, group, topic string) itest.CompatMember) {
	m.cell(t, client, row, func(t *testing.T) string {
		const parts = 4
		group := "compat-" + topic
		itest.CreateCompatTopic(t, c, topic, parts)
		adm := itest.KadmClient(t, c.Addr())
		m1 := join(t, group, topic)
		m2 := join(t, group, topic)
		owners := wait(t, adm, group, topic, 2)
		produce := func(prefix string, perPartition int) map[string]int32 {
			cl := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			defer cl.Close()
			where := map[string]int32{}
			var recs []*kgo.Record
			for p := range int32(parts) {
				for i := range perPartition {
					v := compatValue(fmt.Sprintf("%s-p%d", prefix, p), i)
					where[v] = p
					recs = append(recs, &kgo.Record{Partition: p, Value: []byte(v)})
				}
			}
			if err := cl.ProduceSync(itest.CompatCtx(t), recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			return where
		}
		first := produce("a", 10)
		itest.WaitFor(t, "the two members to read the 40 records", func() bool {
			return len(m1.Records())+len(m2.Records()) >= len(first)
		})
		// Each member read only its own partitions; together everything once.
		seen := map[string]bool{}
		members := map[string]itest.CompatMember{"m1": m1, "m2": m2}
		var ownersOf []map[int32]bool
		for _, name := range []string{"m1", "m2"} {
			mine := map[int32]bool{}
			for _, r := range members[name].Records() {
				if seen[r.Value] || first[r.Value] != r.Partition {
					t.Fatalf("%s read %s from partition %d (duplicate %v)", name, short(r.Value), r.Partition, seen[r.Value])
				}
				seen[r.Value] = true
				mine[r.Partition] = true
			}
			ownersOf = append(ownersOf, mine)
		}
		if len(seen) != len(first) || len(ownersOf[0]) == 0 || len(ownersOf[1]) == 0 {
			t.Fatalf("members read %d of %d records; partitions %v and %v (assignment %v)", len(seen), len(first), ownersOf[0], ownersOf[1], owners)
		}
		waitCommitted(t, adm, group, topic, parts, 10)

		n1 := len(m1.Records())
		m2.Close(t)
		wait(t, adm, group, topic, 1)
		second := produce("b", 5)
		itest.WaitFor(t, "the survivor to read the 20 new records", func() bool { return len(m1.Records()) >= n1+len(second) })
		got := map[string]bool{}
		for _, r := range m1.Records()[n1:] {
			if _, ok := second[r.Value]; !ok || got[r.Value] || second[r.Value] != r.Partition {
				t.Fatalf("survivor read %s from partition %d after the rebalance (resumed before the committed offset?)", short(r.Value), r.Partition)
			}
			got[r.Value] = true
		}
		waitCommitted(t, adm, group, topic, parts, 15)
		m1.Close(t)
		if n := len(m1.Records()) - n1; n != len(second) {
			t.Fatalf("survivor read %d records after the rebalance, want %d", n, len(second))
		}
		return ""
	})
}

// waitGroup848Assignment is waitGroupAssignment for a KIP-848 consumer
// group (ConsumerGroupDescribe): Stable, members members each holding at
// least one of the 4 partitions of topic, all held.
func waitGroup848Assignment(t *testing.T, adm *kadm.Client, group, topic string, members int) map[string][]int32 {
	t.Helper()
	return waitAssignment(t, "consumer group "+group, members, func() (string, int, map[string][]int32, error) {
		dg, err := adm.DescribeConsumerGroups(itest.CompatCtx(t), group)
		if err != nil {
			return "", 0, nil, err
		}
		g := dg[group]
		out := map[string][]int32{}
		for _, mem := range g.Members {
			for p := range mem.Assignment[topic] {
				out[mem.MemberID] = append(out[mem.MemberID], p)
			}
		}
		return g.State, len(g.Members), out, g.Err
	})
}

// waitGroupAssignment waits until the group is Stable with members
// members, each assigned at least one partition of topic, all partitions
// assigned; it returns member id → partitions.
func waitGroupAssignment(t *testing.T, adm *kadm.Client, group, topic string, members int) map[string][]int32 {
	t.Helper()
	return waitAssignment(t, "group "+group, members, func() (string, int, map[string][]int32, error) {
		dg, err := adm.DescribeGroups(itest.CompatCtx(t), group)
		if err != nil {
			return "", 0, nil, err
		}
		g := dg[group]
		out := map[string][]int32{}
		for _, mem := range g.Members {
			if a, ok := mem.Assigned.AsConsumer(); ok {
				for _, tp := range a.Topics {
					if tp.Topic == topic {
						out[mem.MemberID] = append(out[mem.MemberID], tp.Partitions...)
					}
				}
			}
		}
		return g.State, len(g.Members), out, nil
	})
}

// waitAssignment polls describe until the group is Stable with members
// members, each owning at least one partition, the 4 partitions all
// owned; it returns member id → partitions.
func waitAssignment(t *testing.T, what string, members int, describe func() (state string, n int, owned map[string][]int32, err error)) map[string][]int32 {
	t.Helper()
	var last string
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		state, n, out, err := describe()
		total := 0
		for _, ps := range out {
			total += len(ps)
		}
		last = fmt.Sprintf("error %v, state %s, %d members, assignment %v", err, state, n, out)
		if err == nil && state == "Stable" && n == members && len(out) == members && total == 4 {
			return out
		}
	}
	t.Fatalf("%s never Stable with %d members owning the 4 partitions: %s", what, members, last)
	return nil
}

// waitCommitted waits until the group committed offset want on every
// partition of topic.
func waitCommitted(t *testing.T, adm *kadm.Client, group, topic string, parts int32, want int64) {
	t.Helper()
	var last string
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		offs, err := adm.FetchOffsets(itest.CompatCtx(t), group)
		if err != nil {
			last = err.Error()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		done := true
		var got []int64
		for p := range parts {
			o, ok := offs.Lookup(topic, p)
			at := int64(-1)
			if ok && o.Err == nil {
				at = o.At
			}
			got = append(got, at)
			done = done && at == want
		}
		if done {
			return
		}
		last = fmt.Sprint(got)
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("group %s never committed offset %d on every partition of %s: last %s", group, want, topic, last)
}
