package groups

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/minibrokertest"
)

// offsetsTopicState reads every partition of __consumer_offsets with a kgo
// consumer and decodes its records with kmsg's types, as Burrow and
// kminion do: the latest committed offset per group and partition
// (tombstones remove), and the groups with metadata and their partition.
// A TxnOffsetCommit's offsets are transactional records of the producer:
// they count once the producer's COMMIT marker follows in the partition
// and never after an ABORT, as Kafka's coordinator replays them (the
// consumer keeps control records to see the markers).
func offsetsTopicState(t *testing.T, addr string) (offsets map[string]map[kmsg.OffsetCommitKey]int64, groups map[string]kmsg.GroupMetadataValue, where map[string]int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := itest.KadmClient(t, addr)
	ends, err := adm.ListEndOffsets(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	caughtUp := func() bool {
		ok := true
		ends.Each(func(o kadm.ListedOffset) { ok = ok && next[o.Partition] >= o.Offset })
		return ok
	}
	cl := itest.NewClient(t, addr, kgo.ConsumeTopics("__consumer_offsets"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords())
	offsets, groups, where = map[string]map[kmsg.OffsetCommitKey]int64{}, map[string]kmsg.GroupMetadataValue{}, map[string]int32{}
	type staged struct {
		k   kmsg.OffsetCommitKey
		off int64
	}
	pending := map[int32]map[int64][]staged{} // partition → producer → its transactional offsets
	for !caughtUp() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read __consumer_offsets up to %v of %v", next, ends)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch __consumer_offsets-%d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				// Control record key: version int16, type int16 (0 ABORT, 1 COMMIT).
				commit := len(r.Key) >= 4 && r.Key[3] == 1
				for _, s := range pending[r.Partition][r.ProducerID] {
					if commit {
						if offsets[s.k.Group] == nil {
							offsets[s.k.Group] = map[kmsg.OffsetCommitKey]int64{}
						}
						offsets[s.k.Group][s.k] = s.off
					}
				}
				delete(pending[r.Partition], r.ProducerID)
				return
			}
			version := int16(r.Key[0])<<8 | int16(r.Key[1])
			switch version {
			case 0, 1:
				var k kmsg.OffsetCommitKey
				if err := k.ReadFrom(r.Key); err != nil {
					t.Fatalf("offset key at %d: %v", r.Offset, err)
				}
				where[k.Group] = r.Partition
				k.Version = 0
				if offsets[k.Group] == nil {
					offsets[k.Group] = map[kmsg.OffsetCommitKey]int64{}
				}
				if r.Value == nil {
					delete(offsets[k.Group], k)
					return
				}
				var v kmsg.OffsetCommitValue
				if err := v.ReadFrom(r.Value); err != nil {
					t.Fatalf("offset value at %d: %v", r.Offset, err)
				}
				if r.Attrs.IsTransactional() {
					if pending[r.Partition] == nil {
						pending[r.Partition] = map[int64][]staged{}
					}
					pending[r.Partition][r.ProducerID] = append(pending[r.Partition][r.ProducerID], staged{k, v.Offset})
					return
				}
				offsets[k.Group][k] = v.Offset
			case 2:
				var k kmsg.GroupMetadataKey
				if err := k.ReadFrom(r.Key); err != nil {
					t.Fatalf("group key at %d: %v", r.Offset, err)
				}
				where[k.Group] = r.Partition
				if r.Value == nil {
					delete(groups, k.Group)
					return
				}
				var v kmsg.GroupMetadataValue
				if err := v.ReadFrom(r.Value); err != nil {
					t.Fatalf("group value at %d: %v", r.Offset, err)
				}
				groups[k.Group] = v
			case 3, 4, 5, 6, 7, 8, 16:
				// KIP-848 consumer group records (TestOffsetsTopicConsumerGroupRecords).
			default:
				t.Fatalf("key version %d at %s-%d@%d", version, r.Topic, r.Partition, r.Offset)
			}
		})
	}
	return offsets, groups, where
}

// TestOffsetsTopicKgo: a kgo group consumer commits,
// kadm deletes one partition's offset; a kgo consumer of
// __consumer_offsets, decoding with kmsg's OffsetCommitKey/Value and
// GroupMetadataKey/Value, finds the commits in the partition Kafka's
// partitionFor gives the group, the deleted one tombstoned, and the
// group's membership (protocol, generation, the member) while it is up.
// After the group's consumer leaves and the group is deleted, its records
// are tombstones.
func TestOffsetsTopicKgo(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, append(itest.KafkaCoordinatorTopics(), minibrokertest.Topic("orders", 3))...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range 30 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const group = "lag-watchers"
	cons := itest.NewClient(t, c.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	got := 0
	for got < 20 {
		fs := cons.PollRecords(ctx, 20-got)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d", got)
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	committed, err := kadm.NewClient(cons).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	offsets, groups, where := offsetsTopicState(t, c.Addr())
	if want := coordinator.PartitionFor(group, 50); where[group] != want {
		t.Fatalf("group %s in partition %d, want %d", group, where[group], want)
	}
	n := 0
	committed.Each(func(o kadm.OffsetResponse) {
		n++
		k := kmsg.OffsetCommitKey{Group: group, Topic: o.Topic, Partition: o.Partition}
		if off, ok := offsets[group][k]; !ok || off != o.At {
			t.Errorf("%s-%d: topic has %d (%v), OffsetFetch %d", o.Topic, o.Partition, off, ok, o.At)
		}
	})
	if n == 0 || len(offsets[group]) != n {
		t.Fatalf("topic offsets %v, OffsetFetch %d", offsets[group], n)
	}
	gm, ok := groups[group]
	if !ok || gm.ProtocolType != "consumer" || gm.Generation < 1 || len(gm.Members) != 1 || gm.Protocol == nil {
		t.Fatalf("group metadata %+v (%v)", gm, ok)
	}

	// An offset deleted (OffsetDelete needs the topic not subscribed: the
	// member leaves first), then the whole group.
	cons.Close()
	adm := itest.KadmClient(t, c.Addr())
	if _, err := adm.DeleteOffsets(ctx, group, kadm.TopicsSet{"orders": {0: {}}}); err != nil {
		t.Fatal(err)
	}
	offsets, _, _ = offsetsTopicState(t, c.Addr())
	if _, ok := offsets[group][kmsg.OffsetCommitKey{Group: group, Topic: "orders", Partition: 0}]; ok || len(offsets[group]) != n-1 {
		t.Fatalf("after OffsetDelete of orders-0: %v", offsets[group])
	}
	if _, err := adm.DeleteGroup(ctx, group); err != nil {
		t.Fatal(err)
	}
	offsets, groups, _ = offsetsTopicState(t, c.Addr())
	if len(offsets[group]) != 0 {
		t.Fatalf("after DeleteGroups: offsets %v", offsets[group])
	}
	if _, ok := groups[group]; ok {
		t.Fatalf("after DeleteGroups: metadata %+v", groups[group])
	}
}

// TestOffsetsTopicTxnOffsets: offsets a kgo GroupTransactSession commits
// inside a transaction reach __consumer_offsets when the transaction
// commits (as the OffsetFetch answer has them), and those of an aborted
// transaction never do.
func TestOffsetsTopicTxnOffsets(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("txn-in", 1), minibrokertest.Topic("txn-out", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("txn-in"))
	for i := range 20 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const group = "txn-readers"
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.Addr()), kgo.TransactionalID("txn-offsets"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics("txn-in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic("txn-out"), kgo.FetchMaxPartitionBytes(60))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	round := func(commit bool) {
		t.Helper()
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil || fs.NumRecords() == 0 {
			t.Fatalf("poll: %d records, %v", fs.NumRecords(), ctx.Err())
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { sess.Produce(ctx, &kgo.Record{Value: r.Value}, nil) })
		committed, err := sess.End(ctx, kgo.TransactionEndTry(commit))
		if err != nil || committed != commit {
			t.Fatalf("end(%v): committed %v, %v", commit, committed, err)
		}
	}
	round(true)
	fetched := func() int64 {
		t.Helper()
		o, err := itest.KadmClient(t, c.Addr()).FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := o.Lookup("txn-in", 0)
		if !ok {
			t.Fatalf("no committed offset: %v", o)
		}
		return r.At
	}
	want := fetched()
	key := kmsg.OffsetCommitKey{Group: group, Topic: "txn-in", Partition: 0}
	offsets, _, _ := offsetsTopicState(t, c.Addr())
	if got, ok := offsets[group][key]; !ok || got != want || want <= 0 {
		t.Fatalf("after a commit: topic %d (%v), OffsetFetch %d", got, ok, want)
	}
	round(false)
	offsets, _, _ = offsetsTopicState(t, c.Addr())
	if got := offsets[group][key]; got != want || fetched() != want {
		t.Fatalf("after an abort: topic %d, OffsetFetch %d, want %d", got, fetched(), want)
	}
}

// TestDumpLogOffsetsDecoder: dump-log --offsets-decoder
// prints a __consumer_offsets segment's records as kafka-dump-log
// --offsets-decoder does: the key and payload as Kafka's JSON, a deleted
// offset's payload <DELETE>.
func TestDumpLogOffsetsDecoder(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, append(itest.KafkaCoordinatorTopics(), minibrokertest.Topic("orders", 2))...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const group = "dump-me"
	adm := itest.KadmClient(t, c.Addr())
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 42, LeaderEpoch: 7, Metadata: "m"})
	if r, err := adm.CommitOffsets(ctx, group, os); err != nil || r.Error() != nil {
		t.Fatal(err, r.Error())
	}
	if _, err := adm.DeleteOffsets(ctx, group, kadm.TopicsSet{"orders": {1: {}}}); err != nil {
		t.Fatal(err)
	}
	p := coordinator.PartitionFor(group, 50)
	seg := filepath.Join(c.DataDir(), "__consumer_offsets-"+strconv.Itoa(int(p)), "00000000000000000000.log")
	out, errOut, code := itest.RunTool(t, "dump-log", "--offsets-decoder", seg)
	if code != 0 {
		t.Fatalf("dump-log: exit %d\n%s\n%s", code, out, errOut)
	}
	key := `key: {"type":"1","data":{"group":"dump-me","topic":"orders","partition":1}}`
	for _, want := range []string{
		key + ` payload: {"version":"3","data":{"offset":42,"leaderEpoch":7,"metadata":"m","commitTimestamp":`,
		key + " payload: <DELETE>",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("dump-log --offsets-decoder lacks %q:\n%s", want, out)
		}
	}
}
