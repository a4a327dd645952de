package groups

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// A KIP-848 group survives a crash of the in-process broker (no flush
// beyond what each request waited for): the group, its epochs, members
// and assignments are back after the restart, and the member's next
// heartbeat at its epoch is accepted without a rebalance.
func TestConsumerGroup848SurvivesCrash(t *testing.T) {
	const topic = "cg848k"
	c := minibrokertest.Start(t, append(itest.Fast848(), minibrokertest.Topic(topic, 3))...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hb := func(member string, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		cl := itest.NewClient(t, c.Addr())
		defer cl.Close()
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch = "gk", member, epoch
		r.RebalanceTimeoutMillis, r.Topics = -1, owned
		if epoch == 0 {
			r.RebalanceTimeoutMillis, r.SubscribedTopicNames = 5000, []string{topic}
			r.InstanceID = kmsg.StringPtr("inst-" + member)
		}
		resp, err := r.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat %s epoch %d: %v %+v", member, epoch, err, resp)
		}
		return resp
	}
	a := hb("a", 0, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	b := hb("b", 0, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	aOwned := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	owned := func(r *kmsg.ConsumerGroupHeartbeatResponse) []kmsg.ConsumerGroupHeartbeatRequestTopic {
		if r.Assignment == nil { // unchanged
			return aOwned
		}
		out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		defer func() { aOwned = out }()
		for _, t := range r.Assignment.Topics {
			out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
		}
		return out
	}
	// a revokes what b is to get; a mid-rebalance state is what crashes.
	a2 := hb("a", a.MemberEpoch, owned(a))
	before := describe848(t, c.Addr(), "gk")
	c.Kill()
	c.Revive()
	after := describe848(t, c.Addr(), "gk")
	bj, _ := json.Marshal(before)
	aj, _ := json.Marshal(after)
	if string(bj) != string(aj) {
		t.Fatalf("after the crash:\n%s\nbefore:\n%s", aj, bj)
	}
	if before.State != "Reconciling" {
		t.Fatalf("the crash was not mid-rebalance: %s", before.State)
	}
	// The members go on where they were.
	a3 := hb("a", a2.MemberEpoch, owned(a2))
	hb("b", b.MemberEpoch, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	hb("a", a3.MemberEpoch, owned(a3))
	itest.WaitFor(t, "the group Stable after the restart", func() bool {
		hb("b", describe848(t, c.Addr(), "gk").Epoch, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
		return describe848(t, c.Addr(), "gk").State == "Stable"
	})
}

// kill -9 of the built binary while a KIP-848 group rebalances (a third
// kgo member with ServerSideBalancer joining two that consume and commit
// after each poll), twice: every commit the broker acknowledged is there
// after each restart, and a member joining at the end resumes at the
// committed offsets.
func TestConsumerGroup848BinaryKill9(t *testing.T) {
	const topic, group, parts = "k848", "k848-g", 6
	dir := t.TempDir()
	args := []string{"--set", "group.consumer.heartbeat.interval.ms=100", "--set", "group.consumer.session.timeout.ms=2000"}
	p := itest.StartBinary(t, dir, args...)
	ctx := context.Background()
	if _, err := kadm.NewClient(itest.NewClient(t, p.Addr)).CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := range 60 { // small batches: a fetch returns a few, so the group consumes for a while
		itest.GroupsProduce(t, p.Addr, topic, fmt.Sprintf("r%d", i), 100)
	}

	var mu sync.Mutex
	acked := map[int32]int64{} // partition → highest offset a commit was acknowledged at
	member := func(stop <-chan struct{}) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond),
			kgo.FetchMaxPartitionBytes(1<<10), kgo.RetryTimeout(time.Second))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.CloseAllowingRebalance()
		pctx, cancel := context.WithCancel(ctx)
		go func() { <-stop; cancel() }()
		for pctx.Err() == nil {
			cl.PollFetches(pctx)
			time.Sleep(100 * time.Millisecond) // work on the records
			cl.CommitOffsetsSync(pctx, cl.UncommittedOffsets(), func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				if err != nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for i, rt := range resp.Topics {
					for j, rp := range rt.Partitions {
						if rp.ErrorCode == 0 {
							at := req.Topics[i].Partitions[j].Offset
							acked[rp.Partition] = max(acked[rp.Partition], at)
						}
					}
				}
			})
		}
	}
	for round := range 2 {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		start := func() {
			wg.Add(1)
			go func() { defer wg.Done(); member(stop) }()
		}
		start()
		start()
		time.Sleep(300 * time.Millisecond)
		if round > 0 {
			// The killed run's members hold their partitions until their
			// sessions (2 s, from the restart) end.
			time.Sleep(2500 * time.Millisecond)
		}
		start() // a third member joins: the group rebalances
		time.Sleep(time.Duration(150+100*round) * time.Millisecond)
		// A loaded machine may not have had a commit acknowledged yet: the
		// kill must come after one (the check below needs it).
		itest.WaitFor(t, "a commit acknowledged before the kill", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) > 0
		})
		p.Stop(t, syscall.SIGKILL)
		close(stop)
		wg.Wait()
		mu.Lock()
		snapshot := fmt.Sprint(acked)
		want := map[int32]int64{}
		for k, v := range acked {
			want[k] = v
		}
		mu.Unlock()
		t.Logf("round %d: killed; acknowledged commits %s", round, snapshot)

		p = itest.StartBinary(t, dir, args...)
		fetched, err := kadm.NewClient(itest.NewClient(t, p.Addr)).FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		for part, at := range want {
			got, _ := fetched.Lookup(topic, part)
			if got.At < at {
				t.Fatalf("round %d, partition %d: committed offset %d after kill -9, acknowledged %d", round, part, got.At, at)
			}
		}
		if len(want) == 0 {
			t.Fatalf("round %d: no commit acknowledged before the kill", round)
		}
	}
	// A member joining after the restarts starts at the committed offsets.
	fetched, err := kadm.NewClient(itest.NewClient(t, p.Addr)).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	cl := itest.New848Consumer(t, p.Addr, group, []string{topic}, kgo.DisableAutoCommit())
	first := map[int32]int64{}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(first) < parts && pctx.Err() == nil {
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
		})
	}
	for part, off := range first {
		committed, ok := fetched.Lookup(topic, part)
		want := int64(0)
		if ok && committed.At >= 0 {
			want = committed.At
		}
		if off != want {
			t.Fatalf("partition %d: the new member started at %d, committed %d", part, off, want)
		}
	}
}
