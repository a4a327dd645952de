package broker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/coordinator"
)

// ownershipLedger records, per partition, which members hold it (from
// the clients' assigned / revoked / lost callbacks) and every record each
// member read.
type ownershipLedger struct {
	mu       sync.Mutex
	owners   map[int32]map[string]bool
	overlaps []string
	reads    map[string]int // value → times read
}

func (l *ownershipLedger) assigned(member string, ps []int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ps {
		if l.owners[p] == nil {
			l.owners[p] = map[string]bool{}
		}
		for o := range l.owners[p] {
			if o != member {
				l.overlaps = append(l.overlaps, fmt.Sprintf("partition %d given to %s while %s holds it", p, member, o))
			}
		}
		l.owners[p][member] = true
	}
}

func (l *ownershipLedger) released(member string, ps []int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range ps {
		delete(l.owners[p], member)
	}
}

// stopped: member has stopped polling, so it consumes nothing more and
// holds nothing, whatever its client reports next. kgo v1.22.3, leaving a
// KIP-848 group, revokes only what its last heartbeat left it: a
// partition the coordinator took away in the heartbeat answered during
// the leave gets no OnPartitionsRevoked call (seen: m0 told to give up
// partition 1 while closing, revoking only partition 0), although the
// member stopped reading it and the coordinator gave it away only after
// the leave.
func (l *ownershipLedger) stopped(member string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, owners := range l.owners {
		delete(owners, member)
	}
}

// ledgerRun: a producer writes to 8 partitions the whole time; 10 members
// join one after another, then 5 leave; the group must end Stable with
// the 5 left and every record read. It returns the overlaps seen, the
// records read more than once, and the time from the last change of
// membership to a stable assignment.
func ledgerRun(t *testing.T, b *Broker, protocol848 bool, topic, group string) (overlaps []string, dups int, settle time.Duration) {
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
	prodDone := make(chan struct{})
	stopProd := make(chan struct{})
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

	type member struct {
		cl   *kgo.Client
		stop context.CancelFunc
		done chan struct{}
	}
	start := func(name string) *member {
		opts := []kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(50 * time.Millisecond),
			kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { l.assigned(name, a[topic]) }),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
				cl.CommitUncommittedOffsets(ctx)
				l.released(name, r[topic])
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) { l.released(name, r[topic]) }),
		}
		if protocol848 {
			opts = append(opts, kgo.ServerSideBalancer())
		} else {
			opts = append(opts, kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(200*time.Millisecond), kgo.RebalanceTimeout(5*time.Second))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		mctx, stop := context.WithCancel(ctx)
		m := &member{cl: cl, stop: stop, done: make(chan struct{})}
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
	var members []*member
	for i := range 10 {
		members = append(members, start(fmt.Sprintf("m%d", i)))
		time.Sleep(150 * time.Millisecond)
	}
	for i, m := range members[:5] {
		m.stop()
		<-m.done
		l.stopped(fmt.Sprintf("m%d", i))
		m.cl.Close() // leaves the group (revoking first)
		time.Sleep(100 * time.Millisecond)
	}
	changed := time.Now()
	stable := func() bool {
		if protocol848 {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{group}
			resp, err := req.RequestWith(ctx, prod)
			if err != nil || resp.Groups[0].State != "Stable" || len(resp.Groups[0].Members) != 5 {
				return false
			}
			n := 0
			for _, m := range resp.Groups[0].Members {
				for _, tp := range m.Assignment.TopicPartitions {
					n += len(tp.Partitions)
				}
			}
			return n == 8
		}
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, prod)
		return err == nil && resp.Groups[0].State == "Stable" && len(resp.Groups[0].Members) == 5
	}
	deadline := time.Now().Add(60 * time.Second)
	for !stable() {
		if time.Now().After(deadline) {
			t.Fatalf("group %s not stable 60 s after the last member left", group)
		}
		time.Sleep(20 * time.Millisecond)
	}
	settle = time.Since(changed)
	close(stopProd)
	<-prodDone
	want := produced.Load()
	deadline = time.Now().Add(60 * time.Second)
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
	for _, m := range members[5:] {
		m.stop()
		<-m.done
		m.cl.Close()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.reads {
		if n > 1 {
			dups++
		}
	}
	t.Logf("group %s (848 %v): %d records produced, %d read more than once, %d overlaps, stable %v after the last leave",
		group, protocol848, want, dups, len(l.overlaps), settle)
	return l.overlaps, dups, settle
}

// fencedMembers reads minibroker_group_members_fenced_total by reason.
func fencedMembers(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == "minibroker_group_members_fenced_total" {
			for _, m := range mf.GetMetric() {
				out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// The rebalance ledger: 10 members of a KIP-848 consumer group join and 5
// leave while a producer writes; no partition is ever held by two members
// at once (from the clients' own assigned/revoked callbacks) and no record
// is lost; records read twice (a commit at revocation can fail with
// STALE_MEMBER_EPOCH, and the next owner then starts from the previous
// commit) are logged. The time to a stable assignment after the last
// leave is logged beside a classic group's in the same run. Negative
// control: with the coordinator assigning a partition before its owner
// revoked it (the group hook AssignBeforeRevoke), partitions are held twice.
func TestConsumerGroupRebalanceLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("ledger run: several seconds of rebalances")
	}
	for _, tc := range []struct {
		name               string
		assignBeforeRevoke bool
	}{{"revoke-before-assign", false}, {"negative-control-assign-before-revoke", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.DataDir, cfg.Listen, cfg.HTTPListen = t.TempDir(), "127.0.0.1:0", ""
			// A long session: members here leave by asking, and a member
			// fenced because a loaded machine held its heartbeats for a
			// session loses its partitions before it hears so (as in
			// Kafka), which the ledger would count as an overlap.
			for k, v := range map[string]string{"group.consumer.heartbeat.interval.ms": "200", "group.consumer.session.timeout.ms": "30000",
				"group.initial.rebalance.delay.ms": "0"} {
				if err := cfg.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			reg := prometheus.NewRegistry()
			b, cl := serveWith(t, Options{Config: cfg, Registry: reg,
				private: knobs{groupHooks: coordinator.TestHooks{AssignBeforeRevoke: tc.assignBeforeRevoke}}})
			createTopics(t, cl, false, map[string]int32{"ledger": 8, "ledger-classic": 8})
			overlaps, _, settle848 := ledgerRun(t, b, true, "ledger", "g848")
			if tc.assignBeforeRevoke {
				if len(overlaps) == 0 {
					t.Fatal("negative control: no partition held by two members with assignment before revocation")
				}
				t.Logf("negative control: %d overlaps, e.g. %s", len(overlaps), overlaps[0])
				return
			}
			if len(overlaps) > 0 {
				// Only a member the coordinator fenced on a timer may
				// still hold what another was given; say so if it
				// happened, so that a failure tells a starved machine
				// from a broken reconciliation.
				t.Fatalf("%d partitions held by two members at once, e.g. %s (members fenced by timers in the run: %v)",
					len(overlaps), overlaps[0], fencedMembers(t, reg))
			}
			_, _, settleClassic := ledgerRun(t, b, false, "ledger-classic", "gclassic")
			t.Logf("time to a stable assignment after the last leave: consumer protocol %v, classic %v", settle848, settleClassic)
		})
	}
}
