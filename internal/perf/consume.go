package perf

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordSlices is kgo's record pool (kgo.WithPools): each fetched batch
// is decoded into a []kgo.Record taken from it, which goes back once
// every record of the batch is recycled. Without it a 1 MiB batch of
// 100-byte records costs a new slice of about 10,000 records, zeroed and
// page-faulted, and the load tool's garbage collection weighs on the
// broker it measures.
type recordSlices struct{ p sync.Pool } // *[]kgo.Record

func (r *recordSlices) GetRecords(n int) []kgo.Record {
	if s, _ := r.p.Get().(*[]kgo.Record); s != nil && cap(*s) >= n {
		return (*s)[:0]
	}
	return make([]kgo.Record, 0, n)
}

func (r *recordSlices) PutRecords(s []kgo.Record) { r.p.Put(&s) }

// Consume reads the topic from the start with cfg.Concurrency clients,
// each assigned a share of the partitions (no consumer group, so the run
// measures fetching, not rebalancing), until cfg.Records records were read
// or cfg.Duration passed. Latency is end to end: from each record's
// timestamp to its arrival.
func Consume(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	parts, err := EnsureTopic(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.RawBatches {
		return consumeRaw(ctx, cfg, parts)
	}
	n := min(cfg.Concurrency, int(parts))
	assign := make([]map[int32]kgo.Offset, n)
	for p := range parts {
		if assign[int(p)%n] == nil {
			assign[int(p)%n] = map[int32]kgo.Offset{}
		}
		assign[int(p)%n][p] = kgo.NewOffset().AtStart()
	}
	fetchSize := cfg.FetchSize
	if fetchSize == 0 {
		fetchSize = DefaultFetchSize
	}
	// fetch.max.bytes stays at the client's default (50 MiB, as Kafka's).
	pool := &recordSlices{}
	clients := make([]*kgo.Client, n)
	for i := range clients {
		clients[i], err = kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: assign[i]}),
			kgo.FetchMaxPartitionBytes(fetchSize), kgo.WithPools(pool))
		if err != nil {
			for _, c := range clients[:i] {
				c.Close()
			}
			return nil, err
		}
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()

	var (
		h        histogram
		read     atomic.Int64
		bytes    atomic.Int64
		errs     atomic.Int64
		firstErr atomic.Pointer[string]
	)
	runCtx, cancel := runContext(ctx, cfg)
	defer cancel()
	start := time.Now()
	stopProgress := startProgress(cfg, "read", &read, &bytes, &h)

	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				fs := cl.PollFetches(runCtx)
				now := time.Now()
				fs.EachError(func(_ string, _ int32, err error) {
					if runCtx.Err() != nil {
						return
					}
					if errs.Add(1) == 1 {
						s := err.Error()
						firstErr.Store(&s)
					}
				})
				// The records of a batch mostly share a timestamp
				// (milliseconds): each run of equal ones is one
				// histogram update.
				var nr, nb int64
				var runTs time.Time
				var runN uint64
				fs.EachRecord(func(r *kgo.Record) {
					if runN > 0 && !r.Timestamp.Equal(runTs) {
						h.RecordN(now.Sub(runTs), runN)
						runN = 0
					}
					runTs = r.Timestamp
					runN++
					nr++
					nb += int64(len(r.Value))
					r.Recycle()
				})
				if runN > 0 {
					h.RecordN(now.Sub(runTs), runN)
				}
				bytes.Add(nb)
				if total := read.Add(nr); cfg.Records > 0 && total >= cfg.Records {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()

	res := &Result{Mode: "consume", Topic: cfg.Topic, Partitions: parts, RecordSize: cfg.RecordSize,
		Concurrency: n, Records: read.Load(), Bytes: bytes.Load(), Errors: errs.Load()}
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	res.finish(elapsed, &h)
	return res, ctx.Err()
}
