package mirror

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/minibroker/minibroker/minibrokertest"
)

// readUntil polls cl until it has n records or the time is up.
func readUntil(t *testing.T, cl *kgo.Client, n int, wait time.Duration) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n && ctx.Err() == nil {
		out = append(out, cl.PollFetches(ctx).Records()...)
	}
	return out
}

// sourceWith848Group is a kfake source with ledger-0 holding a-0..a-9, a
// KIP-848 consumer group app848 (a kgo member with ServerSideBalancer
// read and committed 10), and classic groups appclassic (7) and busy (3).
func sourceWith848Group(t *testing.T) string {
	t.Helper()
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "ledger"), kfake.ClusterID("kfake-848"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	saddr := src.ListenAddrs()[0]
	itest.ProduceSerially(t, itest.IdempotentProducer(t, saddr), "ledger", 0, "a", 10)

	c848 := itest.New848Consumer(t, saddr, "app848", []string{"ledger"}, kgo.DisableAutoCommit())
	if got := readUntil(t, c848, 10, 20*time.Second); len(got) != 10 {
		t.Fatalf("source 848 member read %d of 10", len(got))
	}
	if err := c848.CommitUncommittedOffsets(context.Background()); err != nil {
		t.Fatal(err)
	}
	c848.Close()
	sadm := kadm.NewClient(itest.NewClient(t, saddr))
	ctx := context.Background()
	listed, err := sadm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed["app848"]; !ok || g.GroupType != "consumer" {
		t.Fatalf("source groups %v: want app848 of type consumer", listed)
	}
	for group, at := range map[string]int64{"appclassic": 7, "busy": 3} {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "ledger", Partition: 0, At: at, LeaderEpoch: -1})
		if r, err := sadm.CommitOffsets(ctx, group, os); err != nil || r.Error() != nil {
			t.Fatalf("commit %s: %v %v", group, err, r.Error())
		}
	}
	return saddr
}

// busyMember is a KIP-848 member of group busy on the destination that
// reads ledger's 10 records and commits 10, and stays in the group.
func busyMember(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	busy := itest.New848Consumer(t, addr, "busy", []string{"ledger"}, kgo.DisableAutoCommit())
	if got := readUntil(t, busy, 10, 20*time.Second); len(got) != 10 {
		t.Fatalf("destination busy member read %d of 10", len(got))
	}
	if err := busy.CommitUncommittedOffsets(context.Background()); err != nil {
		t.Fatal(err)
	}
	return busy
}

// TestMirrorSyncsConsumerGroups: the source's KIP-848
// consumer groups are synced as classic groups are. A kfake source has a
// consumer group (a kgo member with ServerSideBalancer committed 10) and a
// classic one (7); a group with a member on the destination is skipped
// and the log says so; after the failover a KIP-848 member on the
// destination resumes the consumer group at 10 (the barrier: it reads the
// destination's records from 11) and a classic member the classic group
// at 7.
func TestMirrorSyncsConsumerGroups(t *testing.T) {
	t.Parallel()
	saddr := sourceWith848Group(t)
	ctx := context.Background()
	core, logs := observer.New(zapcore.InfoLevel)
	b := minibrokertest.Start(t, append(itest.Fast848(), minibrokertest.Logger(zap.New(core)))...)
	mb := b.Mirror("from-a", saddr).Start("ledger")
	mb.WaitCaughtUp(20 * time.Second)
	// busy has a KIP-848 member on the destination: its offsets are its own.
	busy := busyMember(t, b.Addr())
	m := b.Broker().Mirrors()
	if n, err := m.SyncGroupOffsets(ctx, "from-a"); err != nil || n != 2 {
		t.Fatalf("sync: %d groups, %v; want 2 (app848, appclassic)", n, err)
	}
	for group, want := range map[string]int64{"app848": 10, "appclassic": 7, "busy": 10} {
		if got, _ := committedEpoch(t, b.Addr(), group, "ledger"); got != want {
			t.Fatalf("%s on the destination at %d, want %d", group, got, want)
		}
	}
	skipped := logs.FilterMessageSnippet("active on this cluster").FilterField(zap.String("group", "busy")).All()
	if len(skipped) != 1 {
		t.Fatalf("log lines about skipping busy: %v, want one", skipped)
	}
	busy.Close()

	mb.Stop("ledger")
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "ledger", 0, "b", 3) // 11..13
	d848 := itest.New848Consumer(t, b.Addr(), "app848", []string{"ledger"})
	got := readUntil(t, d848, 3, 30*time.Second)
	if len(got) != 3 || got[0].Offset != 11 || string(got[0].Value) != "b-0" {
		t.Fatalf("848 member resumed app848 with %v, want b-0..b-2 from 11", kgoValues(got))
	}
	dclassic := itest.NewClient(t, b.Addr(), kgo.ConsumerGroup("appclassic"), kgo.ConsumeTopics("ledger"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	got = readUntil(t, dclassic, 6, 30*time.Second)
	if len(got) != 6 || got[0].Offset != 7 || strings.Join(kgoValues(got), ",") != "a-7,a-8,a-9,b-0,b-1,b-2" {
		t.Fatalf("classic member resumed appclassic with %v, want a-7..a-9, b-0..b-2", kgoValues(got))
	}
}

func kgoValues(rs []*kgo.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Value)
	}
	return out
}

// startKgo848Member is startKgoMember with the consumer group protocol
// (KIP-848): kgo with ServerSideBalancer.
func startKgo848Member(t *testing.T, addr, group, topic string) itest.CompatMember {
	m := &itest.KgoMember{Done: make(chan struct{})}
	m.Cl = itest.New848Consumer(t, addr, group, []string{topic}, kgo.DisableAutoCommit())
	ctx, cancel := context.WithCancel(context.Background())
	m.Stop = cancel
	go func() {
		defer close(m.Done)
		for ctx.Err() == nil {
			fs := m.Cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				m.Add(itest.CompatRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: string(r.Value)})
			})
			m.Cl.CommitUncommittedOffsets(ctx)
		}
	}()
	t.Cleanup(func() { m.Stop(); <-m.Done })
	return m
}
