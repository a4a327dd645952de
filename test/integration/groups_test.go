package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// produceN writes n records (values prefix-0..n-1) round-robin over the
// topic's partitions.
func produceN(t *testing.T, addr, topic, prefix string, n int) {
	t.Helper()
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
}

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

// consumeExactly polls members until want records (values prefix-0..n-1)
// arrived, and fails on any other or duplicate record.
func consumeExactly(t *testing.T, prefix string, n int, members ...*groupMember) {
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

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestGroupsKgo: a kgo consumer group with two members splits the
// partitions, rebalances to the survivor when one leaves, and committed
// offsets resume after a member restart, a broker restart and a crash.
func TestGroupsKgo(t *testing.T) {
	const topic, group, parts = "gk", "gk-group", 4
	c := minibrokertest.Start(t, minibrokertest.Topic(topic, parts))
	produceN(t, c.Addr(), topic, "a", 40)

	// Two members consume everything exactly once between them.
	m1 := newGroupMember(t, c.Addr(), group, topic)
	m2 := newGroupMember(t, c.Addr(), group, topic)
	consumeExactly(t, "a", 40, m1, m2)
	waitFor(t, "both members assigned", func() bool {
		return m1.assignment() > 0 && m2.assignment() > 0 && m1.assignment()+m2.assignment() == parts
	})
	m1.commit(t)
	m2.commit(t)

	// m2 leaves: m1 takes every partition and reads only what is new.
	m2.cl.Close()
	waitFor(t, "survivor owns every partition", func() bool {
		m1.pollInto(t, map[string]int{}, new(int))
		return m1.assignment() == parts
	})
	produceN(t, c.Addr(), topic, "b", 20)
	consumeExactly(t, "b", 20, m1)
	m1.commit(t)
	m1.cl.Close()

	// A member restart resumes from the committed offsets.
	produceN(t, c.Addr(), topic, "c", 20)
	m3 := newGroupMember(t, c.Addr(), group, topic)
	consumeExactly(t, "c", 20, m3)
	m3.commit(t)
	m3.cl.Close()

	// So does a broker restart.
	c.Restart()
	produceN(t, c.Addr(), topic, "d", 20)
	m4 := newGroupMember(t, c.Addr(), group, topic)
	consumeExactly(t, "d", 20, m4)
	m4.commit(t)
	m4.cl.Close()

	// And a crash right after the commits were acknowledged.
	c.Kill()
	c.Revive()
	produceN(t, c.Addr(), topic, "e", 20)
	m5 := newGroupMember(t, c.Addr(), group, topic)
	consumeExactly(t, "e", 20, m5)
	m5.cl.Close()
}
