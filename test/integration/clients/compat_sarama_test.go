package clients

import (
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/minibrokertest"
)

// IBM/sarama: SyncProducer, PartitionConsumer, ConsumerGroup, ClusterAdmin
// and Client. Every config leaves Version at sarama's default.

func saramaCompatVersion(t *testing.T) string {
	return "sarama " + moduleVersion(t, "github.com/IBM/sarama")
}

func saramaCompat(t *testing.T, m *compatMatrix) {
	const client = "sarama"
	compatSecurityRows(t, m, client, saramaSecureProduce)
	c := minibrokertest.Start(t)
	addrs := []string{c.Addr()}
	compatProduceRows(t, m, client, c, nil, func(t *testing.T, topic string, values []string, spec produceSpec) string {
		cfg := itest.SaramaCompatConfig()
		cfg.Producer.RequiredAcks = map[string]sarama.RequiredAcks{"0": sarama.NoResponse, "1": sarama.WaitForLocal, "all": sarama.WaitForAll}[spec.acks]
		cfg.Producer.Compression = map[int8]sarama.CompressionCodec{batch.CodecNone: sarama.CompressionNone,
			batch.CodecGzip: sarama.CompressionGZIP, batch.CodecSnappy: sarama.CompressionSnappy,
			batch.CodecLZ4: sarama.CompressionLZ4, batch.CodecZstd: sarama.CompressionZSTD}[spec.codec]
		if spec.idempotent {
			cfg.Producer.Idempotent = true
			cfg.Net.MaxOpenRequests = 1
		}
		var msgs []*sarama.ProducerMessage
		for _, v := range values {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)})
		}
		prod, err := sarama.NewSyncProducer(addrs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		if err := prod.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
		if spec.acks != "0" {
			for i, msg := range msgs {
				if msg.Offset != int64(i) {
					t.Fatalf("message %d acknowledged at offset %d", i, msg.Offset)
				}
			}
		}
		return ""
	}, func(t *testing.T, topic string, n int) []itest.CompatRecord {
		return saramaCompatRead(t, addrs, topic, false, n)
	})

	compatTxnRow(t, m, client, c, func(t *testing.T, topic string, commit bool, values []string) {
		cfg := itest.SaramaCompatConfig()
		cfg.Producer.Idempotent = true
		cfg.Producer.Transaction.ID = "sarama-compat"
		cfg.Producer.Transaction.Retry.Backoff = 20 * time.Millisecond
		cfg.Net.MaxOpenRequests = 1
		p, err := sarama.NewSyncProducer(addrs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)}); err != nil {
				t.Fatal(err)
			}
		}
		if commit {
			err = p.CommitTxn()
		} else {
			err = p.AbortTxn()
		}
		if err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}, func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord {
		return saramaCompatRead(t, addrs, topic, committed, n)
	})
	m.lacks(t, client, rowTxnV2, "sarama v1.61.1 does not use transaction version 2 (KIP-890 part 2): it sends EndTxn up to v3 and "+
		"Produce up to v10 and adds partitions with AddPartitionsToTxn; its transactions run on the older protocol (the transactions row).")
	compatControlRow(t, m, client, c, func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord {
		return saramaCompatRead(t, addrs, topic, committed, n)
	})
	compatGroupRow(t, m, client, c, func(t *testing.T, group, topic string) itest.CompatMember {
		return itest.StartSaramaMember(t, addrs, group, topic)
	})
	m.lacks(t, client, rowGroup848, "sarama's consumer group speaks the classic protocol only (no ConsumerGroupHeartbeat).")

	admin := func(t *testing.T) sarama.ClusterAdmin {
		adm, err := sarama.NewClusterAdmin(addrs, itest.SaramaCompatConfig())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { adm.Close() })
		return adm
	}
	offset := func(t *testing.T, topic string, at int64) int64 {
		cl, err := sarama.NewClient(addrs, itest.SaramaCompatConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		o, err := cl.GetOffset(topic, 0, at)
		if err != nil {
			t.Fatalf("GetOffset %d: %v", at, err)
		}
		return o
	}
	compatAdminRows(t, m, client, c, adminOps{
		create: func(t *testing.T, topic string, parts int32, configs map[string]string) {
			entries := map[string]*string{}
			for k, v := range configs {
				entries[k] = &v
			}
			if err := admin(t).CreateTopic(topic, &sarama.TopicDetail{NumPartitions: parts, ReplicationFactor: 1, ConfigEntries: entries}, false); err != nil {
				t.Fatalf("CreateTopic: %v", err)
			}
		},
		delete: func(t *testing.T, topic string) {
			if err := admin(t).DeleteTopic(topic); err != nil {
				t.Fatalf("DeleteTopic: %v", err)
			}
		},
		describe: func(t *testing.T, topic string) map[string]string {
			entries, err := itest.SaramaDescribeConfig(admin(t), sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
			if err != nil {
				t.Fatalf("DescribeConfig: %v", err)
			}
			out := map[string]string{}
			for _, e := range entries {
				out[e.Name] = e.Value
			}
			return out
		},
		listEnds: func(t *testing.T, topic string) (int64, int64) {
			return offset(t, topic, sarama.OffsetOldest), offset(t, topic, sarama.OffsetNewest)
		},
		listTime: func(t *testing.T, topic string, ts time.Time) int64 {
			return offset(t, topic, ts.UnixMilli())
		},
	})
}

// saramaCompatRead reads n messages of partition 0 with a
// PartitionConsumer.
func saramaCompatRead(t *testing.T, addrs []string, topic string, committed bool, n int) []itest.CompatRecord {
	t.Helper()
	cfg := itest.SaramaCompatConfig()
	if committed {
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	cons, err := sarama.NewConsumer(addrs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var out []itest.CompatRecord
	deadline := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case msg := <-pc.Messages():
			out = append(out, itest.CompatRecord{Partition: msg.Partition, Offset: msg.Offset, Key: msg.Key, Value: string(msg.Value)})
		case err := <-pc.Errors():
			t.Fatalf("consume %s: %v", topic, err)
		case <-deadline:
			t.Fatalf("read %d of %d messages of %s", len(out), n, topic)
		}
	}
	return out
}
