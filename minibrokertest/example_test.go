package minibrokertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// A cluster for one test: produce, crash, restart, and every acknowledged
// record is still there.
func Example() {
	c, err := minibrokertest.New(minibrokertest.Topic("orders", 1))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	prod, _ := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.DefaultProduceTopic("orders"))
	for i := 0; i < 3; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "order-%d", i)}).FirstErr(); err != nil {
			panic(err)
		}
	}
	prod.Close()

	c.Kill()   // as kill -9
	c.Revive() // same data, same port

	cons, _ := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cons.Close()
	for n := 0; n < 3; {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			fmt.Println(r.Offset, string(r.Value))
			n++
		})
	}
	// Output:
	// 0 order-0
	// 1 order-1
	// 2 order-2
}

// Two clusters and a mirror between them, driven from code: the failover
// procedure of a user's own service can be tested this way.
func ExampleCluster_Mirror() {
	a, _ := minibrokertest.New(minibrokertest.Topic("orders", 1))
	defer a.Close()
	b, _ := minibrokertest.New()
	defer b.Close()

	prod, _ := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.DefaultProduceTopic("orders"))
	prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte("from A")})
	prod.Close()

	m := b.Mirror("from-a", a.Addr()).Start("orders")
	m.WaitCaughtUp(10 * time.Second)
	m.Stop("orders") // failover: orders on B is now writable

	for _, p := range m.Status().Partitions {
		fmt.Println(p.Topic, p.Partition, p.State, "barrier at", p.BarrierOffset)
	}
	// Output:
	// orders 0 STOPPED barrier at 1
}

// BenchmarkStartToFirstProduce measures a new cluster's start-up up to the
// first acknowledged produce (goal: < 50 ms). Closing is off the clock;
// BenchmarkCycle counts it.
func BenchmarkStartToFirstProduce(b *testing.B) {
	for b.Loop() {
		c := minibrokertest.Start(b, minibrokertest.Topic("t", 1))
		cl, _ := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.DefaultProduceTopic("t"))
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cl.Close()
		c.Close()
		b.StartTimer()
	}
}

// BenchmarkCycle is a full start, produce, consume, close.
func BenchmarkCycle(b *testing.B) {
	for b.Loop() {
		c := minibrokertest.Start(b, minibrokertest.Topic("t", 1))
		cl, _ := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.DefaultProduceTopic("t"),
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
