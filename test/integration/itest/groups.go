package itest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// Fast848 are broker settings that make KIP-848 groups react quickly in
// tests (Kafka's defaults: 5 s heartbeats, 45 s sessions).
func Fast848() []minibrokertest.Option {
	return []minibrokertest.Option{
		minibrokertest.Set("group.consumer.heartbeat.interval.ms", "200"),
		minibrokertest.Set("group.consumer.session.timeout.ms", "6000"),
	}
}

// New848Consumer is a kgo group member using the consumer group protocol
// (KIP-848: kgo.ServerSideBalancer with a range or sticky balancer).
func New848Consumer(t *testing.T, addr, group string, topics []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topics...), kgo.ServerSideBalancer(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
	}
	return NewClient(t, addr, append(base, opts...)...)
}

// Counter reads one counter from /metrics (0 when absent).
func Counter(t *testing.T, httpAddr, series string) int64 {
	t.Helper()
	v := Metric(t, httpAddr, series)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s = %q", series, v)
	}
	return int64(n)
}

// GroupsProduce writes n records (values prefix-0..n-1) round-robin over the
// topic's partitions.
func GroupsProduce(t *testing.T, addr, topic, prefix string, n int) {
	t.Helper()
	cl := NewClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
}
