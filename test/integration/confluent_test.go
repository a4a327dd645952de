package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/minibroker/minibroker/minibrokertest"
)

// confluentProduce produces n values to topic/partition and waits for every
// delivery report; it returns the offsets reported.
func confluentProduce(t *testing.T, p *kafka.Producer, topic string, partition int32, prefix string, n int) []int64 {
	t.Helper()
	reports := make(chan kafka.Event, n)
	for i := 0; i < n; i++ {
		err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition},
			Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}, reports)
		if err != nil {
			t.Fatal(err)
		}
	}
	var offsets []int64
	for i := 0; i < n; i++ {
		select {
		case ev := <-reports:
			m := ev.(*kafka.Message)
			if m.TopicPartition.Error != nil {
				t.Fatalf("delivery: %v", m.TopicPartition.Error)
			}
			offsets = append(offsets, int64(m.TopicPartition.Offset))
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d deliveries", i, n)
		}
	}
	return offsets
}

func newConfluentProducer(t *testing.T, addr string, extra kafka.ConfigMap) *kafka.Producer {
	t.Helper()
	cfg := kafka.ConfigMap{"bootstrap.servers": addr, "linger.ms": 0}
	for k, v := range extra {
		cfg[k] = v
	}
	p, err := kafka.NewProducer(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestConfluentKafkaGo drives minibroker with confluent-kafka-go (librdkafka
// bundled with the module): produce at acks 0/1/all and with every codec,
// idempotent produce, a transaction committed and one aborted read with
// read_committed, a consumer group committing offsets, and admin calls.
func TestConfluentKafkaGo(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Topic("cf", 1), minibrokertest.Topic("cf-txn", 1))
	topic := "cf"
	var want []string
	for _, tc := range []struct {
		name string
		cfg  kafka.ConfigMap
	}{
		{"acks-all", kafka.ConfigMap{"acks": "all"}},
		{"acks-1", kafka.ConfigMap{"acks": "1"}},
		{"gzip", kafka.ConfigMap{"compression.codec": "gzip"}},
		{"snappy", kafka.ConfigMap{"compression.codec": "snappy"}},
		{"lz4", kafka.ConfigMap{"compression.codec": "lz4"}},
		{"zstd", kafka.ConfigMap{"compression.codec": "zstd"}},
		{"idempotent", kafka.ConfigMap{"enable.idempotence": true}},
	} {
		p := newConfluentProducer(t, c.Addr(), tc.cfg)
		offs := confluentProduce(t, p, topic, 0, tc.name, 3)
		if offs[2] != offs[0]+2 {
			t.Fatalf("%s: offsets %v", tc.name, offs)
		}
		want = append(want, values(tc.name, 3)...)
	}
	// acks=0 reports no offsets; its records still arrive.
	p0 := newConfluentProducer(t, c.Addr(), kafka.ConfigMap{"acks": "0"})
	confluentProduce(t, p0, topic, 0, "acks-0", 3)
	want = append(want, values("acks-0", 3)...)
	deadline := time.Now().Add(timeout)
	for logEnd(c, topic, 0) < int64(len(want)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assertValues(t, c, topic, 0, want)

	// Transactions: one committed, one aborted; read_committed sees the first.
	tp := newConfluentProducer(t, c.Addr(), kafka.ConfigMap{"transactional.id": "cf-tx"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tp.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{true, false} {
		if err := tp.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		confluentProduce(t, tp, "cf-txn", 0, fmt.Sprint("txn-", commit), 2)
		var err error
		if commit {
			err = tp.CommitTransaction(ctx)
		} else {
			err = tp.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	assertValues(t, c, "cf-txn", 0, values("txn-true", 2))

	// A consumer group reads everything and commits; a second member of
	// the same group resumes after the commit.
	consume := func(n int) []string {
		cons, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": c.Addr(), "group.id": "cf-group",
			"auto.offset.reset": "earliest", "enable.auto.commit": false, "isolation.level": "read_committed"})
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		if err := cons.Subscribe(topic, nil); err != nil {
			t.Fatal(err)
		}
		var got []string
		end := time.Now().Add(timeout)
		for len(got) < n && time.Now().Before(end) {
			m, err := cons.ReadMessage(500 * time.Millisecond)
			if err != nil {
				continue
			}
			got = append(got, string(m.Value))
		}
		if _, err := cons.Commit(); err != nil && n > 0 {
			t.Fatalf("commit: %v", err)
		}
		return got
	}
	if got := consume(len(want)); len(got) != len(want) {
		t.Fatalf("group consumer read %d of %d", len(got), len(want))
	}
	confluentProduce(t, newConfluentProducer(t, c.Addr(), nil), topic, 0, "after-commit", 2)
	if got := consume(2); fmt.Sprint(got) != fmt.Sprint(values("after-commit", 2)) {
		t.Fatalf("second member resumed with %v", got)
	}

	// Admin: create, describe configs, delete.
	adm, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": c.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: "cf-admin", NumPartitions: 2, ReplicationFactor: 1,
		Config: map[string]string{"retention.ms": "60000"}}})
	if err != nil || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("create: %v %v", err, res)
	}
	desc, err := adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: "cf-admin"}})
	if err != nil || desc[0].Config["retention.ms"].Value != "60000" {
		t.Fatalf("describe configs: %v %+v", err, desc)
	}
	del, err := adm.DeleteTopics(ctx, []string{"cf-admin"})
	if err != nil || del[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("delete: %v %v", err, del)
	}
}
