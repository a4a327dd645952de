package clients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"

	"github.com/minibroker/minibroker/minibrokertest"
)

// kafkagoMessages builds n messages whose key "i" names their partition
// through kafkagoBalancer (i % parts).
func kafkagoMessages(n int) []kafka.Message {
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{
			Key:     []byte(strconv.Itoa(i)),
			Value:   []byte(fmt.Sprintf("kafka-go-value-%05d", i)),
			Headers: []kafka.Header{{Key: "i", Value: []byte(strconv.Itoa(i))}},
		}
	}
	return msgs
}

// kafkagoBalancer sends the message with key "i" to partition i % parts,
// so the order expected in each partition is the send order.
var kafkagoBalancer = kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
	i, _ := strconv.Atoi(string(m.Key))
	return partitions[i%len(partitions)]
})

// kafkagoWrite writes msgs with a kafka.Writer (acks=all, small batches so
// each partition gets several) and checks the offsets the writer reports:
// per partition 0, 1, 2, … in send order.
func kafkagoWrite(t *testing.T, addr, topic string, parts int, codec compress.Compression, msgs []kafka.Message) {
	t.Helper()
	transport := &kafka.Transport{DialTimeout: 5 * time.Second}
	defer transport.CloseIdleConnections()
	var (
		mu      sync.Mutex
		offsets = map[string]int64{} // value → offset
	)
	w := &kafka.Writer{
		Addr:         kafka.TCP(addr),
		Topic:        topic,
		Balancer:     kafkagoBalancer,
		RequiredAcks: kafka.RequireAll,
		Compression:  codec,
		BatchSize:    40,
		BatchTimeout: 5 * time.Millisecond,
		WriteTimeout: 10 * time.Second,
		Transport:    transport,
		Completion: func(done []kafka.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range done {
				if err == nil {
					offsets[string(m.Value)] = m.Offset
				}
			}
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		w.Close()
		t.Fatalf("WriteMessages: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("writer close: %v", err)
	}
	if st := w.Stats(); st.Messages != int64(len(msgs)) || st.Errors != 0 {
		t.Fatalf("writer stats: %d messages, %d errors; want %d, 0", st.Messages, st.Errors, len(msgs))
	}
	mu.Lock()
	defer mu.Unlock()
	for i, m := range msgs {
		want := int64(i / parts)
		if got, ok := offsets[string(m.Value)]; !ok || got != want {
			t.Fatalf("message %d: writer reported offset %d (known %v), want %d", i, got, ok, want)
		}
	}
}

// kafkagoReadCheck reads every partition from the first offset with a
// partition Reader (no group) and compares offsets, keys, values and
// headers with msgs, in send order per partition.
func kafkagoReadCheck(t *testing.T, addr, topic string, parts int, msgs []kafka.Message) {
	t.Helper()
	for p := range parts {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   []string{addr},
			Topic:     topic,
			Partition: p,
			MinBytes:  1,
			MaxBytes:  1 << 20,
			MaxWait:   100 * time.Millisecond,
		})
		if err := r.SetOffset(kafka.FirstOffset); err != nil {
			r.Close()
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		for j, i := 0, p; i < len(msgs); j, i = j+1, i+parts {
			got, err := r.ReadMessage(ctx)
			if err != nil {
				cancel()
				r.Close()
				t.Fatalf("partition %d: read %d: %v", p, j, err)
			}
			w := msgs[i]
			if got.Partition != p || got.Offset != int64(j) || string(got.Key) != string(w.Key) || string(got.Value) != string(w.Value) {
				cancel()
				r.Close()
				t.Fatalf("partition %d read %d: got p%d@%d %s=%s, want p%d@%d %s=%s",
					p, j, got.Partition, got.Offset, got.Key, got.Value, p, j, w.Key, w.Value)
			}
			if len(got.Headers) != 1 || got.Headers[0].Key != "i" || string(got.Headers[0].Value) != string(w.Key) {
				cancel()
				r.Close()
				t.Fatalf("partition %d offset %d: headers %v", p, j, got.Headers)
			}
			if got.Time.IsZero() || time.Since(got.Time) > time.Minute {
				cancel()
				r.Close()
				t.Fatalf("partition %d offset %d: time %v", p, j, got.Time)
			}
		}
		// Nothing beyond what was produced: the reader is at the end.
		lag, err := r.ReadLag(ctx)
		cancel()
		if err != nil || lag != 0 || r.Offset() != int64(len(msgs[p:])+parts-1)/int64(parts) {
			r.Close()
			t.Fatalf("partition %d: lag %d (%v) at offset %d, want 0", p, lag, err, r.Offset())
		}
		if err := r.Close(); err != nil {
			t.Fatalf("partition %d: reader close: %v", p, err)
		}
	}
}

// TestKafkaGoWriterReader: kafka-go's Writer (acks=all, several
// partitions, no compression and each codec) and partition Readers reading
// everything back; the stored batches keep the writer's codec.
func TestKafkaGoWriterReader(t *testing.T) {
	t.Parallel()
	codecs := []struct {
		name  string
		codec compress.Compression
		kgo   uint8 // RecordAttrs.CompressionType
	}{
		{"none", 0, 0},
		{"gzip", kafka.Gzip, 1},
		{"snappy", kafka.Snappy, 2},
		{"lz4", kafka.Lz4, 3},
		{"zstd", kafka.Zstd, 4},
	}
	const parts, n = 3, 300
	for _, cc := range codecs {
		t.Run(cc.name, func(t *testing.T) {
			t.Parallel()
			c := minibrokertest.Start(t, minibrokertest.Topic("kgo-writer", parts))
			msgs := kafkagoMessages(n)
			kafkagoWrite(t, c.Addr(), "kgo-writer", parts, cc.codec, msgs)
			kafkagoReadCheck(t, c.Addr(), "kgo-writer", parts, msgs)
			got := itest.ConsumeAll(t, c.Addr(), "kgo-writer", n)
			if len(got) != n {
				t.Fatalf("kgo read %d records, want %d", len(got), n)
			}
			for _, r := range got {
				if ct := r.Attrs.CompressionType(); ct != cc.kgo {
					t.Fatalf("record p%d@%d: stored batch compression %d, want %d", r.Partition, r.Offset, ct, cc.kgo)
				}
			}
		})
	}
}

// TestKafkaGoConn: kafka-go's low-level Conn: CreateTopics on the
// controller, ReadPartitions, a leader connection writing and reading a
// batch, DeleteTopics.
func TestKafkaGoConn(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := kafka.DialContext(ctx, "tcp", c.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		t.Fatalf("Controller: %v", err)
	}
	if want := c.Addr(); net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)) != want || ctrl.ID != 0 {
		t.Fatalf("controller %+v, want node 0 at %s", ctrl, want)
	}
	err = conn.CreateTopics(
		kafka.TopicConfig{Topic: "conn-a", NumPartitions: 4, ReplicationFactor: 1,
			ConfigEntries: []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "3600000"}}},
		kafka.TopicConfig{Topic: "conn-b", NumPartitions: 1, ReplicationFactor: 1},
	)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	// Conn.CreateTopics is idempotent by design: it drops
	// TOPIC_ALREADY_EXISTS, so creating conn-a again (with another count)
	// is no error and changes nothing. kafka-go's Client shows the code.
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: "conn-a", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatalf("second Conn.CreateTopics: %v, want nil (kafka-go ignores TOPIC_ALREADY_EXISTS)", err)
	}
	transport := &kafka.Transport{DialTimeout: 5 * time.Second}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(c.Addr()), Transport: transport}
	cres, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: "conn-a", NumPartitions: 1, ReplicationFactor: 1},
		{Topic: "conn-c", NumPartitions: 2, ReplicationFactor: 3},
		{Topic: "conn d", NumPartitions: 1, ReplicationFactor: 1},
	}})
	if err != nil {
		t.Fatalf("Client.CreateTopics: %v", err)
	}
	for topic, want := range map[string]error{"conn-a": kafka.TopicAlreadyExists, "conn-c": kafka.InvalidReplicationFactor, "conn d": kafka.InvalidTopic} {
		if got := cres.Errors[topic]; !errors.Is(got, want) {
			t.Fatalf("Client.CreateTopics %q: %v, want %v", topic, got, want)
		}
	}

	parts, err := conn.ReadPartitions("conn-a", "conn-b")
	if err != nil {
		t.Fatalf("ReadPartitions: %v", err)
	}
	var got []string
	for _, p := range parts {
		if p.Leader.ID != 0 || len(p.Replicas) != 1 || len(p.Isr) != 1 || p.Leader.Port == 0 {
			t.Fatalf("partition %s/%d: leader %+v replicas %v isr %v", p.Topic, p.ID, p.Leader, p.Replicas, p.Isr)
		}
		got = append(got, fmt.Sprintf("%s/%d", p.Topic, p.ID))
	}
	slices.Sort(got)
	if want := []string{"conn-a/0", "conn-a/1", "conn-a/2", "conn-a/3", "conn-b/0"}; !slices.Equal(got, want) {
		t.Fatalf("partitions %v, want %v", got, want)
	}

	// A leader connection: write a batch to partition 2, read it back.
	leader, err := kafka.DialLeader(ctx, "tcp", c.Addr(), "conn-a", 2)
	if err != nil {
		t.Fatalf("DialLeader: %v", err)
	}
	defer leader.Close()
	leader.SetDeadline(time.Now().Add(10 * time.Second))
	batch := kafkagoMessages(25)
	if _, err := leader.WriteMessages(batch...); err != nil {
		t.Fatalf("conn WriteMessages: %v", err)
	}
	first, last, err := leader.ReadOffsets()
	if err != nil || first != 0 || last != 25 {
		t.Fatalf("ReadOffsets: %d..%d (%v), want 0..25", first, last, err)
	}
	if _, err := leader.Seek(0, kafka.SeekAbsolute); err != nil {
		t.Fatal(err)
	}
	rb := leader.ReadBatch(1, 1<<20)
	for i := range batch {
		m, err := rb.ReadMessage()
		if err != nil {
			t.Fatalf("batch read %d: %v", i, err)
		}
		if m.Offset != int64(i) || string(m.Value) != string(batch[i].Value) || string(m.Key) != string(batch[i].Key) {
			t.Fatalf("batch read %d: @%d %s=%s, want @%d %s=%s", i, m.Offset, m.Key, m.Value, i, batch[i].Key, batch[i].Value)
		}
	}
	if hwm := rb.HighWaterMark(); hwm != 25 {
		t.Fatalf("batch high watermark %d, want 25", hwm)
	}
	if err := rb.Close(); err != nil {
		t.Fatalf("batch close: %v", err)
	}

	// DeleteTopics: conn-b (holding one record) goes away. kafka-go's
	// ReadPartitions asks Metadata v6 with AllowAutoTopicCreation, so
	// naming it again creates a fresh, empty conn-b with num.partitions (1)
	// and a new topic ID, as Kafka does; as KRaft Kafka, that first answer
	// is UNKNOWN_TOPIC_OR_PARTITION and the next one has the partition.
	before, _ := c.Broker().Topic("conn-b")
	if _, err := client.Produce(ctx, &kafka.ProduceRequest{
		Topic: "conn-b", RequiredAcks: kafka.RequireAll, Records: kafka.NewRecordReader(kafka.Record{Value: kafka.NewBytes([]byte("x"))}),
	}); err != nil {
		t.Fatalf("produce to conn-b: %v", err)
	}
	if err := conn.DeleteTopics("conn-b"); err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	if _, ok := c.Broker().Topic("conn-b"); ok {
		t.Fatal("conn-b still exists after DeleteTopics")
	}
	if parts, err = conn.ReadPartitions("conn-b"); !errors.Is(err, kafka.UnknownTopicOrPartition) {
		t.Fatalf("first ReadPartitions(conn-b) after delete: %v, %v; want UNKNOWN_TOPIC_OR_PARTITION", parts, err)
	}
	parts, err = conn.ReadPartitions("conn-b")
	if err != nil || len(parts) != 1 || parts[0].ID != 0 {
		t.Fatalf("ReadPartitions(conn-b) after delete: %v, %v; want one partition (auto-created)", parts, err)
	}
	after, ok := c.Broker().Topic("conn-b")
	if !ok || after.ID == before.ID {
		t.Fatalf("conn-b after delete: exists %v, same id %v", ok, ok && after.ID == before.ID)
	}
	b, err := kafka.DialLeader(ctx, "tcp", c.Addr(), "conn-b", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if first, last, err := b.ReadOffsets(); err != nil || first != 0 || last != 0 {
		t.Fatalf("recreated conn-b offsets %d..%d (%v), want 0..0", first, last, err)
	}
}

// TestKafkaGoClientAdmin: kafka-go's Client (request versions negotiated
// through ApiVersions): Metadata, ListOffsets (first, last, by time),
// DescribeConfigs, CreatePartitions and DeleteTopics answer as Kafka does.
func TestKafkaGoClientAdmin(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t,
		minibrokertest.TopicWithConfigs("admin", 2, map[string]string{"retention.ms": "3600000"}),
		minibrokertest.Topic("doomed", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	transport := &kafka.Transport{DialTimeout: 5 * time.Second}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(c.Addr()), Transport: transport}

	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	if md.ClusterID != c.ClusterID() || md.Controller.ID != 0 || len(md.Brokers) != 1 ||
		net.JoinHostPort(md.Brokers[0].Host, strconv.Itoa(md.Brokers[0].Port)) != c.Addr() {
		t.Fatalf("metadata: cluster %q controller %+v brokers %+v", md.ClusterID, md.Controller, md.Brokers)
	}
	if len(md.Topics) != 1 || md.Topics[0].Name != "admin" || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != 2 {
		t.Fatalf("metadata topics: %+v", md.Topics)
	}

	// Partition 1 holds five records stamped base+0s … base+4s.
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	var recs []kafka.Record
	for i := range 5 {
		recs = append(recs, kafka.Record{Time: base.Add(time.Duration(i) * time.Second), Value: kafka.NewBytes([]byte(strconv.Itoa(i)))})
	}
	pr, err := client.Produce(ctx, &kafka.ProduceRequest{Topic: "admin", Partition: 1, RequiredAcks: kafka.RequireAll,
		Records: kafka.NewRecordReader(recs...)})
	if err != nil || pr.Error != nil || pr.BaseOffset != 0 {
		t.Fatalf("produce: %+v, %v", pr, err)
	}
	lo, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		"admin": {kafka.FirstOffsetOf(1), kafka.LastOffsetOf(1), kafka.TimeOffsetOf(1, base.Add(2500*time.Millisecond)), kafka.LastOffsetOf(0)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]kafka.PartitionOffsets{}
	for _, po := range lo.Topics["admin"] {
		if po.Error != nil {
			t.Fatalf("list offsets partition %d: %v", po.Partition, po.Error)
		}
		got[po.Partition] = po
	}
	// By time: offset 3, the first record at or after base+2.5s. kafka-go
	// reports the time it asked for, not the record's (it overwrites the
	// response's timestamp to match requests to responses).
	at := base.Add(2500 * time.Millisecond)
	if p1 := got[1]; p1.FirstOffset != 0 || p1.LastOffset != 5 || len(p1.Offsets) != 1 || !p1.Offsets[3].Equal(at) {
		t.Fatalf("list offsets partition 1: %+v; want first 0, last 5, offset 3 (at base+2.5s)", p1)
	}
	if p0 := got[0]; p0.LastOffset != 0 {
		t.Fatalf("list offsets partition 0: %+v; want last 0", p0)
	}

	dc, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: "admin", ConfigNames: []string{"retention.ms", "segment.bytes"}},
		{ResourceType: kafka.ResourceTypeBroker, ResourceName: "0", ConfigNames: []string{"log.retention.ms"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for _, r := range dc.Resources {
		if r.Error != nil {
			t.Fatalf("describe configs %s: %v", r.ResourceName, r.Error)
		}
		for _, e := range r.ConfigEntries {
			// IsDefault is only filled in at v0; kafka-go asks a later
			// version, which carries the source instead.
			entries = append(entries, fmt.Sprintf("%s %s=%s source=%d", r.ResourceName, e.ConfigName, e.ConfigValue, e.ConfigSource))
		}
	}
	slices.Sort(entries)
	// Sources: 1 DYNAMIC_TOPIC_CONFIG, 5 DEFAULT_CONFIG.
	if want := []string{"0 log.retention.ms=604800000 source=5", "admin retention.ms=3600000 source=1",
		"admin segment.bytes=1073741824 source=5"}; !slices.Equal(entries, want) {
		t.Fatalf("describe configs: %q, want %q", entries, want)
	}

	cp, err := client.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{
		{Name: "admin", Count: 4}, {Name: "doomed", Count: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Errors["admin"] != nil || !errors.Is(cp.Errors["doomed"], kafka.InvalidPartitionNumber) {
		t.Fatalf("create partitions: %v", cp.Errors)
	}
	if tp, _ := c.Broker().Topic("admin"); len(tp.Partitions) != 4 {
		t.Fatalf("admin has %d partitions after CreatePartitions, want 4", len(tp.Partitions))
	}

	dt, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{"doomed", "never-was"}})
	if err != nil {
		t.Fatal(err)
	}
	if dt.Errors["doomed"] != nil || !errors.Is(dt.Errors["never-was"], kafka.UnknownTopicOrPartition) {
		t.Fatalf("delete topics: %v", dt.Errors)
	}
	if _, ok := c.Broker().Topic("doomed"); ok {
		t.Fatal("doomed still exists")
	}
}
