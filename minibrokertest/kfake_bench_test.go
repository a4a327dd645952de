package minibrokertest_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The peers of BenchmarkStartToFirstProduce and BenchmarkCycle: the same
// client work against franz-go's in-memory kfake, reported side by side in
// docs/PERFORMANCE.md.

func BenchmarkKfakeStartToFirstProduce(b *testing.B) {
	for b.Loop() {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
		if err != nil {
			b.Fatal(err)
		}
		cl, _ := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()[0]), kgo.DefaultProduceTopic("t"))
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cl.Close()
		c.Close()
		b.StartTimer()
	}
}

func BenchmarkKfakeCycle(b *testing.B) {
	for b.Loop() {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
		if err != nil {
			b.Fatal(err)
		}
		cl, _ := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()[0]), kgo.DefaultProduceTopic("t"),
			kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		for n := 0; n == 0; {
			n = len(cl.PollFetches(context.Background()).Records())
		}
		cl.Close()
		c.Close()
	}
}
