package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The fetch sessions section (KIP-227): a consumer tailing a topic while
// a producer writes small batches to it, at 8 and at 1,000 partitions,
// with fetch sessions (kgo's default) and without (kgo.DisableFetchSessions:
// every request names every partition, every response answers each), all
// four against one `minibroker serve` process, alternating in each run.
// Measured per run: the mean Fetch request (the broker's
// minibroker_request_bytes_total over minibroker_requests_total for
// Fetch), Fetch requests per second, and the broker's CPU per MB of record
// values consumed (its whole CPU: serving the producer too, the same
// load in the four rows).

// fetchSessionRow is one configuration's samples.
type fetchSessionRow struct {
	name       string
	partitions int32
	sessions   bool
	reqBytes   []float64 // per Fetch request
	fetchesPS  []float64
	cpuPerMB   []float64 // broker CPU ms per MB consumed
	mbps       []float64 // MB consumed per second
}

// The producer: every tick, fsBatchesPerTick batches of fsRecordsPerBatch
// records of fsRecordSize bytes, each batch to the next partition of a
// stride through the topic (1 MB/s of values in all).
const (
	fsTick            = 10 * time.Millisecond
	fsBatchesPerTick  = 10
	fsRecordsPerBatch = 10
	fsRecordSize      = 100
)

func runFetchSessions(r *report) error {
	httpAddr, err := freeAddr()
	if err != nil {
		return err
	}
	p, err := startProcess(r.bin, "minibroker", "--http-listen", httpAddr)
	if err != nil {
		return err
	}
	defer p.stop()
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer prod.Close()
	adm := kadm.NewClient(prod)
	rows := []*fetchSessionRow{
		{name: "8 partitions, fetch sessions", partitions: 8, sessions: true},
		{name: "8 partitions, no fetch sessions", partitions: 8},
		{name: "1,000 partitions, fetch sessions", partitions: 1000, sessions: true},
		{name: "1,000 partitions, no fetch sessions", partitions: 1000},
	}
	for _, n := range []int32{8, 1000} {
		resp, err := adm.CreateTopic(context.Background(), n, 1, nil, fsTopic(n))
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", fsTopic(n), err)
		}
		// A first record on every partition: the runs do not pay for
		// first appends (see OPTIMISATIONS.md, "First append to a new partition").
		var recs []*kgo.Record
		for part := range n {
			recs = append(recs, &kgo.Record{Topic: fsTopic(n), Partition: part, Value: []byte("warm")})
		}
		if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			return fmt.Errorf("warm %s: %w", fsTopic(n), err)
		}
	}
	for run := range r.opts.runs {
		for k := range rows {
			rw := rows[(k+run)%len(rows)]
			if err := fsMeasure(r, p, httpAddr, prod, adm, rw); err != nil {
				return fmt.Errorf("%s: %w", rw.name, err)
			}
		}
	}
	r.fetchSessions = rows
	return nil
}

func fsTopic(n int32) string { return fmt.Sprintf("fs-%d", n) }

// fsMeasure is one run of one configuration.
func fsMeasure(r *report, p *process, httpAddr string, prod *kgo.Client, adm *kadm.Client, rw *fetchSessionRow) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.duration+time.Minute)
	defer cancel()
	topic := fsTopic(rw.partitions)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	start := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) { start[o.Partition] = kgo.NewOffset().At(o.Offset) })
	opts := []kgo.Opt{kgo.SeedBrokers(p.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start})}
	if !rw.sessions {
		opts = append(opts, kgo.DisableFetchSessions())
	}
	cons, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cons.Close()
	var consumed, consumedBytes atomic.Int64
	pollCtx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			fs := cons.PollFetches(pollCtx)
			fs.EachRecord(func(rec *kgo.Record) { consumedBytes.Add(int64(len(rec.Value))) })
			consumed.Add(int64(fs.NumRecords()))
		}
	}()
	defer func() { stopPolling(); <-polled }()
	var produced int64
	// Let the consumer open its connection and session before the window.
	time.Sleep(300 * time.Millisecond)
	fetches0, bytes0, err := fsFetchMetrics(httpAddr)
	if err != nil {
		return err
	}
	cpu0, t0 := p.cpu(), time.Now()
	value := make([]byte, fsRecordSize)
	tick := time.NewTicker(fsTick)
	next := 0
	for time.Since(t0) < r.opts.duration {
		<-tick.C
		recs := make([]*kgo.Record, 0, fsBatchesPerTick*fsRecordsPerBatch)
		for range fsBatchesPerTick {
			part := int32(next*7919) % rw.partitions // a stride through the partitions
			next++
			for range fsRecordsPerBatch {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: value})
			}
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			tick.Stop()
			return err
		}
		produced += int64(len(recs))
	}
	tick.Stop()
	for consumed.Load() < produced {
		if ctx.Err() != nil {
			return fmt.Errorf("consumed %d records of %d: %w", consumed.Load(), produced, ctx.Err())
		}
		time.Sleep(time.Millisecond)
	}
	elapsed, cpu := time.Since(t0), p.cpu()-cpu0
	fetches1, bytes1, err := fsFetchMetrics(httpAddr)
	if err != nil {
		return err
	}
	mb := float64(consumedBytes.Load()) / 1e6
	fetches := fetches1 - fetches0
	rw.reqBytes = append(rw.reqBytes, (bytes1-bytes0)/max(fetches, 1))
	rw.fetchesPS = append(rw.fetchesPS, fetches/elapsed.Seconds())
	rw.cpuPerMB = append(rw.cpuPerMB, float64(cpu.Microseconds())/1000/mb)
	rw.mbps = append(rw.mbps, mb/elapsed.Seconds())
	logf("fetch sessions %s: %.2f MB in %s, %.0f fetches (%.0f request bytes each), broker CPU %s (%.1f ms/MB)",
		rw.name, mb, elapsed.Round(time.Millisecond), fetches, rw.reqBytes[len(rw.reqBytes)-1], cpu, rw.cpuPerMB[len(rw.cpuPerMB)-1])
	return nil
}

// fsFetchMetrics reads the Fetch requests handled and their bytes from
// the broker's /metrics (0 before the first Fetch).
func fsFetchMetrics(httpAddr string) (requests, bytes float64, err error) {
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		for name, dst := range map[string]*float64{`minibroker_requests_total{api="Fetch"} `: &requests, `minibroker_request_bytes_total{api="Fetch"} `: &bytes} {
			if v, ok := strings.CutPrefix(line, name); ok {
				*dst, err = strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, 0, err
				}
			}
		}
	}
	return requests, bytes, nil // no series yet: no Fetch handled, 0
}

// renderFetchSessions is the section's table.
func (r *report) renderFetchSessions(p func(string, ...any)) {
	rows := r.fetchSessions
	if len(rows) == 0 {
		return
	}
	p("## Fetch sessions\n\n")
	p("A consumer (kgo, one client assigned every partition, no group) tails a topic while a producer writes %d batches of %d records of %d B every %s, "+
		"each batch to the next partition of a stride through the topic (%.1f MB/s of values): at 8 partitions each gets %d batches a second, "+
		"at 1,000 one. With fetch sessions (kgo's default) and without (`kgo.DisableFetchSessions()`: every request names every partition and every "+
		"response answers each), the four against one `minibroker serve` process, alternating within each of %d runs of %s; medians with the range. "+
		"Request bytes per fetch are the broker's `minibroker_request_bytes_total` over `minibroker_requests_total` for Fetch; the broker's CPU "+
		"(from /proc/PID/stat, serving the producer as well: the same load in every row) is per MB of values consumed.\n\n",
		fsBatchesPerTick, fsRecordsPerBatch, fsRecordSize, fsTick, float64(fsBatchesPerTick*fsRecordsPerBatch*fsRecordSize)/fsTick.Seconds()/1e6,
		int(float64(fsBatchesPerTick)/fsTick.Seconds())/8, r.opts.runs, r.opts.duration)
	p("| configuration | request bytes per fetch | fetches/s | MB/s consumed | broker CPU ms per MB |\n|---|---|---|---|---|\n")
	for _, rw := range rows {
		p("| %s | %s | %s | %s | %s |\n", rw.name, cell(rw.reqBytes), cell(rw.fetchesPS), cell(rw.mbps), cell(rw.cpuPerMB))
	}
	if len(rows) == 4 {
		p("\nBroker CPU per MB at 1,000 partitions over 8 partitions (goal ≤ 1.5): **%s** with fetch sessions, %s without. "+
			"Request bytes per fetch at 1,000 partitions, without sessions over with: %s.\n",
			ratio(med(rows[2].cpuPerMB), med(rows[0].cpuPerMB)), ratio(med(rows[3].cpuPerMB), med(rows[1].cpuPerMB)),
			ratio(med(rows[3].reqBytes), med(rows[2].reqBytes)))
	}
	p("\n```\ngo run ./test/bench -only fetchsessions -runs %d -duration %s\n```\n\n", r.opts.runs, r.opts.duration)
}
