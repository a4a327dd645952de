package perf

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

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
	clients := make([]*kgo.Client, n)
	for i := range clients {
		clients[i], err = kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: assign[i]}),
			kgo.FetchMaxPartitionBytes(fetchSize))
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
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.Duration > 0 {
		runCtx, cancel = context.WithTimeout(runCtx, cfg.Duration)
		defer cancel()
	}
	start := time.Now()
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go progress(cfg, "read", &read, &bytes, &h, stop, &pwg)

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
				var nr, nb int64
				fs.EachRecord(func(r *kgo.Record) {
					h.Record(now.Sub(r.Timestamp))
					nr++
					nb += int64(len(r.Value))
				})
				bytes.Add(nb)
				if total := read.Add(nr); cfg.Records > 0 && total >= cfg.Records {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	pwg.Wait()

	res := &Result{Mode: "consume", Topic: cfg.Topic, Partitions: parts, RecordSize: cfg.RecordSize,
		Concurrency: n, Records: read.Load(), Bytes: bytes.Load(), Errors: errs.Load()}
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	res.finish(elapsed, &h)
	return res, ctx.Err()
}
