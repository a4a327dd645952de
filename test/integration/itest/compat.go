package itest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

// ConfluentMember is a subscribed consumer committing each message
// synchronously.
type ConfluentMember struct {
	RecordLog
	Cons *kafka.Consumer
	Stop chan struct{}
	Done chan struct{}
	once sync.Once
}

func StartConfluentMember(t *testing.T, addr, group, topic string) CompatMember {
	return StartConfluentMemberWith(t, addr, group, topic, kafka.ConfigMap{"session.timeout.ms": 6000, "heartbeat.interval.ms": 200})
}

func StartConfluentMemberWith(t *testing.T, addr, group, topic string, extra kafka.ConfigMap) CompatMember {
	cfg := kafka.ConfigMap{"bootstrap.servers": addr, "group.id": group,
		"auto.offset.reset": "earliest", "enable.auto.commit": false, "fetch.wait.max.ms": 100}
	for k, v := range extra {
		cfg[k] = v
	}
	cons, err := kafka.NewConsumer(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	m := &ConfluentMember{Cons: cons, Stop: make(chan struct{}), Done: make(chan struct{})}
	go func() {
		defer close(m.Done)
		for {
			select {
			case <-m.Stop:
				return
			default:
			}
			msg, err := cons.ReadMessage(100 * time.Millisecond)
			if err != nil {
				continue
			}
			m.Add(CompatRecord{Partition: msg.TopicPartition.Partition, Offset: int64(msg.TopicPartition.Offset),
				Key: msg.Key, Value: string(msg.Value)})
			cons.CommitMessage(msg)
		}
	}()
	t.Cleanup(func() { m.Close(t) })
	return m
}

func (m *ConfluentMember) Close(t *testing.T) {
	m.once.Do(func() {
		close(m.Stop)
		<-m.Done
		if err := m.Cons.Close(); err != nil {
			t.Errorf("consumer close: %v", err)
		}
	})
}

// CompatMember is one consumer-group member run by a client: it consumes
// in the background, committing what it handed to the application.
type CompatMember interface {
	Records() []CompatRecord
	Close(t *testing.T) // leaves the group
}

// RecordLog is a concurrency-safe list of consumed records for members.
type RecordLog struct {
	mu   sync.Mutex
	recs []CompatRecord
}

func (l *RecordLog) Add(r CompatRecord) {
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.mu.Unlock()
}

func (l *RecordLog) Records() []CompatRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recs)
}

// CompatRecord is a record as a client handed it to the application.
type CompatRecord struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     string
}

func RecordValues(rs []CompatRecord) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Value
	}
	return out
}

func CompatCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// CreateCompatTopic creates a topic with kadm.
func CreateCompatTopic(t *testing.T, c *minibrokertest.Cluster, topic string, parts int32) {
	t.Helper()
	resp, err := KadmClient(t, c.Addr()).CreateTopics(CompatCtx(t), parts, 1, nil, topic)
	if err == nil {
		err = resp[topic].Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// WaitLogEnd waits until a partition's high watermark reaches n (acks=0
// producers learn nothing of it).
func WaitLogEnd(t *testing.T, c Node, topic string, p int32, n int64) {
	t.Helper()
	WaitFor(t, fmt.Sprintf("%s-%d to reach offset %d", topic, p, n), func() bool {
		part, ok := c.Broker().Partition(topic, p)
		return ok && part.Offsets().HighWatermark >= n
	})
}

// KgoReadPartition reads n records of a partition from offset 0 with kgo.
func KgoReadPartition(t *testing.T, addr, topic string, p int32, n int, committed bool) []*kgo.Record {
	t.Helper()
	opts := []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxWait(100 * time.Millisecond)}
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl := NewClient(t, addr, opts...)
	defer cl.Close()
	ctx := CompatCtx(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("kgo read %d of %d records of %s-%d", len(out), n, topic, p)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("kgo fetch %s-%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// KadmTopicConfig is one config value of a topic, as kadm describes it.
func KadmTopicConfig(t *testing.T, c *minibrokertest.Cluster, topic, key string) string {
	t.Helper()
	rcs, err := KadmClient(t, c.Addr()).DescribeTopicConfigs(CompatCtx(t), topic)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rcs)
	}
	for _, cfg := range rcs[0].Configs {
		if cfg.Key == key {
			return cfg.MaybeValue()
		}
	}
	return ""
}

func StartKafkagoMember(t *testing.T, addr, group, topic string) CompatMember {
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: []string{addr}, GroupID: group, Topic: topic, StartOffset: kafkago.FirstOffset,
		MaxWait: 100 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond,
		SessionTimeout: 6 * time.Second, RebalanceTimeout: 5 * time.Second,
		ReadBackoffMin: 50 * time.Millisecond, ReadBackoffMax: 100 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	m := &kafkagoMember{r: r, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			msg, err := r.ReadMessage(ctx)
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
					t.Logf("kafka-go member: %v", err)
				}
				return
			}
			m.Add(CompatRecord{Partition: int32(msg.Partition), Offset: msg.Offset, Key: msg.Key, Value: string(msg.Value)})
		}
	}()
	t.Cleanup(func() { m.Close(t) })
	return m
}

// KgoCompatRead reads n records of partition 0 with kgo.
func KgoCompatRead(t *testing.T, addr, topic string, committed bool, n int) []CompatRecord {
	var out []CompatRecord
	for _, r := range KgoReadPartition(t, addr, topic, 0, n, committed) {
		out = append(out, CompatRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: string(r.Value)})
	}
	return out
}

func StartKgoMember(t *testing.T, addr, group, topic string, extra ...kgo.Opt) CompatMember {
	m := &KgoMember{Done: make(chan struct{})}
	m.Cl = NewClient(t, addr, append([]kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			cl.CommitUncommittedOffsets(ctx)
		})}, extra...)...)
	ctx, cancel := context.WithCancel(context.Background())
	m.Stop = cancel
	go func() {
		defer close(m.Done)
		for ctx.Err() == nil {
			fs := m.Cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				m.Add(CompatRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: string(r.Value)})
			})
			m.Cl.CommitUncommittedOffsets(ctx)
		}
	}()
	t.Cleanup(func() { m.Stop(); <-m.Done })
	return m
}

func SaramaCompatConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "minibroker-compat"
	cfg.Net.DialTimeout = 5 * time.Second
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Admin.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

func StartSaramaMember(t *testing.T, addrs []string, group, topic string) CompatMember {
	cfg := SaramaCompatConfig()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 5 * time.Second
	cg, err := sarama.NewConsumerGroup(addrs, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaMember{cg: cg, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, m); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { m.Close(t) })
	return m
}

// kafkagoMember is a kafka-go group Reader; ReadMessage commits each
// message before returning it (CommitInterval 0).
type kafkagoMember struct {
	RecordLog
	r    *kafkago.Reader
	stop context.CancelFunc
	done chan struct{}
	once sync.Once
}

func (m *kafkagoMember) Close(t *testing.T) {
	m.once.Do(func() {
		m.stop()
		<-m.done
		if err := m.r.Close(); err != nil {
			t.Errorf("kafka-go reader close: %v", err)
		}
	})
}

// KgoMember is a kgo group member committing after every poll.
type KgoMember struct {
	RecordLog
	Cl   *kgo.Client
	Done chan struct{}
	Stop context.CancelFunc
}

func (m *KgoMember) Close(t *testing.T) {
	m.Stop()
	<-m.Done
	m.Cl.Close() // leaves the group
}

// saramaMember is a sarama ConsumerGroup member that commits every message
// it hands out.
type saramaMember struct {
	RecordLog
	cg   sarama.ConsumerGroup
	stop context.CancelFunc
	done chan struct{}
	once sync.Once
}

func (m *saramaMember) Setup(sarama.ConsumerGroupSession) error { return nil }

func (m *saramaMember) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		m.Add(CompatRecord{Partition: msg.Partition, Offset: msg.Offset, Key: msg.Key, Value: string(msg.Value)})
		s.MarkMessage(msg, "")
		s.Commit()
	}
	return nil
}

func (m *saramaMember) Close(t *testing.T) {
	m.once.Do(func() {
		m.stop()
		<-m.done
		if err := m.cg.Close(); err != nil {
			t.Errorf("sarama consumer group close: %v", err)
		}
	})
}

// Kafka39 is the setting that serves Kafka 3.9's version ranges.
var Kafka39 = minibrokertest.Set("client.protocol.version", "3.9")

// KeyedBatch encodes one uncompressed batch of records with the given
// keys (nil: no key), CRC good.
func KeyedBatch(keys ...[]byte) []byte {
	var body []byte
	for i, k := range keys {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: k, Value: []byte("v")}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		body = rec.AppendTo(body)
	}
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(len(keys) - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(keys)), Records: body}
	rb.Length = int32(49 + len(body))
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], Crc32c(raw[21:]))
	return raw
}

// TestSaramaSyncProducer: sarama's SyncProducer with acks=all, acks=1,
// acks=0 and as an idempotent producer, at sarama's default protocol
// version (2.8) and its newest (MaxVersion, 4.x), consumed back with
// sarama's PartitionConsumer.
// saramaDescribeConfig describes one resource's configs through
// DescribeConfigs, as sarama's deprecated DescribeConfig did: an error
// code of the resource becomes a *sarama.DescribeConfigError.
func SaramaDescribeConfig(adm sarama.ClusterAdmin, res sarama.ConfigResource) ([]sarama.ConfigEntry, error) {
	results, err := adm.DescribeConfigs([]*sarama.ConfigResource{&res}, sarama.DescribeConfigsOptions{})
	if err != nil {
		return nil, err
	}
	var entries []sarama.ConfigEntry
	for _, r := range results {
		if r.Name != res.Name {
			continue
		}
		if r.ErrorCode != sarama.ErrNoError {
			return nil, &sarama.DescribeConfigError{Err: r.ErrorCode, ErrMsg: r.ErrorMsg}
		}
		entries = append(entries, r.Configs...)
	}
	return entries, nil
}
