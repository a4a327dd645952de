package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/coordinator"
)

// ledgerMember is one kgo group member of a ledger run: classic (with
// the given balancer) or speaking the consumer protocol (balancer nil:
// kgo.ServerSideBalancer with the cooperative-sticky balancer, which
// kgo maps to the uniform assignor).
type ledgerMember struct {
	cl   *kgo.Client
	stop context.CancelFunc
	done chan struct{}
	l    *ownershipLedger
	name string
}

func startLedgerMember(t *testing.T, ctx context.Context, b *Broker, l *ownershipLedger, topic, group, name string, classic kgo.GroupBalancer) *ledgerMember {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(50 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { l.assigned(name, a[topic]) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			cl.CommitUncommittedOffsets(ctx)
			l.released(name, r[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { l.released(name, r[topic]) }),
	}
	if classic == nil {
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	} else {
		opts = append(opts, kgo.Balancers(classic), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(200*time.Millisecond),
			kgo.RebalanceTimeout(5*time.Second))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	m := &ledgerMember{cl: cl, stop: stop, done: make(chan struct{}), l: l, name: name}
	go func() {
		defer close(m.done)
		for mctx.Err() == nil {
			fs := cl.PollFetches(mctx)
			fs.EachRecord(func(r *kgo.Record) {
				l.mu.Lock()
				l.reads[string(r.Value)]++
				l.mu.Unlock()
			})
			cl.CommitUncommittedOffsets(mctx)
		}
	}()
	return m
}

func (m *ledgerMember) leave() {
	m.stop()
	<-m.done
	m.l.stopped(m.name)
	m.cl.Close() // leaves the group (revoking first)
}

// mixedView is the group as the coordinator describes it: its type, and
// for a consumer group its state, members by MemberType and partitions
// assigned; for a classic group its state and member count.
type mixedView struct {
	typ, state        string
	classic, consumer int
	assigned          int
}

func viewGroup(ctx context.Context, cl *kgo.Client, group string) mixedView {
	lg := kmsg.NewPtrListGroupsRequest()
	lresp, err := lg.RequestWith(ctx, cl)
	if err != nil {
		return mixedView{}
	}
	var v mixedView
	for _, g := range lresp.Groups {
		if g.Group == group {
			v.typ = g.GroupType
		}
	}
	switch v.typ {
	case "consumer":
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.Groups[0].ErrorCode != 0 {
			return mixedView{}
		}
		v.state = resp.Groups[0].State
		for _, m := range resp.Groups[0].Members {
			if m.MemberType == 0 {
				v.classic++
			} else {
				v.consumer++
			}
			for _, tp := range m.Assignment.TopicPartitions {
				v.assigned += len(tp.Partitions)
			}
		}
	case "classic":
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return mixedView{}
		}
		v.state, v.classic = resp.Groups[0].State, len(resp.Groups[0].Members)
	}
	return v
}

// mixedRun: while a producer writes to 8 partitions, 3 classic kgo
// members form a classic group; a member speaking the consumer protocol
// joins (the group is upgraded); a classic and a second consumer-protocol
// member join the consumer group; both consumer-protocol members leave
// (the group is downgraded to classic, its 4 classic members rebalance).
// Every record is read; it returns the overlaps the ledger saw.
func mixedRun(t *testing.T, b *Broker, balancer func() kgo.GroupBalancer, topic, group string) []string {
	l := &ownershipLedger{owners: map[int32]map[string]bool{}, reads: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var produced atomic.Int64
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	prodDone, stopProd := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(prodDone)
		for i := 0; ; i++ {
			select {
			case <-stopProd:
				return
			default:
			}
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err == nil {
				produced.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	waitView := func(what string, ok func(mixedView) bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		var v mixedView
		for v = viewGroup(ctx, prod, group); !ok(v); v = viewGroup(ctx, prod, group) {
			if time.Now().After(deadline) {
				t.Fatalf("group %s: %s not reached in 60 s (last seen %+v)", group, what, v)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("group %s: %s: %+v", group, what, v)
	}

	var classics, consumers []*ledgerMember
	for i := range 3 {
		classics = append(classics, startLedgerMember(t, ctx, b, l, topic, group, fmt.Sprintf("c%d", i), balancer()))
	}
	waitView("a classic group of 3, Stable", func(v mixedView) bool { return v.typ == "classic" && v.state == "Stable" && v.classic == 3 })
	consumers = append(consumers, startLedgerMember(t, ctx, b, l, topic, group, "k0", nil))
	waitView("upgraded: a consumer group of 3 classic members and 1 consumer-protocol member, Stable",
		func(v mixedView) bool {
			return v.typ == "consumer" && v.state == "Stable" && v.classic == 3 && v.consumer == 1 && v.assigned == 8
		})
	classics = append(classics, startLedgerMember(t, ctx, b, l, topic, group, "c3", balancer()))
	consumers = append(consumers, startLedgerMember(t, ctx, b, l, topic, group, "k1", nil))
	waitView("mixed: 4 classic and 2 consumer-protocol members, Stable", func(v mixedView) bool {
		return v.typ == "consumer" && v.state == "Stable" && v.classic == 4 && v.consumer == 2 && v.assigned == 8
	})
	for _, m := range consumers {
		m.leave()
	}
	waitView("downgraded: a classic group of 4, Stable", func(v mixedView) bool { return v.typ == "classic" && v.state == "Stable" && v.classic == 4 })

	close(stopProd)
	<-prodDone
	want := produced.Load()
	deadline := time.Now().Add(60 * time.Second)
	for {
		l.mu.Lock()
		got := 0
		for i := range want {
			if l.reads[fmt.Sprintf("v%d", i)] > 0 {
				got++
			}
		}
		l.mu.Unlock()
		if int64(got) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s: %d of %d records read (records lost)", group, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, m := range classics {
		m.leave()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	dups := 0
	for _, n := range l.reads {
		if n > 1 {
			dups++
		}
	}
	t.Logf("group %s: %d records produced, all read, %d read more than once, %d overlaps", group, want, dups, len(l.overlaps))
	return l.overlaps
}

// Classic kgo members (cooperative-sticky, and range: eager) and kgo
// members speaking the consumer protocol (ServerSideBalancer) in one
// group, under load: the classic group is upgraded when the first
// consumer-protocol member joins, served mixed, and downgraded when the
// last one leaves; from the clients' own assigned/revoked/lost callbacks
// no partition is ever held by two members at once, and every record is
// read. Negative control: with the coordinator assigning a partition
// before its owner revoked it (the group hook AssignBeforeRevoke), the mixed
// group holds partitions twice.
func TestConsumerGroupMixedProtocolsLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("ledger run: several seconds of rebalances")
	}
	for _, tc := range []struct {
		name               string
		balancer           func() kgo.GroupBalancer
		assignBeforeRevoke bool
	}{
		{"cooperative-sticky", kgo.CooperativeStickyBalancer, false},
		{"range", kgo.RangeBalancer, false},
		{"negative-control-assign-before-revoke", kgo.CooperativeStickyBalancer, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", ""
			for k, v := range map[string]string{"group.consumer.heartbeat.interval.ms": "200", "group.consumer.session.timeout.ms": "6000",
				"group.initial.rebalance.delay.ms": "0"} {
				if err := cfg.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			b, cl := serveWith(t, Options{Config: cfg,
				private: knobs{groupHooks: coordinator.TestHooks{AssignBeforeRevoke: tc.assignBeforeRevoke}}})
			createTopics(t, cl, false, map[string]int32{"mixed": 8})
			overlaps := mixedRun(t, b, tc.balancer, "mixed", "gmixed")
			if tc.assignBeforeRevoke {
				if len(overlaps) == 0 {
					t.Fatal("negative control: no partition held by two members with assignment before revocation")
				}
				t.Logf("negative control: %d overlaps, e.g. %s", len(overlaps), overlaps[0])
				return
			}
			if len(overlaps) > 0 {
				t.Fatalf("%d partitions held by two members at once, e.g. %s", len(overlaps), overlaps[0])
			}
		})
	}
}
