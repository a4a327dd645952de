package clients

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"

	"github.com/minibroker/minibroker/minibrokertest"
)

// saramaMessages builds n messages spread over parts partitions
// (message i goes to partition i%parts), each with a key, a value and a
// header.
func saramaMessages(topic string, parts, n int) []*sarama.ProducerMessage {
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{
			Topic:     topic,
			Partition: int32(i % parts),
			Key:       sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("sarama-value-%05d", i)),
			Headers:   []sarama.RecordHeader{{Key: []byte("i"), Value: []byte(fmt.Sprint(i))}},
		}
	}
	return msgs
}

// saramaProduce sends msgs with one SyncProducer and checks the offsets it
// reports: per partition 0, 1, 2, … in send order (acks=0 gets no
// response, so no offsets: that producer only learns the message left).
func saramaProduce(t *testing.T, addr string, cfg *sarama.Config, msgs []*sarama.ProducerMessage) {
	t.Helper()
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer func() {
		if err := prod.Close(); err != nil {
			t.Errorf("producer close: %v", err)
		}
	}()
	// Send in a few chunks so several batches per partition go out.
	for start := 0; start < len(msgs); start += 100 {
		if err := prod.SendMessages(msgs[start:min(start+100, len(msgs))]); err != nil {
			t.Fatalf("SendMessages: %v", err)
		}
	}
	if cfg.Producer.RequiredAcks == sarama.NoResponse {
		return
	}
	next := map[int32]int64{}
	for i, m := range msgs {
		if m.Offset != next[m.Partition] {
			t.Fatalf("message %d: partition %d offset %d, want %d", i, m.Partition, m.Offset, next[m.Partition])
		}
		next[m.Partition]++
	}
}

// saramaConsumeCheck reads every partition from the oldest offset with a
// sarama PartitionConsumer and checks each message against msgs: same
// offsets, keys, values and headers, in send order per partition.
func saramaConsumeCheck(t *testing.T, addr string, cfg *sarama.Config, topic string, parts int, msgs []*sarama.ProducerMessage) {
	t.Helper()
	want := make([][]*sarama.ProducerMessage, parts)
	for _, m := range msgs {
		want[m.Partition] = append(want[m.Partition], m)
	}
	cons, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer cons.Close()
	for p := range parts {
		pc, err := cons.ConsumePartition(topic, int32(p), sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition %d: %v", p, err)
		}
		timeout := time.After(20 * time.Second)
		for i := 0; i < len(want[p]); i++ {
			var got *sarama.ConsumerMessage
			select {
			case got = <-pc.Messages():
			case err := <-pc.Errors():
				pc.Close()
				t.Fatalf("partition %d: consume error: %v", p, err)
			case <-timeout:
				pc.Close()
				t.Fatalf("partition %d: consumed %d of %d messages", p, i, len(want[p]))
			}
			w := want[p][i]
			wk, _ := w.Key.Encode()
			wv, _ := w.Value.Encode()
			if got.Offset != int64(i) || got.Partition != int32(p) || string(got.Key) != string(wk) || string(got.Value) != string(wv) {
				pc.Close()
				t.Fatalf("partition %d message %d: got p%d@%d %s=%s, want p%d@%d %s=%s",
					p, i, got.Partition, got.Offset, got.Key, got.Value, p, i, wk, wv)
			}
			if len(got.Headers) != 1 || string(got.Headers[0].Key) != "i" || string(got.Headers[0].Value) != string(w.Headers[0].Value) {
				pc.Close()
				t.Fatalf("partition %d offset %d: headers %v, want i=%s", p, i, got.Headers, w.Headers[0].Value)
			}
			if got.Timestamp.IsZero() || time.Since(got.Timestamp) > time.Minute {
				pc.Close()
				t.Fatalf("partition %d offset %d: timestamp %v", p, i, got.Timestamp)
			}
		}
		// Nothing beyond what was produced: the high watermark the last
		// fetch reported is the count.
		if hwm := pc.HighWaterMarkOffset(); hwm != int64(len(want[p])) {
			t.Errorf("partition %d: high watermark %d, want %d", p, hwm, len(want[p]))
		}
		if err := pc.Close(); err != nil {
			t.Fatalf("partition %d: close: %v", p, err)
		}
	}
}

func TestSaramaSyncProducer(t *testing.T) {
	t.Parallel()
	const parts, n = 3, 300
	versions := []sarama.KafkaVersion{sarama.DefaultVersion, sarama.MaxVersion}
	for _, version := range versions {
		for _, mode := range []string{"acks=all", "acks=1", "acks=0", "idempotent"} {
			t.Run(version.String()+"/"+mode, func(t *testing.T) {
				t.Parallel()
				c := minibrokertest.Start(t, minibrokertest.Topic("sarama", parts))
				cfg := itest.SaramaConfig(version)
				switch mode {
				case "acks=all":
					cfg.Producer.RequiredAcks = sarama.WaitForAll
				case "acks=1":
					cfg.Producer.RequiredAcks = sarama.WaitForLocal
				case "acks=0":
					// No response per Produce: the broker must still
					// answer the requests pipelined behind it in order.
					cfg.Producer.RequiredAcks = sarama.NoResponse
				case "idempotent":
					cfg.Producer.Idempotent = true
					cfg.Producer.RequiredAcks = sarama.WaitForAll
					cfg.Net.MaxOpenRequests = 1
					cfg.Producer.Retry.Max = 5
				}
				msgs := saramaMessages("sarama", parts, n)
				saramaProduce(t, c.Addr(), cfg, msgs)
				saramaConsumeCheck(t, c.Addr(), cfg, "sarama", parts, msgs)
				if mode == "idempotent" {
					// The batches carry the producer id the broker handed
					// out (the first on a fresh cluster: 0) with sequences.
					for _, r := range itest.ConsumeAll(t, c.Addr(), "sarama", n) {
						if r.ProducerID != 0 || r.ProducerEpoch != 0 {
							t.Fatalf("record p%d@%d: producer %d/%d, want 0/0", r.Partition, r.Offset, r.ProducerID, r.ProducerEpoch)
						}
					}
				}
			})
		}
	}
}

// TestSaramaCompression: batches sarama compresses with each codec are
// stored as they came (kgo sees the codec in the batch attributes) and
// consumed back intact by sarama.
func TestSaramaCompression(t *testing.T) {
	t.Parallel()
	codecs := []struct {
		codec sarama.CompressionCodec
		kgo   uint8 // RecordAttrs.CompressionType
	}{
		{sarama.CompressionGZIP, 1},
		{sarama.CompressionSnappy, 2},
		{sarama.CompressionLZ4, 3},
		{sarama.CompressionZSTD, 4},
	}
	const parts, n = 2, 400
	for _, cc := range codecs {
		t.Run(cc.codec.String(), func(t *testing.T) {
			t.Parallel()
			c := minibrokertest.Start(t, minibrokertest.Topic("zipped", parts))
			cfg := itest.SaramaConfig(sarama.DefaultVersion)
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Compression = cc.codec
			msgs := saramaMessages("zipped", parts, n)
			saramaProduce(t, c.Addr(), cfg, msgs)
			saramaConsumeCheck(t, c.Addr(), cfg, "zipped", parts, msgs)
			got := itest.ConsumeAll(t, c.Addr(), "zipped", n)
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

// TestSaramaProduceErrors: sarama surfaces the broker's codes for a batch
// over message.max.bytes (MESSAGE_TOO_LARGE; nothing is written) and for
// an unknown topic when auto-creation is off (UNKNOWN_TOPIC_OR_PARTITION).
func TestSaramaProduceErrors(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("small", 1),
		minibrokertest.Set("message.max.bytes", "2000"), minibrokertest.Set("auto.create.topics.enable", "false"))
	cfg := itest.SaramaConfig(sarama.DefaultVersion)
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.MaxMessageBytes = 1 << 20 // let the broker be the one to refuse
	cfg.Producer.Retry.Max = 1
	cfg.Producer.Retry.Backoff = 10 * time.Millisecond
	cfg.Metadata.Retry.Max = 1
	cfg.Metadata.Retry.Backoff = 10 * time.Millisecond
	prod, err := sarama.NewSyncProducer([]string{c.Addr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	big := &sarama.ProducerMessage{Topic: "small", Value: sarama.ByteEncoder(make([]byte, 5000))}
	if _, _, err := prod.SendMessage(big); !errors.Is(err, sarama.ErrMessageSizeTooLarge) {
		t.Fatalf("5000-byte message: %v, want %v", err, sarama.ErrMessageSizeTooLarge)
	}
	ok := &sarama.ProducerMessage{Topic: "small", Value: sarama.StringEncoder("fits")}
	if p, off, err := prod.SendMessage(ok); err != nil || p != 0 || off != 0 {
		t.Fatalf("small message: %d@%d, %v; want 0@0 (nothing written before)", p, off, err)
	}
	missing := &sarama.ProducerMessage{Topic: "missing", Value: sarama.StringEncoder("x")}
	if _, _, err := prod.SendMessage(missing); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v, want %v", err, sarama.ErrUnknownTopicOrPartition)
	}
	if _, ok := c.Broker().Topic("missing"); ok {
		t.Fatal("topic missing was created")
	}
}

// TestSaramaClusterAdmin: sarama's ClusterAdmin (request versions chosen
// from Config.Version, not negotiated) at 2.8 and at its newest version.
func TestSaramaClusterAdmin(t *testing.T) {
	t.Parallel()
	for _, version := range []sarama.KafkaVersion{sarama.DefaultVersion, sarama.MaxVersion} {
		t.Run(version.String(), func(t *testing.T) {
			t.Parallel()
			c := minibrokertest.Start(t)
			cfg := itest.SaramaConfig(version)
			cfg.Admin.Retry.Max = 1
			cfg.Admin.Retry.Backoff = 10 * time.Millisecond
			adm, err := sarama.NewClusterAdmin([]string{c.Addr()}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer adm.Close()

			retention := "3600000"
			if err := adm.CreateTopic("admin", &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
				ConfigEntries: map[string]*string{"retention.ms": &retention}}, false); err != nil {
				t.Fatalf("CreateTopic: %v", err)
			}
			for _, tc := range []struct {
				topic  string
				detail sarama.TopicDetail
				want   sarama.KError
			}{
				{"admin", sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, sarama.ErrTopicAlreadyExists},
				{"replicated", sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 3}, sarama.ErrInvalidReplicationFactor},
				{"bad name", sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, sarama.ErrInvalidTopic},
			} {
				if err := adm.CreateTopic(tc.topic, &tc.detail, false); !errors.Is(err, tc.want) {
					t.Fatalf("CreateTopic %q: %v, want %v", tc.topic, err, tc.want)
				}
			}

			topics, err := adm.ListTopics()
			if err != nil {
				t.Fatalf("ListTopics: %v", err)
			}
			// sarama lists the internal topics too.
			delete(topics, "__consumer_offsets")
			delete(topics, "__transaction_state")
			delete(topics, "__mirror_state")
			delete(topics, "__share_group_state")
			d, ok := topics["admin"]
			if len(topics) != 1 || !ok || d.NumPartitions != 3 || d.ReplicationFactor != 1 || len(d.ConfigEntries) != 1 ||
				d.ConfigEntries["retention.ms"] == nil || *d.ConfigEntries["retention.ms"] != retention {
				t.Fatalf("ListTopics: %+v (admin: %+v)", topics, d)
			}

			entries, err := itest.SaramaDescribeConfig(adm, sarama.ConfigResource{Type: sarama.TopicResource, Name: "admin",
				ConfigNames: []string{"retention.ms", "retention.bytes"}})
			if err != nil {
				t.Fatalf("DescribeConfig: %v", err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, fmt.Sprintf("%s=%s default=%v source=%v", e.Name, e.Value, e.Default, e.Source))
			}
			slices.Sort(got)
			if want := []string{"retention.bytes=-1 default=true source=Default", "retention.ms=3600000 default=false source=Topic"}; !slices.Equal(got, want) {
				t.Fatalf("DescribeConfig: %q, want %q", got, want)
			}

			brokers, controller, err := adm.DescribeCluster()
			if err != nil || controller != 0 || len(brokers) != 1 || brokers[0].ID() != 0 || brokers[0].Addr() != c.Addr() {
				t.Fatalf("DescribeCluster: %v, controller %d, %v", brokers, controller, err)
			}

			if err := adm.CreatePartitions("admin", 5, nil, false); err != nil {
				t.Fatalf("CreatePartitions: %v", err)
			}
			if err := adm.CreatePartitions("admin", 2, nil, false); !errors.Is(err, sarama.ErrInvalidPartitions) {
				t.Fatalf("CreatePartitions shrinking: %v, want %v", err, sarama.ErrInvalidPartitions)
			}
			md, err := adm.DescribeTopics([]string{"admin"})
			if err != nil || len(md) != 1 || len(md[0].Partitions) != 5 {
				t.Fatalf("DescribeTopics: %v, %v", md, err)
			}

			// DeleteRecords: four records in partition 4, delete below 3.
			msgs := []*sarama.ProducerMessage{}
			for i := range 4 {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: "admin", Partition: 4, Value: sarama.StringEncoder(fmt.Sprint(i))})
			}
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			saramaProduce(t, c.Addr(), cfg, msgs)
			if err := adm.DeleteRecords("admin", map[int32]int64{4: 3}); err != nil {
				t.Fatalf("DeleteRecords: %v", err)
			}
			client, err := sarama.NewClient([]string{c.Addr()}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			if first, err := client.GetOffset("admin", 4, sarama.OffsetOldest); err != nil || first != 3 {
				t.Fatalf("oldest offset after DeleteRecords: %d, %v; want 3", first, err)
			}
			if next, err := client.GetOffset("admin", 4, sarama.OffsetNewest); err != nil || next != 4 {
				t.Fatalf("newest offset: %d, %v; want 4", next, err)
			}

			if err := adm.DeleteTopic("admin"); err != nil {
				t.Fatalf("DeleteTopic: %v", err)
			}
			if err := adm.DeleteTopic("admin"); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
				t.Fatalf("second DeleteTopic: %v, want %v", err, sarama.ErrUnknownTopicOrPartition)
			}
			if _, ok := c.Broker().Topic("admin"); ok {
				t.Fatal("admin still exists")
			}
		})
	}
}
