package clients

import (
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/minibrokertest"
)

// confluent-kafka-go with the librdkafka it bundles: Producer (plain,
// idempotent, transactional), Consumer (assign and group) and AdminClient.

func confluentCompatVersion(t *testing.T) string {
	_, lib := kafka.LibraryVersion()
	return "confluent-kafka-go " + moduleVersion(t, "github.com/confluentinc/confluent-kafka-go/v2") + " (librdkafka " + lib + ")"
}

func confluentCompat(t *testing.T, m *compatMatrix) {
	const client = "confluent"
	compatSecurityRows(t, m, client, confluentSecureProduce)
	c := minibrokertest.Start(t, itest.Fast848()...)
	compatProduceRows(t, m, client, c, nil, func(t *testing.T, topic string, values []string, spec produceSpec) string {
		cfg := kafka.ConfigMap{"acks": spec.acks, "linger.ms": 5,
			"compression.codec": map[int8]string{batch.CodecNone: "none", batch.CodecGzip: "gzip", batch.CodecSnappy: "snappy",
				batch.CodecLZ4: "lz4", batch.CodecZstd: "zstd"}[spec.codec]}
		if spec.idempotent {
			cfg["enable.idempotence"] = true
		}
		p := newConfluentProducer(t, c.Addr(), cfg)
		offsets := confluentSend(t, p, topic, values)
		if spec.acks != "0" {
			for i, o := range offsets {
				if o != int64(i) {
					t.Fatalf("message %d delivered at offset %d", i, o)
				}
			}
		}
		return ""
	}, func(t *testing.T, topic string, n int) []itest.CompatRecord {
		return confluentRead(t, c.Addr(), topic, false, n)
	})

	// One producer runs the row's three transactions.
	var txnProducer *kafka.Producer
	compatTxnRow(t, m, client, c, func(t *testing.T, topic string, commit bool, values []string) {
		ctx := itest.CompatCtx(t)
		if txnProducer == nil {
			txnProducer = newConfluentProducer(t, c.Addr(), kafka.ConfigMap{"transactional.id": "confluent-compat"})
			if err := txnProducer.InitTransactions(ctx); err != nil {
				t.Fatal(err)
			}
		}
		p := txnProducer
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		confluentSend(t, p, topic, values)
		var err error
		if commit {
			err = p.CommitTransaction(ctx)
		} else {
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}, func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord {
		return confluentRead(t, c.Addr(), topic, committed, n)
	})
	var v2 *kafka.Producer
	compatTxnV2Row(t, m, client, c, "confluent-compat-v2", func(t *testing.T, topic string, commit bool, values []string) {
		ctx := itest.CompatCtx(t)
		if v2 == nil {
			v2 = newConfluentProducer(t, c.Addr(), kafka.ConfigMap{"transactional.id": "confluent-compat-v2"})
			if err := v2.InitTransactions(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := v2.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		confluentSend(t, v2, topic, values)
		var err error
		if commit {
			err = v2.CommitTransaction(ctx)
		} else {
			err = v2.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
	}, func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord {
		return confluentRead(t, c.Addr(), topic, committed, n)
	}, false, "librdkafka 2.11.1 does not use transaction version 2 (KIP-890 part 2): it adds partitions with AddPartitionsToTxn and "+
		"ends transactions with EndTxn v1, so its producer epoch does not move between transactions (checked); its transactions run on "+
		"the older protocol, which minibroker serves alongside (the transactions row).")
	compatControlRow(t, m, client, c, func(t *testing.T, topic string, committed bool, n int) []itest.CompatRecord {
		return confluentRead(t, c.Addr(), topic, committed, n)
	})
	compatGroupRow(t, m, client, c, func(t *testing.T, group, topic string) itest.CompatMember {
		return itest.StartConfluentMember(t, c.Addr(), group, topic)
	})
	compatGroup848Row(t, m, client, c, func(t *testing.T, group, topic string) itest.CompatMember {
		// librdkafka refuses session.timeout.ms and heartbeat.interval.ms
		// with the consumer protocol: the broker gives both.
		return itest.StartConfluentMemberWith(t, c.Addr(), group, topic, kafka.ConfigMap{"group.protocol": "consumer"})
	})

	admin := func(t *testing.T) *kafka.AdminClient {
		adm, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": c.Addr()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(adm.Close)
		return adm
	}
	listOffset := func(t *testing.T, topic string, spec kafka.OffsetSpec) int64 {
		res, err := admin(t).ListOffsets(itest.CompatCtx(t), map[kafka.TopicPartition]kafka.OffsetSpec{
			{Topic: &topic, Partition: 0}: spec})
		if err != nil || len(res.ResultInfos) != 1 {
			t.Fatalf("ListOffsets: %v %+v", err, res)
		}
		for _, info := range res.ResultInfos {
			if info.Error.Code() != kafka.ErrNoError {
				t.Fatalf("ListOffsets: %v", info.Error)
			}
			return int64(info.Offset)
		}
		return -1
	}
	compatAdminRows(t, m, client, c, adminOps{
		create: func(t *testing.T, topic string, parts int32, configs map[string]string) {
			res, err := admin(t).CreateTopics(itest.CompatCtx(t), []kafka.TopicSpecification{{Topic: topic, NumPartitions: int(parts),
				ReplicationFactor: 1, Config: configs}})
			if err != nil || len(res) != 1 || res[0].Error.Code() != kafka.ErrNoError {
				t.Fatalf("CreateTopics: %v %v", err, res)
			}
		},
		delete: func(t *testing.T, topic string) {
			res, err := admin(t).DeleteTopics(itest.CompatCtx(t), []string{topic})
			if err != nil || len(res) != 1 || res[0].Error.Code() != kafka.ErrNoError {
				t.Fatalf("DeleteTopics: %v %v", err, res)
			}
		},
		describe: func(t *testing.T, topic string) map[string]string {
			res, err := admin(t).DescribeConfigs(itest.CompatCtx(t), []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
			if err != nil || len(res) != 1 || res[0].Error.Code() != kafka.ErrNoError {
				t.Fatalf("DescribeConfigs: %v %v", err, res)
			}
			out := map[string]string{}
			for k, e := range res[0].Config {
				out[k] = e.Value
			}
			return out
		},
		listEnds: func(t *testing.T, topic string) (int64, int64) {
			return listOffset(t, topic, kafka.EarliestOffsetSpec), listOffset(t, topic, kafka.LatestOffsetSpec)
		},
		listTime: func(t *testing.T, topic string, ts time.Time) int64 {
			return listOffset(t, topic, kafka.NewOffsetSpecForTimestamp(ts.UnixMilli()))
		},
	})
}

// confluentRead reads n messages of partition 0 from the beginning with an
// assigned (group-less) consumer.
func confluentRead(t *testing.T, addr, topic string, committed bool, n int) []itest.CompatRecord {
	t.Helper()
	iso := "read_uncommitted"
	if committed {
		iso = "read_committed"
	}
	cons, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": addr, "group.id": "unused",
		"enable.auto.commit": false, "isolation.level": iso, "fetch.wait.max.ms": 100})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if err := cons.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}}); err != nil {
		t.Fatal(err)
	}
	var out []itest.CompatRecord
	deadline := time.Now().Add(30 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		msg, err := cons.ReadMessage(200 * time.Millisecond)
		if err != nil {
			if kerr, ok := err.(kafka.Error); ok && kerr.IsTimeout() {
				continue
			}
			t.Fatalf("read %s: %v", topic, err)
		}
		out = append(out, itest.CompatRecord{Partition: msg.TopicPartition.Partition, Offset: int64(msg.TopicPartition.Offset),
			Key: msg.Key, Value: string(msg.Value)})
	}
	if len(out) < n {
		t.Fatalf("read %d of %d messages of %s", len(out), n, topic)
	}
	return out
}
