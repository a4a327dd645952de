package clients

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/minibrokertest"
)

// segmentio/kafka-go: Writer, Reader (partition and group), Client. It has
// no idempotent or transactional producer; its Reader takes an
// IsolationLevel.

func kafkagoCompatVersion(t *testing.T) string {
	return "kafka-go " + moduleVersion(t, "github.com/segmentio/kafka-go")
}

func kafkagoCompat(t *testing.T, m *compatMatrix) {
	const client = "kafka-go"
	compatSecurityRows(t, m, client, kafkagoSecureProduce)
	c := minibrokertest.Start(t)
	transport := &kafka.Transport{DialTimeout: 5 * time.Second}
	t.Cleanup(transport.CloseIdleConnections)
	kc := &kafka.Client{Addr: kafka.TCP(c.Addr()), Transport: transport, Timeout: 20 * time.Second}

	kafkagoStaleMetadata(t, m, c)
	compatProduceRows(t, m, client, c, map[compatRow]string{
		rowIdempotent: "kafka-go has no idempotent producer: its Writer sends no producer id.",
	}, func(t *testing.T, topic string, values []string, spec produceSpec) string {
		w := &kafka.Writer{
			Addr:         kafka.TCP(c.Addr()),
			Topic:        topic,
			RequiredAcks: map[string]kafka.RequiredAcks{"0": kafka.RequireNone, "1": kafka.RequireOne, "all": kafka.RequireAll}[spec.acks],
			Compression: map[int8]compress.Compression{batch.CodecNone: 0, batch.CodecGzip: kafka.Gzip,
				batch.CodecSnappy: kafka.Snappy, batch.CodecLZ4: kafka.Lz4, batch.CodecZstd: kafka.Zstd}[spec.codec],
			BatchTimeout: 5 * time.Millisecond,
			WriteTimeout: 10 * time.Second,
			// A Transport of its own: a shared one answers from metadata
			// cached before the topic existed (see kafkagoStaleMetadata).
			Transport: &kafka.Transport{DialTimeout: 5 * time.Second},
		}
		defer w.Transport.(*kafka.Transport).CloseIdleConnections()
		var msgs []kafka.Message
		for _, v := range values {
			msgs = append(msgs, kafka.Message{Value: []byte(v)})
		}
		if err := w.WriteMessages(itest.CompatCtx(t), msgs...); err != nil {
			w.Close()
			t.Fatalf("WriteMessages: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return ""
	}, func(t *testing.T, topic string, n int) []itest.CompatRecord {
		return kafkagoRead(t, c.Addr(), topic, false, func(got []itest.CompatRecord) bool { return len(got) >= n })
	})

	m.lacks(t, client, rowTxn, "kafka-go has no transactional producer. Its Reader takes IsolationLevel "+
		"read_committed: see the control-batches row, over transactions kgo wrote.")
	m.lacks(t, client, rowTxnV2, "kafka-go has no transactional producer.")
	m.cell(t, client, rowControl, func(t *testing.T) string {
		src, v := barrierPartition(t, c)
		names := map[string]string{}
		for name, value := range v {
			names[value] = name
		}
		describe := func(committed bool) string {
			got := kafkagoRead(t, c.Addr(), "ctl", committed, func(got []itest.CompatRecord) bool {
				return len(got) > 0 && got[len(got)-1].Offset == 9
			})
			var parts []string
			for _, r := range got {
				parts = append(parts, fmt.Sprintf("%d %s", r.Offset, kafkagoDescribe(t, r, names, src)))
			}
			return strings.Join(parts, ", ")
		}
		committed, uncommitted := describe(true), describe(false)
		seen := "read_committed returned " + committed + "; read_uncommitted returned " + uncommitted + "."
		if committed == uncommitted {
			seen = "read_committed and read_uncommitted both returned, in order: " + committed + "."
		}
		return "kafka-go's Reader hands control records to the application as ordinary messages (`kafka.Message` " +
			"has no control flag). Over a partition holding `t-0 t-1 COMMIT x-0 ABORT p-0 MIRROR_PID_RESET u-0 COMMIT p-1` " +
			"(x-0 aborted), " + seen + " So each COMMIT/ABORT marker arrives as a message whose key is the control " +
			"key (int16 version 0, int16 type: 1 commit, 0 abort) and whose value is the marker (version, coordinator " +
			"epoch); a MIRROR_PID_RESET barrier arrives the same way with key 00000007 and its MirrorPidResetRecord " +
			"value; and read_committed still delivers aborted records (kafka-go reads the fetch response's " +
			"aborted-transaction list and drops it). An application on kafka-go sees one extra message per marker " +
			"and per barrier and must skip them itself, by content."
	})
	compatGroupRow(t, m, client, c, func(t *testing.T, group, topic string) itest.CompatMember {
		return itest.StartKafkagoMember(t, c.Addr(), group, topic)
	})
	m.lacks(t, client, rowGroup848, "kafka-go's consumer group speaks the classic protocol only (no ConsumerGroupHeartbeat).")

	kafkagoConnCreateTopics(t, m, c, kc)
	compatAdminRows(t, m, client, c, adminOps{
		create: func(t *testing.T, topic string, parts int32, configs map[string]string) {
			var entries []kafka.ConfigEntry
			for k, v := range configs {
				entries = append(entries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
			}
			resp, err := kc.CreateTopics(itest.CompatCtx(t), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
				{Topic: topic, NumPartitions: int(parts), ReplicationFactor: 1, ConfigEntries: entries}}})
			if err == nil {
				err = resp.Errors[topic]
			}
			if err != nil {
				t.Fatalf("CreateTopics: %v", err)
			}
		},
		delete: func(t *testing.T, topic string) {
			resp, err := kc.DeleteTopics(itest.CompatCtx(t), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
			if err == nil {
				err = resp.Errors[topic]
			}
			if err != nil {
				t.Fatalf("DeleteTopics: %v", err)
			}
		},
		describe: func(t *testing.T, topic string) map[string]string {
			resp, err := kc.DescribeConfigs(itest.CompatCtx(t), &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
				{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic}}})
			if err != nil || len(resp.Resources) != 1 || resp.Resources[0].Error != nil {
				t.Fatalf("DescribeConfigs: %v %+v", err, resp)
			}
			out := map[string]string{}
			for _, e := range resp.Resources[0].ConfigEntries {
				out[e.ConfigName] = e.ConfigValue
			}
			return out
		},
		listEnds: func(t *testing.T, topic string) (int64, int64) {
			resp, err := kc.ListOffsets(itest.CompatCtx(t), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
				topic: {kafka.FirstOffsetOf(0), kafka.LastOffsetOf(0)}}})
			if err != nil || len(resp.Topics[topic]) != 1 || resp.Topics[topic][0].Error != nil {
				t.Fatalf("ListOffsets: %v %+v", err, resp)
			}
			po := resp.Topics[topic][0]
			return po.FirstOffset, po.LastOffset
		},
		listTime: func(t *testing.T, topic string, ts time.Time) int64 {
			resp, err := kc.ListOffsets(itest.CompatCtx(t), &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
				topic: {kafka.TimeOffsetOf(0, ts)}}})
			if err != nil || len(resp.Topics[topic]) != 1 || resp.Topics[topic][0].Error != nil || len(resp.Topics[topic][0].Offsets) != 1 {
				t.Fatalf("ListOffsets: %v %+v", err, resp)
			}
			for o := range resp.Topics[topic][0].Offsets {
				return o
			}
			return -1
		},
	})
}

// kafkagoRead reads partition 0 from offset 0 with a partition Reader until
// done says so.
func kafkagoRead(t *testing.T, addr, topic string, committed bool, done func([]itest.CompatRecord) bool) []itest.CompatRecord {
	t.Helper()
	iso := kafka.ReadUncommitted
	if committed {
		iso = kafka.ReadCommitted
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: 0,
		MaxWait: 100 * time.Millisecond, IsolationLevel: iso})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		t.Fatal(err)
	}
	ctx := itest.CompatCtx(t)
	var out []itest.CompatRecord
	for !done(out) {
		msg, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go read %s after %d messages: %v", topic, len(out), err)
		}
		out = append(out, itest.CompatRecord{Partition: int32(msg.Partition), Offset: msg.Offset, Key: msg.Key, Value: string(msg.Value)})
	}
	return out
}

// kafkagoDescribe names what kafka-go handed out: a data record by name,
// or a control record by its key and value.
func kafkagoDescribe(t *testing.T, r itest.CompatRecord, names map[string]string, sourceClusterID string) string {
	if name, ok := names[r.Value]; ok {
		return name
	}
	key := hex.EncodeToString(r.Key)
	if len(r.Key) == 4 && key == "00000007" {
		var v batch.MirrorPidResetRecord
		if err := v.ReadFrom([]byte(r.Value)); err != nil || v.SourceClusterID != sourceClusterID {
			t.Fatalf("offset %d: barrier value %x (%v), source cluster %q", r.Offset, r.Value, err, sourceClusterID)
		}
		return "key=" + key + " value=MirrorPidResetRecord{v0, source cluster id}"
	}
	return fmt.Sprintf("key=%s value=%s", key, hex.EncodeToString([]byte(r.Value)))
}

// kafkagoStaleMetadata: a kafka.Transport caches metadata (MetadataTTL,
// 6 s by default); a Writer on a Transport that cached it before a topic
// was created fails with UNKNOWN_TOPIC_OR_PARTITION instead of refreshing.
func kafkagoStaleMetadata(t *testing.T, m *compatMatrix, c *minibrokertest.Cluster) {
	t.Run("stale-metadata", func(t *testing.T) {
		// MetadataTTL is set so that the test does not depend on how long
		// the two writes take; the default is 6 s.
		transport := &kafka.Transport{DialTimeout: 5 * time.Second, MetadataTTL: time.Hour}
		defer transport.CloseIdleConnections()
		write := func(topic string) error {
			w := &kafka.Writer{Addr: kafka.TCP(c.Addr()), Topic: topic, RequiredAcks: kafka.RequireAll,
				BatchTimeout: 5 * time.Millisecond, WriteTimeout: 10 * time.Second, Transport: transport}
			err := w.WriteMessages(itest.CompatCtx(t), kafka.Message{Value: []byte("v")})
			w.Close()
			return err
		}
		itest.CreateCompatTopic(t, c, "stale-a", 1)
		if err := write("stale-a"); err != nil {
			t.Fatalf("first write: %v", err)
		}
		itest.CreateCompatTopic(t, c, "stale-b", 1)
		err := write("stale-b")
		if errors.Is(err, kafka.UnknownTopicOrPartition) {
			m.quirk("kafka-go", "a `kafka.Transport` caches metadata for `MetadataTTL` (6 s by default): a Writer "+
				"on a Transport that fetched metadata before a topic was created fails with "+
				"UNKNOWN_TOPIC_OR_PARTITION, without retrying, until the cache expires. The matrix gives each Writer its own Transport.")
			return
		}
		t.Logf("write to a topic created after the Transport cached metadata: %v", err)
	})
}

// kafkagoConnCreateTopics: Conn.CreateTopics drops TOPIC_ALREADY_EXISTS
// (creating an existing topic, with another partition count, is no error
// and changes nothing); kafka.Client.CreateTopics reports it.
func kafkagoConnCreateTopics(t *testing.T, m *compatMatrix, c *minibrokertest.Cluster, kc *kafka.Client) {
	t.Run("conn-create-topics", func(t *testing.T) {
		itest.CreateCompatTopic(t, c, "conn-exists", 1)
		conn, err := kafka.DialContext(itest.CompatCtx(t), "tcp", c.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		connErr := conn.CreateTopics(kafka.TopicConfig{Topic: "conn-exists", NumPartitions: 3, ReplicationFactor: 1})
		resp, err := kc.CreateTopics(itest.CompatCtx(t), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
			{Topic: "conn-exists", NumPartitions: 3, ReplicationFactor: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		tp, _ := c.Broker().Topic("conn-exists")
		if len(tp.Partitions) != 1 {
			t.Fatalf("conn-exists has %d partitions after the second create, want 1", len(tp.Partitions))
		}
		if connErr == nil && errors.Is(resp.Errors["conn-exists"], kafka.TopicAlreadyExists) {
			m.quirk("kafka-go", "`Conn.CreateTopics` drops TOPIC_ALREADY_EXISTS: creating an existing topic (with "+
				"another partition count) returns nil and changes nothing; `kafka.Client.CreateTopics` reports the error.")
			return
		}
		t.Logf("Conn.CreateTopics on an existing topic: %v; Client.CreateTopics: %v", connErr, resp.Errors["conn-exists"])
	})
}
