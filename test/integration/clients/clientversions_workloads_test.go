package clients

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The workloads of the client-versions tests: what an application does
// with each client, every call expected to succeed.

func kgoWorkload(t *testing.T, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(itest.NewClient(t, addr))
	created, err := adm.CreateTopics(ctx, 2, 1, nil, "cv", "cv-out", "cv-del")
	itest.Must(t, "create topics", err)
	itest.Must(t, "create topics", created.Error())
	_, err = adm.CreatePartitions(ctx, 1, "cv-del")
	itest.Must(t, "create partitions", err)
	_, err = adm.DescribeTopicConfigs(ctx, "cv")
	itest.Must(t, "describe configs", err)
	retention := "3600000"
	altered, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention}}, "cv")
	itest.Must(t, "incremental alter configs", err)
	itest.Must(t, "incremental alter configs", altered[0].Err)
	altered, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &retention}}, "cv")
	itest.Must(t, "alter configs", err)
	itest.Must(t, "alter configs", altered[0].Err)
	_, err = adm.DescribeAllLogDirs(ctx, nil)
	itest.Must(t, "describe log dirs", err)

	// Idempotent (kgo's default) and acks=1 produce.
	p := itest.NewClient(t, addr, kgo.DefaultProduceTopic("cv"))
	for i := range 10 {
		itest.Must(t, "produce", p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr())
	}
	p1 := itest.NewClient(t, addr, kgo.DefaultProduceTopic("cv"), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
	itest.Must(t, "produce acks=1", p1.ProduceSync(ctx, &kgo.Record{Value: []byte("acks1")}).FirstErr())

	// A transaction.
	tx := itest.NewClient(t, addr, kgo.DefaultProduceTopic("cv"), kgo.TransactionalID("cv-txn"))
	itest.Must(t, "begin", tx.BeginTransaction())
	itest.Must(t, "produce in txn", tx.ProduceSync(ctx, &kgo.Record{Value: []byte("txn")}).FirstErr())
	itest.Must(t, "commit", tx.EndTransaction(ctx, kgo.TryCommit))

	// Consume-transform-produce: offsets committed in a transaction.
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID("cv-gts"),
		kgo.ConsumerGroup("cv-gts"), kgo.ConsumeTopics("cv"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic("cv-out"))
	itest.Must(t, "group transact session", err)
	defer sess.Close()
	for seen := 0; seen < 12; {
		fs := sess.PollFetches(ctx)
		itest.Must(t, "poll in session", ctx.Err())
		itest.Must(t, "begin in session", sess.Begin())
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			sess.Produce(ctx, &kgo.Record{Value: r.Value}, nil)
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		itest.Must(t, "end session", err)
		if !committed {
			t.Fatal("session did not commit")
		}
	}

	// A consumer group that commits.
	g := itest.NewClient(t, addr, kgo.ConsumerGroup("cv-g"), kgo.ConsumeTopics("cv"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for n := 0; n < 12; {
		fs := g.PollFetches(ctx)
		itest.Must(t, "group poll", ctx.Err())
		n += fs.NumRecords()
	}
	itest.Must(t, "group commit", g.CommitUncommittedOffsets(ctx))
	g.Close() // LeaveGroup

	// Admin reads and deletes.
	_, err = adm.ListStartOffsets(ctx, "cv")
	itest.Must(t, "list start offsets", err)
	_, err = adm.ListEndOffsets(ctx, "cv")
	itest.Must(t, "list end offsets", err)
	_, err = adm.ListGroups(ctx)
	itest.Must(t, "list groups", err)
	_, err = adm.DescribeGroups(ctx, "cv-g", "cv-gts")
	itest.Must(t, "describe groups", err)
	_, err = adm.FetchOffsets(ctx, "cv-g")
	itest.Must(t, "fetch offsets", err)
	var del kadm.TopicsSet = map[string]map[int32]struct{}{"cv": {0: {}}}
	_, err = adm.DeleteOffsets(ctx, "cv-g", del)
	itest.Must(t, "delete offsets", err)
	var recs kadm.Offsets
	recs.Add(kadm.Offset{Topic: "cv-del", Partition: 0, At: 0})
	_, err = adm.DeleteRecords(ctx, recs)
	itest.Must(t, "delete records", err)
	_, err = adm.DescribeProducers(ctx, map[string]map[int32]struct{}{"cv": {0: {}, 1: {}}})
	itest.Must(t, "describe producers", err)
	_, err = adm.DescribeTransactions(ctx, "cv-txn")
	itest.Must(t, "describe transactions", err)
	_, err = adm.ListTransactions(ctx, nil, nil)
	itest.Must(t, "list transactions", err)
	ofle := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofle.ReplicaID = -1
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "cv"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.LeaderEpoch = 0
	ot.Partitions = append(ot.Partitions, op)
	ofle.Topics = append(ofle.Topics, ot)
	_, err = ofle.RequestWith(ctx, p)
	itest.Must(t, "offset for leader epoch", err)
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.EndpointType = 1
	_, err = dc.RequestWith(ctx, p)
	itest.Must(t, "describe cluster", err)
	_, err = adm.DeleteGroups(ctx, "cv-g")
	itest.Must(t, "delete groups", err)
	_, err = adm.DeleteTopics(ctx, "cv-del")
	itest.Must(t, "delete topics", err)
}

func saramaWorkload(t *testing.T, addr string) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.MaxVersion
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	admin, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	itest.Must(t, "cluster admin", err)
	defer admin.Close()
	for _, topic := range []string{"cv", "cv-del"} {
		itest.Must(t, "create topic", admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false))
	}
	itest.Must(t, "create partitions", admin.CreatePartitions("cv-del", 2, nil, false))
	_, err = itest.SaramaDescribeConfig(admin, sarama.ConfigResource{Type: sarama.TopicResource, Name: "cv"})
	itest.Must(t, "describe config", err)
	retention := "3600000"
	itest.Must(t, "incremental alter config", admin.IncrementalAlterConfig(sarama.TopicResource, "cv",
		map[string]sarama.IncrementalAlterConfigsEntry{"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &retention}}, false))
	itest.Must(t, "alter config", admin.AlterConfig(sarama.TopicResource, "cv", map[string]*string{"retention.ms": &retention}, false))
	_, err = admin.DescribeLogDirs([]int32{0})
	itest.Must(t, "describe log dirs", err)
	_, _, err = admin.DescribeCluster()
	itest.Must(t, "describe cluster", err)
	_, err = admin.DescribeTopics([]string{"cv"})
	itest.Must(t, "describe topics", err)

	// Idempotent produce.
	pcfg := sarama.NewConfig()
	pcfg.Version = sarama.MaxVersion
	pcfg.Producer.Idempotent = true
	pcfg.Producer.RequiredAcks = sarama.WaitForAll
	pcfg.Producer.Return.Successes = true
	pcfg.Net.MaxOpenRequests = 1
	pcfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	p, err := sarama.NewSyncProducer([]string{addr}, pcfg)
	itest.Must(t, "producer", err)
	for i := range 5 {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "cv", Value: sarama.StringEncoder(fmt.Sprint("v", i))})
		itest.Must(t, "send", err)
	}
	itest.Must(t, "close producer", p.Close())

	// A transaction with offsets.
	tcfg := *pcfg
	tcfg.Producer.Transaction.ID = "cv-sarama-txn"
	tcfg.Producer.Transaction.Retry.Backoff = 20 * time.Millisecond
	tp, err := sarama.NewSyncProducer([]string{addr}, &tcfg)
	itest.Must(t, "transactional producer", err)
	itest.Must(t, "begin", tp.BeginTxn())
	_, _, err = tp.SendMessage(&sarama.ProducerMessage{Topic: "cv", Value: sarama.StringEncoder("txn")})
	itest.Must(t, "send in txn", err)
	itest.Must(t, "offsets in txn", tp.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{"cv": {{Partition: 0, Offset: 1}}}, "cv-sarama-txn-group"))
	itest.Must(t, "commit", tp.CommitTxn())
	itest.Must(t, "close transactional producer", tp.Close())

	// A consumer group that commits, at sarama's newest version.
	if got := itest.SaramaGroupConsume(t, addr, "cv-g", "cv", sarama.MaxVersion, 6); len(got) < 6 {
		t.Fatalf("sarama group read %d records", len(got))
	}

	client, err := sarama.NewClient([]string{addr}, cfg)
	itest.Must(t, "client", err)
	defer client.Close()
	_, err = client.GetOffset("cv", 0, sarama.OffsetNewest)
	itest.Must(t, "get offset", err)
	_, err = admin.ListConsumerGroups()
	itest.Must(t, "list groups", err)
	_, err = admin.DescribeConsumerGroups([]string{"cv-g"})
	itest.Must(t, "describe groups", err)
	_, err = admin.ListConsumerGroupOffsets("cv-g", map[string][]int32{"cv": {0}})
	itest.Must(t, "list group offsets", err)
	itest.Must(t, "delete group offset", admin.DeleteConsumerGroupOffset("cv-g", "cv", 0))
	itest.Must(t, "delete records", admin.DeleteRecords("cv-del", map[int32]int64{0: 0}))
	itest.Must(t, "delete group", admin.DeleteConsumerGroup("cv-g"))
	itest.Must(t, "delete topic", admin.DeleteTopic("cv-del"))
}

func confluentWorkload(t *testing.T, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": addr})
	itest.Must(t, "admin client", err)
	defer adm.Close()
	res, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: "cv", NumPartitions: 1, ReplicationFactor: 1},
		{Topic: "cv-del", NumPartitions: 1, ReplicationFactor: 1}})
	itest.Must(t, "create topics", err)
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError {
			t.Fatalf("create %s: %v", r.Topic, r.Error)
		}
	}
	_, err = adm.CreatePartitions(ctx, []kafka.PartitionsSpecification{{Topic: "cv-del", IncreaseTo: 2}})
	itest.Must(t, "create partitions", err)
	_, err = adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: "cv"}})
	itest.Must(t, "describe configs", err)
	for _, alter := range []func(context.Context, []kafka.ConfigResource, ...kafka.AlterConfigsAdminOption) ([]kafka.ConfigResourceResult, error){
		adm.IncrementalAlterConfigs, adm.AlterConfigs} {
		res, err := alter(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: "cv",
			Config: []kafka.ConfigEntry{{Name: "retention.ms", Value: "3600000", IncrementalOperation: kafka.AlterConfigOpTypeSet}}}})
		itest.Must(t, "alter configs", err)
		if len(res) != 1 || res[0].Error.Code() != kafka.ErrNoError {
			t.Fatalf("alter configs: %+v", res)
		}
	}
	_, err = adm.DescribeCluster(ctx)
	itest.Must(t, "describe cluster", err)
	_, err = adm.DescribeTopics(ctx, kafka.NewTopicCollectionOfTopicNames([]string{"cv"}))
	itest.Must(t, "describe topics", err)

	deliver(t, newConfluentProducer(t, addr, kafka.ConfigMap{"enable.idempotence": true}), "cv", 5)
	deliver(t, newConfluentProducer(t, addr, kafka.ConfigMap{"acks": "1"}), "cv", 1)

	// A transaction with offsets.
	tp := newConfluentProducer(t, addr, kafka.ConfigMap{"transactional.id": "cv-cf-txn"})
	itest.Must(t, "init transactions", tp.InitTransactions(ctx))
	itest.Must(t, "begin", tp.BeginTransaction())
	deliver(t, tp, "cv", 1)
	cgm, err := kafka.NewTestConsumerGroupMetadata("cv-cf-txn-group")
	itest.Must(t, "group metadata", err)
	topic := "cv"
	itest.Must(t, "offsets in txn", tp.SendOffsetsToTransaction(ctx, []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 1}}, cgm))
	itest.Must(t, "commit", tp.CommitTransaction(ctx))

	// A consumer group that commits.
	cons, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": addr, "group.id": "cv-g",
		"auto.offset.reset": "earliest", "enable.auto.commit": false, "isolation.level": "read_committed"})
	itest.Must(t, "consumer", err)
	itest.Must(t, "subscribe", cons.Subscribe("cv", nil))
	for n := 0; n < 7; {
		if _, err := cons.ReadMessage(500 * time.Millisecond); err == nil {
			n++
		}
		itest.Must(t, "consume", ctx.Err())
	}
	_, err = cons.Commit()
	itest.Must(t, "commit offsets", err)
	itest.Must(t, "close consumer", cons.Close())

	_, err = adm.ListOffsets(ctx, map[kafka.TopicPartition]kafka.OffsetSpec{{Topic: &topic, Partition: 0}: kafka.LatestOffsetSpec}, nil)
	itest.Must(t, "list offsets", err)
	_, err = adm.ListConsumerGroups(ctx)
	itest.Must(t, "list groups", err)
	_, err = adm.DescribeConsumerGroups(ctx, []string{"cv-g"})
	itest.Must(t, "describe groups", err)
	_, err = adm.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: "cv-g"}})
	itest.Must(t, "list group offsets", err)
	delTopic := "cv-del"
	_, err = adm.DeleteRecords(ctx, []kafka.TopicPartition{{Topic: &delTopic, Partition: 0, Offset: 0}})
	itest.Must(t, "delete records", err)
	_, err = adm.DeleteConsumerGroups(ctx, []string{"cv-g"})
	itest.Must(t, "delete groups", err)
	_, err = adm.DeleteTopics(ctx, []string{"cv-del"})
	itest.Must(t, "delete topics", err)
}

// deliver produces n records to topic's partition 0 and waits for their
// delivery reports.
func deliver(t *testing.T, p *kafka.Producer, topic string, n int) {
	t.Helper()
	reports := make(chan kafka.Event, n)
	for i := range n {
		itest.Must(t, "produce", p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
			Value: fmt.Appendf(nil, "v%d", i)}, reports))
	}
	for range n {
		select {
		case ev := <-reports:
			itest.Must(t, "delivery", ev.(*kafka.Message).TopicPartition.Error)
		case <-time.After(30 * time.Second):
			t.Fatal("no delivery report")
		}
	}
}

func kcatWorkload(t *testing.T, addr string) {
	itest.RunKcat(t, "", "-L", "-b", addr)
	itest.RunKcat(t, "k1:a\nk2:b\nk3:c\n", "-P", "-b", addr, "-t", "cv", "-K:", "-X", "enable.idempotence=true")
	itest.RunKcat(t, "", "-C", "-b", addr, "-t", "cv", "-o", "beginning", "-e")
	// A balanced consumer: the group protocol, offsets committed.
	itest.RunKcat(t, "", "-b", addr, "-G", "cv-g", "-o", "beginning", "-c", "3", "-X", "enable.auto.commit=true",
		"-X", "auto.commit.interval.ms=100", "cv")
	itest.RunKcat(t, "", "-Q", "-b", addr, "-t", "cv:0:-1")
}
