package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
func offsetsTopicState(t *testing.T, addr string) (offsets map[string]map[kmsg.OffsetCommitKey]int64, groups map[string]kmsg.GroupMetadataValue, where map[string]int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadmClient(t, addr)
	ends, err := adm.ListEndOffsets(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	cl := newClient(t, addr, kgo.ConsumeTopics("__consumer_offsets"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	offsets, groups, where = map[string]map[kmsg.OffsetCommitKey]int64{}, map[string]kmsg.GroupMetadataValue{}, map[string]int32{}
	seen := int64(0)
	for seen < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of __consumer_offsets", seen, want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch __consumer_offsets-%d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			seen++
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
			default:
				t.Fatalf("key version %d at %s-%d@%d", version, r.Topic, r.Partition, r.Offset)
			}
		})
	}
	return offsets, groups, where
}

// TestOffsetsTopicKgo (issue 38 item 1): a kgo group consumer commits,
// kadm deletes one partition's offset; a kgo consumer of
// __consumer_offsets, decoding with kmsg's OffsetCommitKey/Value and
// GroupMetadataKey/Value, finds the commits in the partition Kafka's
// partitionFor gives the group, the deleted one tombstoned, and the
// group's membership (protocol, generation, the member) while it is up.
// After the group's consumer leaves and the group is deleted, its records
// are tombstones.
func TestOffsetsTopicKgo(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, append(kafkaCoordinatorTopics(), minibrokertest.Topic("orders", 3))...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := newClient(t, c.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range 30 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const group = "lag-watchers"
	cons := newClient(t, c.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"),
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
	adm := kadmClient(t, c.Addr())
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

// TestOffsetsTopicFromOlderDataDir: a data dir written before
// __consumer_offsets existed (its group log holds the commits, no topic)
// gets the topic at the next start with every committed offset in it,
// and commits made after that follow. Negative control (a temporary edit
// removing the start-up reconcile, coordinator.Groups.openView's write):
// the topic is empty after the restart.
func TestOffsetsTopicFromOlderDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := minibrokertest.Start(t, minibrokertest.DataDir(dir), minibrokertest.Topic("orders", 4))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadmClient(t, c.Addr())
	commit := func(adm *kadm.Client, group string, at int64) {
		t.Helper()
		os := kadm.Offsets{}
		for p := range int32(4) {
			os.Add(kadm.Offset{Topic: "orders", Partition: p, At: at + int64(p), LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctx, group, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"g-a", "g-b", "g-c"} {
		commit(adm, g, 10)
	}
	c.Close()
	// What the older version's data dir has: no internal topic.
	raw, err := os.ReadFile(filepath.Join(dir, "topics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var kept []any
	for _, tp := range doc["topics"].([]any) {
		if name := tp.(map[string]any)["name"].(string); !strings.HasPrefix(name, "__") {
			kept = append(kept, tp)
		}
	}
	doc["topics"] = kept
	raw, _ = json.Marshal(doc)
	if err := os.WriteFile(filepath.Join(dir, "topics.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "__") {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}

	c2 := minibrokertest.Start(t, minibrokertest.DataDir(dir))
	offsets, _, _ := offsetsTopicState(t, c2.Addr())
	for _, g := range []string{"g-a", "g-b", "g-c"} {
		if len(offsets[g]) != 4 {
			t.Fatalf("%s after the upgrade: %v", g, offsets[g])
		}
		for k, off := range offsets[g] {
			if off != 10+int64(k.Partition) {
				t.Fatalf("%s %s-%d: %d", g, k.Topic, k.Partition, off)
			}
		}
	}
	commit(kadmClient(t, c2.Addr()), "g-b", 20)
	offsets, _, _ = offsetsTopicState(t, c2.Addr())
	if offsets["g-b"][kmsg.OffsetCommitKey{Group: "g-b", Topic: "orders", Partition: 3}] != 23 {
		t.Fatalf("g-b after a new commit: %v", offsets["g-b"])
	}
	// A restart appends nothing more: the topic already holds the state.
	ends := func(cl *minibrokertest.Cluster) int64 {
		t.Helper()
		l, err := kadmClient(t, cl.Addr()).ListEndOffsets(ctx, "__consumer_offsets")
		if err != nil {
			t.Fatal(err)
		}
		n := int64(0)
		l.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	before := ends(c2)
	c2.Restart()
	if after := ends(c2); after != before {
		t.Fatalf("a restart appended %d records", after-before)
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
	prod := newClient(t, c.Addr(), kgo.DefaultProduceTopic("txn-in"))
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
		o, err := kadmClient(t, c.Addr()).FetchOffsets(ctx, group)
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

// TestDumpLogOffsetsDecoder (issue 38 item 7): dump-log --offsets-decoder
// prints a __consumer_offsets segment's records as kafka-dump-log
// --offsets-decoder does: the key and payload as Kafka's JSON, a deleted
// offset's payload <DELETE>.
func TestDumpLogOffsetsDecoder(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, append(kafkaCoordinatorTopics(), minibrokertest.Topic("orders", 2))...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const group = "dump-me"
	adm := kadmClient(t, c.Addr())
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
	out, errOut, code := runTool(t, "dump-log", "--offsets-decoder", seg)
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
