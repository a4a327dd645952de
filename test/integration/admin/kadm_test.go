package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

func partitionIDs(td kadm.TopicDetail) []int32 {
	var ids []int32
	for p := range td.Partitions {
		ids = append(ids, p)
	}
	slices.Sort(ids)
	return ids
}

// TestKadmCreateDeleteTopics: CreateTopics answers exactly as Kafka does
// for a good topic, a duplicate, a bad name, replication factor 3, an
// unknown config and broker defaults; DeleteTopics removes a topic from
// metadata, and producing to the name afterwards auto-creates a new,
// empty topic.
func TestKadmCreateDeleteTopics(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	adm := itest.KadmClient(t, c.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	created, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, "orders")
	if err != nil {
		t.Fatal(err)
	}
	o := created["orders"]
	if o.Err != nil || o.NumPartitions != 3 || o.ReplicationFactor != 1 || o.ID == (kadm.TopicID{}) {
		t.Fatalf("create orders: %+v", o)
	}
	if v := o.Configs["retention.ms"]; v.Value == nil || *v.Value != "3600000" || v.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("create orders: retention.ms %+v", v)
	}
	if v := o.Configs["segment.bytes"]; v.Value == nil || *v.Value != "1073741824" || v.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("create orders: segment.bytes %+v", v)
	}

	for _, tc := range []struct {
		topic      string
		partitions int32
		rf         int16
		configs    map[string]*string
		want       error
	}{
		{"orders", 1, 1, nil, kerr.TopicAlreadyExists},
		{"bad name!", 1, 1, nil, kerr.InvalidTopicException},
		{"..", 1, 1, nil, kerr.InvalidTopicException},
		{"replicated", 1, 3, nil, kerr.InvalidReplicationFactor},
		{"zero-parts", 0, 1, nil, kerr.InvalidPartitions},
		{"bad-config", 1, 1, map[string]*string{"no.such.config": kadm.StringPtr("1")}, kerr.InvalidConfig},
		{"bad-value", 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("soon")}, kerr.InvalidConfig},
	} {
		resp, err := adm.CreateTopics(ctx, tc.partitions, tc.rf, tc.configs, tc.topic)
		if err != nil {
			t.Fatalf("create %q: %v", tc.topic, err)
		}
		if got := resp[tc.topic].Err; !errors.Is(got, tc.want) {
			t.Fatalf("create %q: %v, want %v", tc.topic, got, tc.want)
		}
	}
	// -1/-1 take the broker defaults: num.partitions (1), one replica.
	if resp, err := adm.CreateTopics(ctx, -1, -1, nil, "defaults"); err != nil || resp["defaults"].Err != nil ||
		resp["defaults"].NumPartitions != 1 || resp["defaults"].ReplicationFactor != 1 {
		t.Fatalf("create with defaults: %+v, %v", resp["defaults"], err)
	}
	// Validate-only creates nothing.
	if resp, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, "dry-run"); err != nil || resp["dry-run"].Err != nil {
		t.Fatalf("validate create: %+v, %v", resp["dry-run"], err)
	}

	md := itest.KadmMetadata(t, c.Addr())
	md.Topics.FilterInternal() // __consumer_offsets, __transaction_state, __mirror_state
	if got, want := md.Topics.Names(), []string{"defaults", "orders"}; !slices.Equal(got, want) {
		t.Fatalf("topics after creates: %v, want %v", got, want)
	}
	if got := partitionIDs(md.Topics["orders"]); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("orders partitions %v", got)
	}
	for _, p := range md.Topics["orders"].Partitions {
		if p.Leader != 0 || !slices.Equal(p.Replicas, []int32{0}) || !slices.Equal(p.ISR, []int32{0}) || p.Err != nil {
			t.Fatalf("orders/%d: %+v", p.Partition, p)
		}
	}

	// DeleteTopics: orders (with data) is gone; a second delete answers
	// UNKNOWN_TOPIC_OR_PARTITION.
	prod := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("orders"), kgo.AllowAutoTopicCreation())
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("before delete")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	del, err := adm.DeleteTopics(ctx, "orders")
	if err != nil || del["orders"].Err != nil {
		t.Fatalf("delete orders: %+v, %v", del["orders"], err)
	}
	del, err = adm.DeleteTopics(ctx, "orders")
	if err != nil || !errors.Is(del["orders"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("second delete: %+v, %v; want UNKNOWN_TOPIC_OR_PARTITION", del["orders"], err)
	}
	md = itest.KadmMetadata(t, c.Addr())
	md.Topics.FilterInternal()
	if got := md.Topics.Names(); !slices.Equal(got, []string{"defaults"}) {
		t.Fatalf("topics after delete: %v, want [defaults]", got)
	}
	if md := itest.KadmMetadata(t, c.Addr(), "orders"); !errors.Is(md.Topics["orders"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("metadata for deleted topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", md.Topics["orders"].Err)
	}

	// Producing to the name again auto-creates a fresh topic: a new ID,
	// num.partitions (1) partition, and the record at offset 0.
	prod2 := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("orders"), kgo.AllowAutoTopicCreation())
	r := &kgo.Record{Value: []byte("after delete")}
	if err := prod2.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatalf("produce after delete: %v", err)
	}
	if r.Partition != 0 || r.Offset != 0 {
		t.Fatalf("produce after delete landed at %d@%d, want 0@0", r.Partition, r.Offset)
	}
	md = itest.KadmMetadata(t, c.Addr(), "orders")
	if td := md.Topics["orders"]; td.Err != nil || td.ID == o.ID || len(td.Partitions) != 1 {
		t.Fatalf("recreated orders: err %v, same id %v, %d partitions", td.Err, td.ID == o.ID, len(td.Partitions))
	}
	got := itest.ConsumeAll(t, c.Addr(), "orders", 1)
	if len(got) != 1 || string(got[0].Value) != "after delete" || got[0].Offset != 0 {
		t.Fatalf("recreated orders holds %v", got)
	}
}

// TestKadmCreatePartitions: CreatePartitions grows a topic (new
// partitions take records), never shrinks it (INVALID_PARTITIONS), and
// an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION.
func TestKadmCreatePartitions(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("grow", 2))
	adm := itest.KadmClient(t, c.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	resp, err := adm.CreatePartitions(ctx, 3, "grow")
	if err != nil || resp["grow"].Err != nil {
		t.Fatalf("create partitions: %+v, %v", resp["grow"], err)
	}
	if got := partitionIDs(itest.KadmMetadata(t, c.Addr(), "grow").Topics["grow"]); !slices.Equal(got, []int32{0, 1, 2, 3, 4}) {
		t.Fatalf("partitions after +3: %v", got)
	}
	for _, tc := range []struct {
		set   int
		topic string
		want  error
	}{
		{3, "grow", kerr.InvalidPartitions}, // shrink
		{5, "grow", kerr.InvalidPartitions}, // same count
		{4, "nope", kerr.UnknownTopicOrPartition},
	} {
		resp, err := adm.UpdatePartitions(ctx, tc.set, tc.topic)
		if err != nil {
			t.Fatalf("update %s to %d: %v", tc.topic, tc.set, err)
		}
		if !errors.Is(resp[tc.topic].Err, tc.want) {
			t.Fatalf("update %s to %d: %v, want %v", tc.topic, tc.set, resp[tc.topic].Err, tc.want)
		}
	}
	if resp, err := adm.ValidateCreatePartitions(ctx, 1, "grow"); err != nil || resp["grow"].Err != nil {
		t.Fatalf("validate create partitions: %+v, %v", resp["grow"], err)
	}
	if got := partitionIDs(itest.KadmMetadata(t, c.Addr(), "grow").Topics["grow"]); len(got) != 5 {
		t.Fatalf("validate-only changed the partition count: %v", got)
	}

	// Every partition, new ones included, takes a record at offset 0.
	prod := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("grow"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(5) {
		r := &kgo.Record{Partition: p, Value: []byte(fmt.Sprint(p))}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil || r.Offset != 0 {
			t.Fatalf("produce to partition %d: offset %d, %v", p, r.Offset, err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, "grow")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(5) {
		if o, ok := ends.Lookup("grow", p); !ok || o.Err != nil || o.Offset != 1 {
			t.Fatalf("grow/%d end offset %+v", p, o)
		}
	}
}

// TestKadmDescribeConfigs: topic configs show overrides as
// DYNAMIC_TOPIC_CONFIG, Kafka's defaults as DEFAULT_CONFIG and values
// inherited from a broker setting as STATIC_BROKER_CONFIG; broker configs
// show the settings with their sources.
func TestKadmDescribeConfigs(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t,
		minibrokertest.TopicWithConfigs("kept", 1, map[string]string{"retention.ms": "3600000", "cleanup.policy": "compact"}),
		minibrokertest.Topic("plain", 1),
		minibrokertest.Set("log.segment.bytes", "65536"))
	adm := itest.KadmClient(t, c.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rcs, err := adm.DescribeTopicConfigs(ctx, "kept", "plain")
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]map[string]kadm.Config{}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe %s: %v", rc.Name, rc.Err)
		}
		configs[rc.Name] = map[string]kadm.Config{}
		for _, cfg := range rc.Configs {
			configs[rc.Name][cfg.Key] = cfg
		}
	}
	for _, w := range []struct {
		topic, key, value string
		source            kmsg.ConfigSource
	}{
		{"kept", "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig},
		{"kept", "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig},
		{"plain", "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig},
		{"plain", "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig},
		{"plain", "max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig},
		{"plain", "segment.bytes", "65536", kmsg.ConfigSourceStaticBrokerConfig},
		{"kept", "segment.bytes", "65536", kmsg.ConfigSourceStaticBrokerConfig},
	} {
		got, ok := configs[w.topic][w.key]
		if !ok || got.Value == nil || *got.Value != w.value || got.Source != w.source {
			t.Fatalf("%s %s: %q from %v (present %v), want %q from %v", w.topic, w.key, got.MaybeValue(), got.Source, ok, w.value, w.source)
		}
	}
	// The override's synonyms name itself first, then the broker setting
	// it falls back to.
	var syn []string
	for _, s := range configs["kept"]["retention.ms"].Synonyms {
		v := "<nil>"
		if s.Value != nil {
			v = *s.Value
		}
		syn = append(syn, s.Key+"="+v)
	}
	if want := []string{"retention.ms=3600000", "log.retention.ms=604800000"}; !slices.Equal(syn, want) {
		t.Fatalf("retention.ms synonyms %v, want %v", syn, want)
	}

	// Unknown topic.
	rcs, err = adm.DescribeTopicConfigs(ctx, "missing")
	if err == nil && (len(rcs) != 1 || !errors.Is(rcs[0].Err, kerr.UnknownTopicOrPartition)) {
		t.Fatalf("describe missing topic: %+v", rcs)
	}

	brcs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(brcs) != 1 || brcs[0].Err != nil || brcs[0].Name != "0" {
		t.Fatalf("describe broker 0: %+v", brcs)
	}
	broker := map[string]kadm.Config{}
	for _, cfg := range brcs[0].Configs {
		broker[cfg.Key] = cfg
	}
	for _, w := range []struct {
		key, value string
		source     kmsg.ConfigSource
	}{
		{"log.retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig},
		{"num.partitions", "1", kmsg.ConfigSourceDefaultConfig},
		{"auto.create.topics.enable", "true", kmsg.ConfigSourceDefaultConfig},
		{"message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig},
		{"log.segment.bytes", "65536", kmsg.ConfigSourceStaticBrokerConfig},
	} {
		got, ok := broker[w.key]
		if !ok || got.MaybeValue() != w.value || got.Source != w.source {
			t.Fatalf("broker %s: %q from %v (present %v), want %q from %v", w.key, got.MaybeValue(), got.Source, ok, w.value, w.source)
		}
	}
}

// TestKadmListAndDeleteRecords: ListStartOffsets, ListEndOffsets,
// ListOffsetsAfterMilli (first record at or after a time, inside a batch
// too) and ListMaxTimestampOffsets over records with known timestamps;
// DeleteRecords moves the log start, and a consumer from the start
// begins there.
func TestKadmListAndDeleteRecords(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("times", 2))
	adm := itest.KadmClient(t, c.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Ten records per partition stamped base+0s … base+9s. Partition 0
	// gets one batch per record, partition 1 one batch for all ten.
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	stamp := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	prod := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("times"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(50*time.Millisecond))
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Timestamp: stamp(i), Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var batch []*kgo.Record
	for i := range 10 {
		batch = append(batch, &kgo.Record{Partition: 1, Timestamp: stamp(i), Value: []byte(strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	type want struct {
		offset, ts int64
	}
	check := func(what string, l kadm.ListedOffsets, err error, w map[int32]want) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for p, w := range w {
			o, ok := l.Lookup("times", p)
			if !ok || o.Err != nil || o.Offset != w.offset || (w.ts != 0 && o.Timestamp != w.ts) {
				t.Fatalf("%s partition %d: offset %d timestamp %d (%v), want offset %d timestamp %d", what, p, o.Offset, o.Timestamp, o.Err, w.offset, w.ts)
			}
		}
	}
	ms := func(i int) int64 { return stamp(i).UnixMilli() }
	l, err := adm.ListStartOffsets(ctx, "times")
	check("start", l, err, map[int32]want{0: {0, 0}, 1: {0, 0}})
	l, err = adm.ListEndOffsets(ctx, "times")
	check("end", l, err, map[int32]want{0: {10, 0}, 1: {10, 0}})
	l, err = adm.ListOffsetsAfterMilli(ctx, ms(3)+500, "times")
	check("after 3.5s", l, err, map[int32]want{0: {4, ms(4)}, 1: {4, ms(4)}})
	l, err = adm.ListOffsetsAfterMilli(ctx, ms(0), "times")
	check("after 0s", l, err, map[int32]want{0: {0, ms(0)}, 1: {0, ms(0)}})
	l, err = adm.ListOffsetsAfterMilli(ctx, ms(9), "times")
	check("after 9s", l, err, map[int32]want{0: {9, ms(9)}, 1: {9, ms(9)}})
	// Past the last record the broker answers -1; kadm then lists the end.
	l, err = adm.ListOffsetsAfterMilli(ctx, ms(20), "times")
	check("after 20s", l, err, map[int32]want{0: {10, 0}, 1: {10, 0}})
	l, err = adm.ListMaxTimestampOffsets(ctx, "times")
	check("max timestamp", l, err, map[int32]want{0: {9, ms(9)}, 1: {9, ms(9)}})

	// DeleteRecords below offset 6 on partition 0 (mid-log, no segment
	// boundary) and everything on partition 1 (-1: the high watermark).
	deletes := make(kadm.Offsets)
	deletes.Add(kadm.Offset{Topic: "times", Partition: 0, At: 6})
	deletes.Add(kadm.Offset{Topic: "times", Partition: 1, At: -1})
	dr, err := adm.DeleteRecords(ctx, deletes)
	if err != nil {
		t.Fatal(err)
	}
	for p, low := range map[int32]int64{0: 6, 1: 10} {
		if r := dr["times"][p]; r.Err != nil || r.LowWatermark != low {
			t.Fatalf("delete records partition %d: %+v, want low watermark %d", p, r, low)
		}
	}
	// Past the high watermark: OFFSET_OUT_OF_RANGE.
	bad := make(kadm.Offsets)
	bad.Add(kadm.Offset{Topic: "times", Partition: 0, At: 11})
	dr, err = adm.DeleteRecords(ctx, bad)
	if err != nil || !errors.Is(dr["times"][0].Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete records past the end: %+v, %v", dr["times"][0], err)
	}

	l, err = adm.ListStartOffsets(ctx, "times")
	check("start after delete", l, err, map[int32]want{0: {6, 0}, 1: {10, 0}})
	l, err = adm.ListEndOffsets(ctx, "times")
	check("end after delete", l, err, map[int32]want{0: {10, 0}, 1: {10, 0}})
	l, err = adm.ListOffsetsAfterMilli(ctx, ms(0), "times")
	check("after 0s, after delete", l, err, map[int32]want{0: {6, ms(6)}})

	// A consumer from the start begins at the new log start.
	cons := itest.NewClient(t, c.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"times": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()},
	}))
	var got []string
	for len(got) < 4 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v before timeout", got)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, fmt.Sprintf("%d@%d=%s", r.Partition, r.Offset, r.Value))
		})
	}
	if want := []string{"0@6=6", "0@7=7", "0@8=8", "0@9=9"}; !slices.Equal(got, want) {
		t.Fatalf("consumed from start after DeleteRecords: %v, want %v", got, want)
	}
	// The data survives a restart with the new log start.
	c.Restart()
	l, err = itest.KadmClient(t, c.Addr()).ListStartOffsets(ctx, "times")
	check("start after restart", l, err, map[int32]want{0: {6, 0}, 1: {10, 0}})
}

// TestKadmClusterID: DescribeCluster and Metadata name this cluster's id,
// node 0 as the only broker and controller.
func TestKadmClusterID(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	cl := itest.NewClient(t, c.Addr())
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c.ClusterID() == "" {
		t.Fatal("empty cluster id")
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("%s:%d", md.Brokers[0].Host, md.Brokers[0].Port)
	if md.Cluster != c.ClusterID() || md.Controller != 0 || len(md.Brokers) != 1 || md.Brokers[0].NodeID != 0 || addr != c.Addr() {
		t.Fatalf("metadata: cluster %q controller %d brokers %+v; want %q, 0, [0 %s]", md.Cluster, md.Controller, md.Brokers, c.ClusterID(), c.Addr())
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.ClusterID != c.ClusterID() || resp.ControllerID != 0 || len(resp.Brokers) != 1 ||
		resp.Brokers[0].NodeID != 0 || fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port) != c.Addr() {
		t.Fatalf("describe cluster: %+v; want cluster %q", resp, c.ClusterID())
	}
	// The id is stored: the same after a restart.
	id := c.ClusterID()
	c.Restart()
	if md := itest.KadmMetadata(t, c.Addr()); md.Cluster != id {
		t.Fatalf("cluster id after restart %q, want %q", md.Cluster, id)
	}
}
