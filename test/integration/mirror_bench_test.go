package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// BenchmarkMirrorFailover1000Partitions: `mirror stop` of a topic with
// 1,000 mirrored partitions until all are STOPPED with their barriers
// (goal < 2 s).
func BenchmarkMirrorFailover1000Partitions(b *testing.B) {
	const parts = 1000
	a := minibrokertest.Start(b, minibrokertest.Topic("wide", parts))
	cl, _ := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.DefaultProduceTopic("wide"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < 2*parts; i++ {
		recs = append(recs, &kgo.Record{Value: []byte("v")})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	cl.Close()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		d := minibrokertest.Start(b)
		m := d.Mirror("m", a.Addr()).Start("wide")
		m.WaitCaughtUp(2 * time.Minute)
		b.StartTimer()
		start := time.Now()
		m.Stop()
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/failover")
		b.StopTimer()
		d.Close()
		b.StartTimer()
	}
}

// BenchmarkMirrorCatchUp mirrors a backlog (MINIBROKER_BENCH_BACKLOG_MB,
// default 64; `make bench` uses 1024) and, in the same run, reads the same
// backlog with a plain kgo consumer; it reports both rates and their ratio
// (goal ≥ 0.8).
func BenchmarkMirrorCatchUp(b *testing.B) {
	mb := envInt("MINIBROKER_BENCH_BACKLOG_MB", 64)
	a := minibrokertest.Start(b, minibrokertest.Topic("backlog", 4))
	cl, _ := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.DefaultProduceTopic("backlog"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	val := make([]byte, 1000)
	n := mb * 1000
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	cl.Close()
	bytes := float64(n * len(val))
	var mirrorRates, consumerRates []float64
	for b.Loop() {
		d := minibrokertest.Start(b)
		start := time.Now()
		d.Mirror("m", a.Addr()).Start("backlog").WaitCaughtUp(10 * time.Minute)
		mirrorRates = append(mirrorRates, bytes/time.Since(start).Seconds()/1e6)
		d.Close()

		cons, _ := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.ConsumeTopics("backlog"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		start = time.Now()
		for got := 0; got < n; {
			got += len(cons.PollFetches(context.Background()).Records())
		}
		consumerRates = append(consumerRates, bytes/time.Since(start).Seconds()/1e6)
		cons.Close()
	}
	mr, cr := median(mirrorRates), median(consumerRates)
	b.ReportMetric(mr, "mirror-MB/s")
	b.ReportMetric(cr, "kgo-consumer-MB/s")
	b.ReportMetric(mr/cr, "ratio")
}

// BenchmarkMirrorSteadyLag produces at about 10 MB/s for
// MINIBROKER_BENCH_LAG_SECONDS (default 5) and measures, for every record,
// the time from its acknowledgement at the source to its arrival at the
// mirror (goal p99 < 200 ms).
func BenchmarkMirrorSteadyLag(b *testing.B) {
	secs := envInt("MINIBROKER_BENCH_LAG_SECONDS", 5)
	for b.Loop() {
		a := minibrokertest.Start(b, minibrokertest.Topic("steady", 4))
		d := minibrokertest.Start(b)
		d.Mirror("m", a.Addr()).Start("steady")
		prod, _ := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.DefaultProduceTopic("steady"),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		var mu sync.Mutex
		acked := map[string]time.Time{}
		var lags []float64
		ctx, cancel := context.WithCancel(context.Background())
		cons, _ := kgo.NewClient(kgo.SeedBrokers(d.Addr()), kgo.ConsumeTopics("steady"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				fs := cons.PollFetches(ctx)
				now := time.Now()
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					if t, ok := acked[string(r.Key)]; ok {
						lags = append(lags, float64(now.Sub(t).Microseconds())/1000)
					}
				})
				mu.Unlock()
			}
		}()
		val := make([]byte, 10000) // 100 records of 10 KB every 100 ms ≈ 10 MB/s
		tick := time.NewTicker(100 * time.Millisecond)
		end := time.Now().Add(time.Duration(secs) * time.Second)
		for i := 0; time.Now().Before(end); {
			<-tick.C
			for j := 0; j < 100; j++ {
				key := fmt.Sprint(i)
				i++
				prod.Produce(ctx, &kgo.Record{Key: []byte(key), Value: val}, func(r *kgo.Record, err error) {
					if err == nil {
						mu.Lock()
						acked[key] = time.Now()
						mu.Unlock()
					}
				})
			}
		}
		tick.Stop()
		prod.Flush(context.Background())
		time.Sleep(500 * time.Millisecond)
		cancel()
		<-done
		prod.Close()
		cons.Close()
		mu.Lock()
		slices.Sort(lags)
		if len(lags) > 0 {
			b.ReportMetric(lags[len(lags)/2], "p50-ms")
			b.ReportMetric(lags[len(lags)*99/100], "p99-ms")
			b.ReportMetric(float64(len(lags)), "records")
			b.ReportMetric(float64(len(lags))*float64(len(val))/float64(secs)/1e6, "MB/s")
		}
		mu.Unlock()
		d.Close()
		a.Close()
	}
}

var _ = kadm.NewClient
