package perf

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnsureTopic creates the topic with cfg.Partitions partitions when it
// does not exist and returns its partition count.
func EnsureTopic(ctx context.Context, cfg Config) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for attempt := 0; ; attempt++ {
		td, err := adm.ListTopics(ctx, cfg.Topic)
		if err == nil {
			if t, ok := td[cfg.Topic]; ok && t.Err == nil && len(t.Partitions) > 0 {
				return int32(len(t.Partitions)), nil
			}
			resp, cerr := adm.CreateTopic(ctx, cfg.Partitions, -1, nil, cfg.Topic)
			if cerr == nil && resp.Err == nil {
				return cfg.Partitions, nil
			}
			if cerr == nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
				err = resp.Err
			} else {
				err = cerr
			}
		}
		if attempt >= 20 || ctx.Err() != nil {
			return 0, fmt.Errorf("topic %s: %w", cfg.Topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startProgress prints cumulative and windowed rates every interval, if
// cfg.Progress is set, until the func it returns is called.
func startProgress(cfg Config, what string, records, bytes *atomic.Int64, h *histogram) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { progress(cfg, what, records, bytes, h, done) })
	return func() { close(done); wg.Wait() }
}

func progress(cfg Config, what string, records, bytes *atomic.Int64, h *histogram, stop <-chan struct{}) {
	if cfg.Progress == nil {
		return
	}
	every := cfg.ProgressInterval
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	start := time.Now()
	last, lastB, lastT := int64(0), int64(0), start
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			n, b := records.Load(), bytes.Load()
			dt := now.Sub(lastT).Seconds()
			s := h.Summary()
			fmt.Fprintf(cfg.Progress, "%6.1fs %d records %s, %.0f records/s, %.2f MB/s, latency ms p50 %.2f p99 %.2f max %.2f\n",
				now.Sub(start).Seconds(), n, what, float64(n-last)/dt, float64(b-lastB)/(1<<20)/dt, s.P50, s.P99, s.Max)
			last, lastB, lastT = n, b, now
		}
	}
}

// Produce runs a produce load and reports throughput and ack latency.
func Produce(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	parts, err := EnsureTopic(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.RawBatches {
		return produceRaw(ctx, cfg, parts)
	}
	clients := make([]*kgo.Client, cfg.Concurrency)
	for i := range clients {
		if clients[i], err = kgo.NewClient(cfg.producerOpts()...); err != nil {
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
	// Warm up: metadata and producer ids before the clock starts.
	for _, c := range clients {
		if err := c.ProduceSync(ctx, &kgo.Record{Value: make([]byte, cfg.RecordSize)}).FirstErr(); err != nil {
			return nil, fmt.Errorf("warm-up produce: %w", err)
		}
	}

	st := &produceStats{}
	value := make([]byte, cfg.RecordSize)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var deadline time.Time
	start := time.Now()
	if cfg.Duration > 0 {
		deadline = start.Add(cfg.Duration)
	}
	stopProgress := startProgress(cfg, "acked", &st.sent, &st.sentBytes, &st.h)

	var claimed atomic.Int64
	var wg sync.WaitGroup
	perClient := cfg.Throughput / float64(len(clients)) // records/s per client; 0: unpaced
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var now time.Time
			for i := 0; ctx.Err() == nil; i++ {
				if cfg.Records > 0 && claimed.Add(1) > cfg.Records {
					break
				}
				sampled := i%latencySample == 0
				if sampled {
					now = time.Now()
					if !deadline.IsZero() && now.After(deadline) {
						break
					}
					if perClient > 0 {
						now = pace(ctx, start, i, perClient, now)
					}
				}
				f := st.get()
				f.sampled, f.t0 = sampled, now
				// Stamping the record ourselves saves kgo a clock read
				// per record (kgo keeps milliseconds of it).
				f.rec = kgo.Record{Value: value, Timestamp: now}
				cl.Produce(ctx, &f.rec, f.done)
			}
			cl.Flush(ctx)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()

	res := &Result{Mode: "produce", Topic: cfg.Topic, Partitions: parts, RecordSize: cfg.RecordSize, Acks: cfg.Acks,
		Idempotent: cfg.Idempotent, Compression: cfg.Compression, LingerMs: float64(cfg.Linger) / float64(time.Millisecond),
		Concurrency: cfg.Concurrency, Throughput: cfg.Throughput, Records: st.sent.Load(), Bytes: st.sentBytes.Load(), Errors: st.errs.Load()}
	if p := st.firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	res.finish(elapsed, &st.h)
	return res, ctx.Err()
}

// pace waits until the i-th record of a client sending rate records/s
// from start is due and returns the time then (now when it is due
// already). It is called once per latencySample records, so the records
// in between go out in a burst of that many.
func pace(ctx context.Context, start time.Time, i int, rate float64, now time.Time) time.Time {
	due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
	if d := due.Sub(now); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		return time.Now()
	}
	return now
}

// produceStats is what a produce run counts. The records in flight come
// from a pool, each with its send time and its promise bound once, so the
// load tool allocates nothing per record in steady state and its own
// garbage collection does not weigh on the broker it measures (kgo's
// records and closures were half of the bytes allocated in a run).
type produceStats struct {
	h         histogram
	sent      atomic.Int64 // records acknowledged
	sentBytes atomic.Int64
	errs      atomic.Int64
	firstErr  atomic.Pointer[string]
	pool      sync.Pool // *inflight
}

// latencySample: the ack latency of one record in this many is measured,
// and the clock is read once per this many records sent (its timestamp
// is that of the run's first record). kafka-producer-perf-test.sh
// samples its latency percentiles too; reading the clock twice per record
// was an eighth of the load tool's CPU on this machine's VM.
const latencySample = 16

// inflight is one record between Produce and its promise.
type inflight struct {
	rec     kgo.Record
	sampled bool      // its ack latency is measured
	t0      time.Time // the send time when sampled
	st      *produceStats
	done    func(*kgo.Record, error) // f.finish, bound once
}

func (st *produceStats) get() *inflight {
	if f, ok := st.pool.Get().(*inflight); ok {
		return f
	}
	f := &inflight{st: st}
	f.done = f.finish
	return f
}

// finish is the promise: kgo calls it once per record and no longer
// touches the record afterwards, so the record goes back to the pool.
func (f *inflight) finish(r *kgo.Record, err error) {
	st := f.st
	if err != nil {
		if st.errs.Add(1) == 1 {
			s := err.Error()
			st.firstErr.Store(&s)
		}
	} else {
		if f.sampled {
			st.h.Record(time.Since(f.t0))
		}
		st.sent.Add(1)
		st.sentBytes.Add(int64(len(r.Value)))
	}
	f.rec = kgo.Record{}
	st.pool.Put(f)
}
