package mirror

import (
	"context"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
)

// leaderEpochOf is the leader epoch a cluster's Metadata answers for
// topic partition 0.
func leaderEpochOf(t *testing.T, addr, topic string) int32 {
	t.Helper()
	td, err := kadm.NewClient(itest.NewClient(t, addr)).ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := td[topic].Partitions[0]
	if !ok {
		t.Fatalf("%s-0 not in metadata", topic)
	}
	return p.LeaderEpoch
}

// committedEpoch is a group's committed offset and leader epoch for
// topic partition 0 at addr.
func committedEpoch(t *testing.T, addr, group, topic string) (int64, int32) {
	t.Helper()
	resp, err := kadm.NewClient(itest.NewClient(t, addr)).FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := resp.Lookup(topic, 0)
	if !ok {
		return -1, -1
	}
	return o.At, o.LeaderEpoch
}

// epochScenario: a kfake source's partition has 10 records at epoch 0,
// mirrored to a fresh B (started with mopts); the mirror is paused (it
// lags), the source's leader epoch rises three times with no record, 5
// records come at epoch 3, and a kgo group member at the source reads all
// 15 and commits (15, epoch 3). The group's offset is synced (clamped to
// B's log end, 10) and B fails over; B takes b-0..b-4 at 11..15.
func epochScenario(t *testing.T, mopts mirror.Options) (b *itest.RawCluster, srcEpoch int32, mirroring [2]int32) {
	t.Helper()
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "ledger"), kfake.ClusterID("kfake-epoch"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	saddr := src.ListenAddrs()[0]
	itest.ProduceSerially(t, itest.IdempotentProducer(t, saddr), "ledger", 0, "a", 10)

	b = itest.StartBroker(t, itest.BrokerOptions{Mirror: mopts})
	m := itest.MirrorOn(b)
	if err := m.Create("from-a", []string{saddr}, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(t.Context(), "from-a", []string{"ledger"}); err != nil {
		t.Fatal(err)
	}
	itest.WaitLogEnd(t, b, "ledger", 0, 10)
	if err := m.Pause("from-a", []string{"ledger"}); err != nil {
		t.Fatal(err)
	}
	for range 3 { // a leader election that keeps the leader: no record
		if err := src.MoveTopicPartition("ledger", 0, src.LeaderFor("ledger", 0)); err != nil {
			t.Fatal(err)
		}
	}
	srcEpoch = leaderEpochOf(t, saddr, "ledger")
	if srcEpoch != 3 {
		t.Fatalf("source leader epoch %d, want 3", srcEpoch)
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, saddr), "ledger", 0, "late", 5) // 10..14, epoch 3

	cons := itest.NewClient(t, saddr, kgo.ConsumerGroup("app"), kgo.ConsumeTopics("ledger"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for n := 0; n < 15; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("source consumer read %d of 15", n)
		}
		n += len(fs.Records())
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	if off, ep := committedEpoch(t, saddr, "app", "ledger"); off != 15 || ep != 3 {
		t.Fatalf("source commit (%d, epoch %d), want (15, epoch 3)", off, ep)
	}
	// The same commit for a second group, so that each client resuming
	// on B (and committing there) has a group of its own.
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "ledger", Partition: 0, At: 15, LeaderEpoch: 3})
	if r, err := kadm.NewClient(itest.NewClient(t, saddr)).CommitOffsets(ctx, "app-kgo", os); err != nil || r.Error() != nil {
		t.Fatalf("commit app-kgo: %v %v", err, r.Error())
	}

	if n, err := m.SyncGroupOffsets(t.Context(), "from-a"); err != nil || n != 2 {
		t.Fatalf("sync: %d groups, %v", n, err)
	}
	// B's leader epoch while it mirrors, and after a crash (the log opens
	// at its latest batch's epoch, 0).
	beforeCrash := leaderEpochOf(t, b.Addr(), "ledger")
	b.CrashAndRestart(mopts)
	m = itest.MirrorOn(b)
	mirroring = [2]int32{beforeCrash, leaderEpochOf(t, b.Addr(), "ledger")}
	if err := m.Stop("from-a", nil); err != nil {
		t.Fatal(err)
	}
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "ledger", 0, "b", 5) // 11..15
	return b, srcEpoch, mirroring
}

// resumeMember starts a consumer of the client kind on B at the group's
// committed offset (kgo in group app-kgo, confluent-kafka-go in app) and
// answers what it reads within wait.
func resumeMember(t *testing.T, client, addr string, wait time.Duration, want int) []itest.CompatRecord {
	t.Helper()
	var member itest.CompatMember
	switch client {
	case "kgo":
		member = itest.StartKgoMember(t, addr, "app-kgo", "ledger")
	case "confluent-kafka-go":
		member = itest.StartConfluentMember(t, addr, "app", "ledger")
	case "confluent-kafka-go seek": // commits nothing
		member = startConfluentSeeker(t, addr, "app", "ledger")
	}
	defer member.Close(t)
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if recs := member.Records(); len(recs) >= want {
			return recs
		}
		time.Sleep(20 * time.Millisecond)
	}
	return member.Records()
}

// TestMirrorLeaderEpochInvariant (KIP-1279's leader-epoch
// invariant): the source's leader epoch rose with no record while the
// mirror lagged, and a group committed at the source at that epoch. B's
// leader epoch is kept at or above the source's, the synced offset that
// was clamped to B's log end carries B's epoch, and after the failover a
// kgo member of the group (which validates the epoch) resumes at the
// barrier and reads B's records. Without the rule (negative control:
// TestMirrorLeaderEpochInvariantOff) the offset keeps the source's epoch
// 3 while B's partition is at epoch 1, and kgo never fetches.
func TestMirrorLeaderEpochInvariant(t *testing.T) {
	t.Parallel()
	b, srcEpoch, mirroring := epochScenario(t, mirror.Options{})
	if mirroring[0] < srcEpoch || mirroring[1] < srcEpoch {
		t.Fatalf("B's leader epoch %d while mirroring, %d after a restart; want at least the source's %d", mirroring[0], mirroring[1], srcEpoch)
	}
	bEpoch := leaderEpochOf(t, b.Addr(), "ledger")
	if bEpoch <= srcEpoch {
		t.Fatalf("B's leader epoch %d after the failover, want above the source's %d", bEpoch, srcEpoch)
	}
	for _, g := range []string{"app", "app-kgo"} {
		if off, ep := committedEpoch(t, b.Addr(), g, "ledger"); off != 10 || ep != 0 {
			t.Fatalf("%s synced at (%d, epoch %d), want (10, epoch 0): B's batch before 10 is at epoch 0", g, off, ep)
		}
	}
	for _, c := range []string{"confluent-kafka-go seek", "confluent-kafka-go", "kgo"} {
		recs := resumeMember(t, c, b.Addr(), 30*time.Second, 5)
		if len(recs) != 5 || recs[0].Offset != 11 || recs[0].Value != "b-0" || recs[4].Value != "b-4" {
			t.Fatalf("%s resumed with %v, want b-0..b-4 from 11", c, recs)
		}
	}
}

// TestMirrorLeaderEpochInvariantOff is the negative control: the same
// scenario with the synced offset keeping the source's epoch and B's epoch
// not raised to the source's, that is without the rule: the offset is (10,
// epoch 3) on a partition at epoch 1. librdkafka's seek to the committed
// position asks B where epoch 3 ends; B has no epoch that high and answers
// UNDEFINED, and the consumer resets and reads the topic again from 0
// (auto.offset.reset=earliest): 10 records twice.
func TestMirrorLeaderEpochInvariantOff(t *testing.T) {
	t.Parallel()
	b, srcEpoch, mirroring := epochScenario(t, mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{KeepSourceEpoch: true}))
	bEpoch := leaderEpochOf(t, b.Addr(), "ledger")
	off, ep := committedEpoch(t, b.Addr(), "app", "ledger")
	if off != 10 || ep != srcEpoch || bEpoch >= srcEpoch || mirroring[1] >= srcEpoch {
		t.Fatalf("without the rule: offset (%d, epoch %d), B at epoch %d (%v while mirroring); want (10, epoch %d) above B's",
			off, ep, bEpoch, mirroring, srcEpoch)
	}
	recs := resumeMember(t, "confluent-kafka-go seek", b.Addr(), 30*time.Second, 15)
	if len(recs) != 15 || recs[0].Offset != 0 || recs[0].Value != "a-0" {
		t.Fatalf("without the rule the seek resumed with %v, want the reset to the start (a-0 at 0)", recs)
	}
}

// startConfluentSeeker is a confluent-kafka-go consumer of group's
// committed position that places itself, as an application keeping its
// own assignment does: it reads the committed offset and its leader epoch
// (Committed), assigns the partition there and seeks to it. librdkafka
// validates a seek's epoch with OffsetForLeaderEpoch (KIP-320) before it
// fetches; an epoch the broker does not know answers UNDEFINED, and the
// consumer resets by auto.offset.reset (earliest: it reads the topic
// again from its start).
func startConfluentSeeker(t *testing.T, addr, group, topic string) itest.CompatMember {
	cons, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": addr, "group.id": group,
		"auto.offset.reset": "earliest", "enable.auto.commit": false, "fetch.wait.max.ms": 100})
	if err != nil {
		t.Fatal(err)
	}
	committed, err := cons.Committed([]kafka.TopicPartition{{Topic: &topic, Partition: 0}}, 10000)
	if err != nil || len(committed) != 1 || committed[0].LeaderEpoch == nil {
		t.Fatalf("committed: %v %v", committed, err)
	}
	if err := cons.Assign(committed); err != nil {
		t.Fatal(err)
	}
	if _, err := cons.SeekPartitions(committed); err != nil {
		t.Fatal(err)
	}
	m := &itest.ConfluentMember{Cons: cons, Stop: make(chan struct{}), Done: make(chan struct{})}
	go func() {
		defer close(m.Done)
		for {
			select {
			case <-m.Stop:
				return
			default:
			}
			msg, err := cons.ReadMessage(100 * time.Millisecond)
			if err != nil {
				continue
			}
			m.Add(itest.CompatRecord{Partition: msg.TopicPartition.Partition, Offset: int64(msg.TopicPartition.Offset),
				Key: msg.Key, Value: string(msg.Value)})
		}
	}()
	t.Cleanup(func() { m.Close(t) })
	return m
}
