package hostile

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// The client quota benchmarks (make bench, section quotas; not part of
// make test): on one broker with Kafka's default windows (11 × 1 s), and
// again with 2 windows (quotaWindows), a
// client whose client id has a 1 MB/s quota runs beside one without a
// quota. Each round measures both for MINIBROKER_BENCH_QUOTA_SECONDS (20)
// from the quota'd client's start (quotaRounds); the unquota'd client's
// rate is compared with its rate alone, measured just before and after
// in the same round. Reported: medians over MINIBROKER_BENCH_QUOTA_ROUNDS (3).
// Goals: the quota'd client holds 0.9–1.1 MB/s; the other keeps at least
// 0.9 of its rate alone.

const benchQuota = 1_000_000 // bytes/s: "1 MB/s"

type quotaRound struct{ quotad, alone, beside float64 } // MB/s

// byteMeter counts bytes with their time, to measure a window later.
type byteMeter struct {
	mu  sync.Mutex
	ts  []time.Time
	sum []int64
	n   int64
}

func (m *byteMeter) Add(n int) {
	m.mu.Lock()
	m.n += int64(n)
	m.ts, m.sum = append(m.ts, time.Now()), append(m.sum, m.n)
	m.mu.Unlock()
}

// rate is the MB/s counted between from and to.
func (m *byteMeter) rate(from, to time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	at := func(t time.Time) int64 {
		var v int64
		for i, ts := range m.ts {
			if ts.After(t) {
				break
			}
			v = m.sum[i]
		}
		return v
	}
	return float64(at(to)-at(from)) / 1e6 / to.Sub(from).Seconds()
}

func benchQuotaSetup(b *testing.B, key, windows string) (*minibrokertest.Cluster, time.Duration, int) {
	// The unquota'd producer writes at the broker's full rate for about
	// 36 s a round, 3 rounds, twice: more than a disk holds at a GB/s.
	// Retention keeps the topic to its last GiB (checked every second);
	// the consume benchmark's 128 MB stay whole.
	c := minibrokertest.Start(b, minibrokertest.Set("quota.window.num", windows),
		minibrokertest.Set("log.retention.check.interval.ms", "1000"))
	adm := kadm.NewClient(benchClient(b, c.Addr()))
	res, err := adm.AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kadm.StringPtr("quotad")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: benchQuota}}}})
	if err != nil || res[0].Err != nil {
		b.Fatalf("alter quota: %v %+v", err, res)
	}
	if _, err := adm.CreateTopic(context.Background(), 1, 1, map[string]*string{
		"retention.bytes": kadm.StringPtr("1073741824"), "segment.bytes": kadm.StringPtr("134217728")}, "bench"); err != nil {
		b.Fatal(err)
	}
	return c, time.Duration(itest.EnvInt("MINIBROKER_BENCH_QUOTA_SECONDS", 20)) * time.Second,
		itest.EnvInt("MINIBROKER_BENCH_QUOTA_ROUNDS", 3)
}

func reportQuotaRounds(b *testing.B, rounds []quotaRound) {
	var q, alone, beside, ratio []float64
	for _, r := range rounds {
		q, alone, beside, ratio = append(q, r.quotad), append(alone, r.alone), append(beside, r.beside), append(ratio, r.beside/r.alone)
		b.Logf("round: quota'd %.3f MB/s; unquota'd alone %.1f MB/s, beside it %.1f MB/s (%.2f)", r.quotad, r.alone, r.beside, r.beside/r.alone)
	}
	b.ReportMetric(itest.Median(q), "quotad-MB/s")
	b.ReportMetric(itest.Median(alone), "alone-MB/s")
	b.ReportMetric(itest.Median(beside), "beside-MB/s")
	b.ReportMetric(itest.Median(ratio), "beside/alone")
	b.ReportMetric(float64(len(rounds)), "rounds")
}

// runProducer produces 10 KB records as clientID until ctx ends, counting
// acknowledged value bytes.
func runProducer(ctx context.Context, b *testing.B, addr, clientID string, m *byteMeter) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.DefaultProduceTopic("bench"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(256))
	if err != nil {
		b.Error(err)
		return
	}
	defer cl.Close()
	value := make([]byte, 10_000)
	for ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
			if err == nil {
				m.Add(len(r.Value))
			}
		})
	}
}

// quotaRounds runs the rounds: the unquota'd client alone, then both
// for the measured time (the quota'd one from its start: Kafka lets a
// new client have (samples - 1) windows' worth at once, and later bursts
// as old samples leave the window, so the average over a window that is
// not a whole number of quota windows from the start depends on where it
// falls), then the unquota'd one alone again. The alone phases (8 s
// each) also let the quota'd client's samples expire before the next
// round.
func quotaRounds(b *testing.B, measure time.Duration, n int, run func(ctx context.Context, clientID string, m *byteMeter)) []quotaRound {
	var rounds []quotaRound
	alone := func() float64 {
		var m byteMeter
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); run(ctx, "free", &m) }()
		time.Sleep(time.Second) // connection, metadata, producer id
		from := time.Now()
		<-ctx.Done()
		<-done
		return m.rate(from, time.Now())
	}
	for range n {
		before := alone()
		var qm, fm byteMeter
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(2)
		start := time.Now()
		go func() { defer wg.Done(); run(ctx, "quotad", &qm) }()
		go func() { defer wg.Done(); run(ctx, "free", &fm) }()
		time.Sleep(measure)
		end := time.Now()
		cancel()
		wg.Wait()
		after := alone()
		rounds = append(rounds, quotaRound{quotad: qm.rate(start, end), alone: (before + after) / 2, beside: fm.rate(start.Add(time.Second), end)})
	}
	return rounds
}

// quotaWindows are the quota.window.num each benchmark runs with: Kafka's
// default, and 2 (1 to 2 s windows), whose up-front allowance is one
// window's worth instead of ten.
var quotaWindows = []string{"11", "2"}

func BenchmarkClientQuotaProduce(b *testing.B) {
	for _, w := range quotaWindows {
		b.Run("windows="+w, func(b *testing.B) {
			for range b.N {
				c, measure, n := benchQuotaSetup(b, "producer_byte_rate", w)
				reportQuotaRounds(b, quotaRounds(b, measure, n, func(ctx context.Context, clientID string, m *byteMeter) {
					runProducer(ctx, b, c.Addr(), clientID, m)
				}))
			}
		})
	}
}

// runConsumer reads the topic from the start as clientID, again and
// again, until ctx ends, counting value bytes.
func runConsumer(ctx context.Context, b *testing.B, addr, clientID string, end int64, m *byteMeter) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.ConsumeTopics("bench"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Error(err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		last := int64(-1)
		fs.EachRecord(func(r *kgo.Record) {
			m.Add(len(r.Value))
			last = r.Offset
		})
		if last >= end-1 { // read again from the start
			cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{"bench": {0: {Epoch: -1, Offset: 0}}})
		}
	}
}

func BenchmarkClientQuotaConsume(b *testing.B) {
	for _, w := range quotaWindows {
		b.Run("windows="+w, func(b *testing.B) {
			for range b.N {
				c, measure, n := benchQuotaSetup(b, "consumer_byte_rate", w)
				// 128 MB to read: more than the quota'd consumer reads in
				// a round; the free one reads it from the start again.
				pcl := benchClient(b, c.Addr(), kgo.DefaultProduceTopic("bench"), kgo.ProducerBatchCompression(kgo.NoCompression()))
				value := make([]byte, 10_000)
				records := itest.EnvInt("MINIBROKER_BENCH_QUOTA_CONSUME_MB", 128) * 100
				for range records {
					pcl.Produce(context.Background(), &kgo.Record{Value: value}, nil)
				}
				if err := pcl.Flush(context.Background()); err != nil {
					b.Fatal(err)
				}
				reportQuotaRounds(b, quotaRounds(b, measure, n, func(ctx context.Context, clientID string, m *byteMeter) {
					runConsumer(ctx, b, c.Addr(), clientID, int64(records), m)
				}))
			}
		})
	}
}

// benchClient is a kgo client closed when the benchmark ends.
func benchClient(b *testing.B, addr string, opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	return cl
}
