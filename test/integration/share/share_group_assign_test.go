package share

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
	"github.com/minibroker/minibroker/test/integration/itest"
)

// shareAssignments describes group: member id -> partitions of its one
// topic, once every member is at the assignment epoch; nil before.
func shareAssignments(t *testing.T, cl *kgo.Client, group string) map[string][]int32 {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil && len(resp.Groups) == 1 && resp.Groups[0].ErrorCode == kerr.GroupIDNotFound.Code {
		return nil // no member has joined yet
	}
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("describe: %v %+v", err, resp)
	}
	g := resp.Groups[0]
	out := map[string][]int32{}
	for _, m := range g.Members {
		if m.MemberEpoch != g.AssignmentEpoch {
			return nil
		}
		var ps []int32
		for _, tp := range m.Assignment.TopicPartitions {
			ps = append(ps, tp.Partitions...)
		}
		slices.Sort(ps)
		out[m.MemberID] = ps
	}
	return out
}

// Six kgo share consumers join a 4-partition topic one by one, then
// three leave: after each change, once the group is stable, every
// partition has a member and the members are balanced (one partition
// each, each shared by at most 2, with 4 or more members; with fewer,
// one member a partition and at most ceil(4/M) each), and the assignment
// is sticky: a member that stays keeps a subset of what it held after a
// join and a superset after a leave (from an unshared assignment).
// The assignor's rules
// and its negative control are internal/share's TestAssignSticky.
func TestShareGroupAssignorJoinLeave(t *testing.T) {
	const topic, group, P = "sa", "sa", 4
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, P),
		minibrokertest.Set("group.share.session.timeout.ms", "30000"),
		minibrokertest.Set("group.share.heartbeat.interval.ms", "300"))
	itest.SetShareEarliest(t, c.Addr(), group)
	admin := itest.NewClient(t, c.Addr())
	stable := func(n int) map[string][]int32 {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if a := shareAssignments(t, admin, group); a != nil && len(a) == n {
				return a
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("the group never settled at %d members", n)
		return nil
	}
	check := func(before, after map[string][]int32, joined bool) {
		t.Helper()
		M := len(after)
		sharing := make([]int, P)
		for id, ps := range after {
			for _, p := range ps {
				sharing[p]++
			}
			if (M >= P && len(ps) != 1) || (M < P && (len(ps) == 0 || len(ps) > (P+M-1)/M)) {
				t.Fatalf("%d members: %s holds %v (%v)", M, id, ps, after)
			}
		}
		for p, n := range sharing {
			if n == 0 || (M < P && n > 1) || n > (M+P-1)/P {
				t.Fatalf("%d members: partition %d has %d (%v)", M, p, n, after)
			}
		}
		if !joined && len(before) > P {
			return
		}
		for id, was := range before {
			now, ok := after[id]
			if !ok {
				continue
			}
			small, big := now, was
			if !joined && M < P {
				small, big = was, now
			}
			for _, p := range small {
				if !slices.Contains(big, p) {
					t.Fatalf("member %s held %v, now %v", id, was, now)
				}
			}
		}
	}
	var consumers []*kgo.Client
	prev := map[string][]int32{}
	for i := 1; i <= 6; i++ {
		consumers = append(consumers, newShareConsumer(t, c.Addr(), group, topic))
		cur := stable(i)
		check(prev, cur, true)
		t.Logf("%d members: %v", i, cur)
		prev = cur
	}
	for i := 0; i < 3; i++ {
		consumers[i].Close()
		cur := stable(5 - i)
		check(prev, cur, false)
		t.Logf("%d members: %v", 5-i, cur)
		prev = cur
	}
}
