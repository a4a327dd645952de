package broker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/config"
)

// BenchmarkShareConsume reads one partition of 20,000 records of 100 B
// whole with a fresh share group of one or three kgo share consumers
// accepting every record (test/bench's share groups section, in process
// so that -cpuprofile, -blockprofile and -mutexprofile see the broker's
// fetch and acknowledgement path). Reported: records/s.
func BenchmarkShareConsume(b *testing.B) {
	const records = 20_000
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = b.TempDir(), "127.0.0.1:0", ""
	br, err := New(Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	br.Serve()
	b.Cleanup(func() { br.Close(context.Background()) })
	prod, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.DefaultProduceTopic("sb"), kgo.AllowAutoTopicCreation())
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	ctx := context.Background()
	value := make([]byte, 100)
	for sent := 0; sent < records; sent += 1000 {
		recs := make([]*kgo.Record, 1000)
		for i := range recs {
			recs[i] = &kgo.Record{Value: value}
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	groups := 0
	for _, consumers := range []int{1, 3} {
		b.Run(fmt.Sprintf("consumers=%d", consumers), func(b *testing.B) {
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				groups++
				group := fmt.Sprintf("sb-%d", groups) // a fresh group: b.Run runs this more than once
				setShareResetEarliest(b, ctx, prod, group)
				t0 := time.Now()
				shareConsumeAll(b, br.Addr(), group, "sb", consumers, records)
				elapsed += time.Since(t0)
			}
			b.ReportMetric(float64(records*b.N)/elapsed.Seconds(), "records/s")
		})
	}
}

// shareConsumeAll runs consumers share consumers of group until n records
// were delivered.
func shareConsumeAll(b *testing.B, addr, group, topic string, consumers, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		count atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		done  = make(chan struct{})
	)
	for range consumers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for ctx.Err() == nil {
				if count.Add(int64(cl.PollFetches(ctx).NumRecords())) >= int64(n) {
					once.Do(func() { close(done) })
				}
			}
		}()
	}
	select {
	case <-done:
	case <-ctx.Done():
		b.Errorf("read %d of %d records", count.Load(), n)
	}
	cancel()
	wg.Wait()
}
