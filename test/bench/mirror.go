package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/adminclient"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/perf"
)

// The mirror-speed section runs source and destination as `minibroker
// serve` processes of their own (so each one's CPU is its own) and, side
// by side in one run:
//
//   - catch-up of a backlog (-mirror-backlog-mb, 1 KiB records, no
//     compression, on 1 and on 8 partitions): the mirror's MB/s from
//     `mirror start` to every partition's local high watermark at the
//     source's end, a plain kgo consumer's MB/s reading the same backlog
//     from the same source (`minibroker perf consume`, a process), and the
//     disk's sustained write of as many bytes in the destination's temp
//     dir; the ratio is mirror / min(consumer, disk), since a mirror
//     writes what it reads and the consumer does not;
//   - steady-state lag: 10 MB/s of 10 KiB records produced into the
//     source; for every record, the time from its produce acknowledgement
//     at the source to its arrival at a kgo consumer of the destination.

// mirrorCatchUpRow is one partition count's measurements.
type mirrorCatchUpRow struct {
	partitions int32
	mb         int
	mirror     []float64 // MB/s (MB = 2^20 bytes of record values)
	base       []float64 // MB/s of -mirror-compare's binary
	baseRatio  []float64 // per run: this tree's mirror / -mirror-compare's, measured in the same run
	baseCPU    []float64
	consumer   []float64
	disk       []float64
	ratio      []float64 // per run: mirror / min(consumer, disk)
	dstCPU     []float64 // destination broker's CPU, ms per MB mirrored
	srcCPU     []float64 // source broker's CPU, ms per MB, during the mirror's run
	srcCPUCons []float64 // source broker's CPU, ms per MB, during the consumer's run
	cmd        string
}

type mirrorLagResult struct {
	mbps, p50, p99, max []float64
	dstCPU              []float64
	records             []float64
}

func runMirrorSpeed(r *report) error {
	for _, parts := range []int32{1, 8} {
		if !r.opts.selected(fmt.Sprintf("catch-up %d", parts)) {
			continue
		}
		row, err := mirrorCatchUp(r, parts)
		if row != nil {
			r.mirrorCatchUp = append(r.mirrorCatchUp, row)
		}
		if err != nil {
			return err
		}
	}
	if !r.opts.selected("lag") {
		return nil
	}
	lag, base := &mirrorLagResult{}, &mirrorLagResult{}
	r.mirrorLag = lag
	for run := range min(r.opts.runs, 3) {
		if err := mirrorSteadyLag(r, r.bin, lag, run); err != nil {
			return err
		}
		if r.opts.mirrorBase != "" {
			if err := mirrorSteadyLag(r, r.opts.mirrorBase, base, run); err != nil {
				return err
			}
			r.mirrorLagBase = base
		}
	}
	return nil
}

// mirrorCatchUp fills a source once, then runs the consumer, the disk
// write and the mirror min(runs, 3) times each, rotating which goes first.
func mirrorCatchUp(r *report, parts int32) (*mirrorCatchUpRow, error) {
	const recSize = 1024
	mb := r.opts.mirrorMB
	records := int64(mb) << 20 / recSize
	row := &mirrorCatchUpRow{partitions: parts, mb: mb}
	src, err := startProcess(r.bin, "minibroker")
	if err != nil {
		return nil, err
	}
	defer src.stop()
	fill := perf.Config{Brokers: []string{src.addr}, Topic: "backlog", Partitions: parts, Records: records,
		RecordSize: recSize, Acks: "all", Concurrency: 1, RawBatches: true}
	t0 := time.Now()
	if _, _, err := runPerf(r.bin, "produce", fill); err != nil {
		return row, fmt.Errorf("fill source: %w", err)
	}
	ends, err := endOffsets(src.addr, "backlog")
	if err != nil {
		return row, err
	}
	var total int64
	for _, e := range ends {
		total += e
	}
	logf("mirror catch-up, %d partitions: source filled with %d MiB (%d records) in %s", parts, mb, total, time.Since(t0).Round(time.Millisecond))
	read := fill
	read.RawBatches, read.Records, read.Duration = false, total, 5*time.Minute
	row.cmd = fmt.Sprintf("%s; then, per run: %s | mirror create/start of topic backlog on a second `minibroker serve` | %d MiB written in 1 MiB writes + fsync",
		perfCmd("produce", fill), perfCmd("consume", read), mb)
	steps := []func() error{
		func() error { // the plain consumer
			cpu0 := src.cpu()
			res, _, err := runPerf(r.bin, "consume", read)
			if err != nil {
				return err
			}
			if res.Records < total {
				return fmt.Errorf("consumer read %d of %d records", res.Records, total)
			}
			row.consumer = append(row.consumer, res.MBPerSec)
			row.srcCPUCons = append(row.srcCPUCons, ms(src.cpu()-cpu0)/(float64(res.Bytes)/1e6))
			return nil
		},
		func() error {
			v, err := diskMBps(mb)
			row.disk = append(row.disk, v)
			return err
		},
	}
	if r.opts.mirrorBase != "" {
		steps = append(steps, func() error {
			d, dstCPU, _, err := mirrorOnce(r.opts.mirrorBase, src, "backlog", ends)
			if err != nil {
				return fmt.Errorf("%s: %w", r.opts.mirrorBase, err)
			}
			bytes := float64(total * recSize)
			row.base = append(row.base, bytes/(1<<20)/d.Seconds())
			row.baseCPU = append(row.baseCPU, ms(dstCPU)/(bytes/1e6))
			logf("mirror catch-up, %d partitions, %s: %.1f MB/s, destination CPU %.2f ms/MB", parts, r.opts.mirrorBase, row.base[len(row.base)-1], row.baseCPU[len(row.baseCPU)-1])
			return nil
		})
	}
	steps = append(steps,
		func() error {
			d, dstCPU, srcCPU, err := mirrorOnce(r.bin, src, "backlog", ends)
			if err != nil {
				return err
			}
			bytes := float64(total * recSize)
			row.mirror = append(row.mirror, bytes/(1<<20)/d.Seconds())
			row.dstCPU = append(row.dstCPU, ms(dstCPU)/(bytes/1e6))
			row.srcCPU = append(row.srcCPU, ms(srcCPU)/(bytes/1e6))
			return nil
		})
	for run := range min(r.opts.runs, 3) {
		for k := range steps {
			if err := steps[(k+run)%len(steps)](); err != nil {
				return row, fmt.Errorf("mirror catch-up, %d partitions: %w", parts, err)
			}
		}
		n := len(row.mirror) - 1
		row.ratio = append(row.ratio, row.mirror[n]/min(row.consumer[n], row.disk[n]))
		if len(row.base) > n {
			row.baseRatio = append(row.baseRatio, row.mirror[n]/row.base[n])
		}
		logf("mirror catch-up, %d partitions, run %d: mirror %.1f MB/s (destination CPU %.2f ms/MB, source %.2f ms/MB), kgo consumer %.1f MB/s (source %.2f ms/MB), disk write %.1f MB/s: ratio %.2f",
			parts, run, row.mirror[n], row.dstCPU[n], row.srcCPU[n], row.consumer[n], row.srcCPUCons[n], row.disk[n], row.ratio[n])
	}
	return row, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// endOffsets is each partition's log end at addr.
func endOffsets(addr, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	if err := lo.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// startMirror starts a destination broker with its admin API and mirrors
// topic from src there; extra are more `minibroker serve` flags. It
// answers when `mirror start` was sent and the destination's CPU then.
func startMirror(bin string, src *process, topic string, extra ...string) (dst *process, started time.Time, cpu0 time.Duration, err error) {
	dst, err = startMirrorAt(bin, src, topic, &started, &cpu0, extra)
	return dst, started, cpu0, err
}

func startMirrorAt(bin string, src *process, topic string, started *time.Time, cpu0 *time.Duration, extra []string) (*process, error) {
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	dst, err := startProcess(bin, "minibroker", append([]string{"--http-listen", httpAddr}, extra...)...)
	if err != nil {
		return nil, err
	}
	for i := 0; ; i++ { // the admin listener may come up after the Kafka one
		if _, err := http.Get("http://" + httpAddr + "/healthz"); err == nil {
			break
		} else if i > 200 {
			dst.stop()
			return nil, err
		}
		time.Sleep(25 * time.Millisecond)
	}
	ac := adminclient.New(adminclient.Options{Addr: httpAddr, Agent: "bench"})
	if _, err := ac.CreateMirror(context.Background(), mirror.CreateRequest{Name: "m", Source: []string{src.addr}}); err != nil {
		dst.stop()
		return nil, err
	}
	*started, *cpu0 = time.Now(), dst.cpu()
	if _, err := ac.StartMirror(context.Background(), "m", mirror.TopicsRequest{Topics: []string{topic}}); err != nil {
		dst.stop()
		return nil, err
	}
	return dst, nil
}

// mirrorOnce mirrors topic from src into a new destination (`bin/minibroker`,
// or bin itself when it names a file) until every
// partition's local high watermark reaches ends; it answers the time from
// `mirror start` and the CPU of both brokers meanwhile.
func mirrorOnce(bin string, src *process, topic string, ends map[int32]int64) (time.Duration, time.Duration, time.Duration, error) {
	srcCPU0 := src.cpu()
	dst, start, dstCPU0, err := startMirror(bin, src, topic)
	if err != nil {
		return 0, 0, 0, err
	}
	defer dst.stop()
	cl, err := kgo.NewClient(kgo.SeedBrokers(dst.addr))
	if err != nil {
		return 0, 0, 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		lo, err := adm.ListEndOffsets(context.Background(), topic)
		done := err == nil && lo.Error() == nil
		if done {
			lo.Each(func(o kadm.ListedOffset) { done = done && o.Offset >= ends[o.Partition] })
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, 0, fmt.Errorf("mirror did not catch up in 10 min")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start), dst.cpu() - dstCPU0, src.cpu() - srcCPU0, nil
}

// mirrorSteadyLag produces 10 MB/s (10 records of 10 KiB every 10 ms)
// into a 4-partition source topic for -duration×3 and measures, for each
// record, the time from its produce acknowledgement at the source to its
// arrival at a kgo consumer of the mirror (FetchMaxWait 50 ms; the
// destination answers a waiting fetch as soon as an append lands).
func mirrorSteadyLag(r *report, bin string, res *mirrorLagResult, run int) error {
	src, err := startProcess(r.bin, "minibroker")
	if err != nil {
		return err
	}
	defer src.stop()
	if _, err := perf.EnsureTopic(context.Background(), perf.Config{Brokers: []string{src.addr}, Topic: "steady", Partitions: 4}); err != nil {
		return err
	}
	dst, _, _, err := startMirror(bin, src, "steady")
	if err != nil {
		return err
	}
	defer dst.stop()
	prod, err := kgo.NewClient(kgo.SeedBrokers(src.addr), kgo.DefaultProduceTopic("steady"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer prod.Close()
	cons, err := kgo.NewClient(kgo.SeedBrokers(dst.addr), kgo.ConsumeTopics("steady"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return err
	}
	defer cons.Close()
	var mu sync.Mutex
	acked, arrived := map[string]time.Time{}, map[string]time.Time{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			now := time.Now()
			mu.Lock()
			fs.EachRecord(func(rec *kgo.Record) { arrived[string(rec.Key)] = now })
			mu.Unlock()
		}
	}()
	val := make([]byte, 10<<10)
	for i := range val {
		val[i] = byte(i * 7)
	}
	secs := 3 * r.opts.duration
	dstCPU0 := dst.cpu()
	tick := time.NewTicker(10 * time.Millisecond)
	end := time.Now().Add(secs)
	var sent int
	for time.Now().Before(end) {
		<-tick.C
		for range 10 {
			key := strconv.Itoa(sent)
			sent++
			prod.Produce(ctx, &kgo.Record{Key: []byte(key), Value: val}, func(_ *kgo.Record, err error) {
				if err == nil {
					now := time.Now()
					mu.Lock()
					acked[key] = now
					mu.Unlock()
				}
			})
		}
	}
	tick.Stop()
	prod.Flush(ctx)
	for i := 0; i < 1000; i++ { // up to 10 s for the last records
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n >= sent {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	dstCPU := dst.cpu() - dstCPU0
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(arrived) < sent || len(acked) < sent {
		return fmt.Errorf("mirror steady lag: %d of %d records acknowledged, %d arrived at the mirror", len(acked), sent, len(arrived))
	}
	// A record can reach the mirror's consumer before the producer's
	// callback for its acknowledgement has run: its lag counts as 0.
	lags := make([]float64, 0, sent)
	for k, at := range acked {
		lags = append(lags, max(float64(arrived[k].Sub(at).Microseconds())/1000, 0))
	}
	slices.Sort(lags)
	bytes := float64(sent * len(val))
	res.mbps = append(res.mbps, bytes/(1<<20)/secs.Seconds())
	res.p50 = append(res.p50, lags[len(lags)/2])
	res.p99 = append(res.p99, lags[len(lags)*99/100])
	res.max = append(res.max, lags[len(lags)-1])
	res.records = append(res.records, float64(sent))
	res.dstCPU = append(res.dstCPU, ms(dstCPU)/(bytes/1e6))
	logf("mirror steady lag, %s, run %d: %.1f MB/s, %d records, p50 %.2f ms, p99 %.2f ms, max %.1f ms; destination CPU %.2f ms/MB",
		bin, run, res.mbps[run], len(lags), res.p50[run], res.p99[run], res.max[run], res.dstCPU[run])
	return nil
}

func (r *report) renderMirrorSpeed(p func(string, ...any)) {
	if len(r.mirrorCatchUp) == 0 && r.mirrorLag == nil {
		return
	}
	p("## Mirror catch-up and lag\n\nSource and destination are `minibroker serve` processes of their own (test/bench/mirror.go). " +
		"Catch-up: a backlog of 1 KiB records (no compression) on the source; the mirror's MB/s from `mirror start` (admin API) until every " +
		"partition's high watermark on the destination reaches the source's end, beside a plain kgo consumer (`minibroker perf consume`, " +
		"a process) reading the same backlog from the same source, and the disk's sustained write of as many bytes (1 MiB writes + fsync), " +
		"in the same run, runs rotating who goes first. Ratio: mirror / min(consumer, disk) per run, since a mirror writes what it reads " +
		"and the consumer does not (goal ≥ 0.9). CPU per MB: the broker process's user+system CPU over the MB (10^6 B) of record values.\n\n")
	p("| backlog | mirror MB/s | kgo consumer MB/s | disk write MB/s | ratio | ratio to the consumer alone | destination CPU ms/MB | source CPU ms/MB (mirror / consumer) |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.mirrorCatchUp {
		p("| %d MiB, %d partition(s) | %s | %s | %s | %s | %s | %s | %s / %s |\n", c.mb, c.partitions, cell(c.mirror), cell(c.consumer),
			cell(c.disk), cell(c.ratio), ratio(med(c.mirror), med(c.consumer)), fmtNum(med(c.dstCPU)), fmtNum(med(c.srcCPU)), fmtNum(med(c.srcCPUCons)))
	}
	for _, c := range r.mirrorCatchUp {
		if len(c.base) > 0 {
			p("| %d partition(s), destination `%s` (-mirror-compare; ratio: this tree / it, per run) | %s | | | %s | | %s | |\n", c.partitions, r.opts.mirrorBase, cell(c.base), cell(c.baseRatio), fmtNum(med(c.baseCPU)))
		}
	}
	if len(r.mirrorCatchUp) > 0 {
		p("\n```\n%s\n```\n", r.mirrorCatchUp[0].cmd)
	}
	if l := r.mirrorLag; l != nil && len(l.p99) > 0 {
		p("\nSteady state: 10 records of 10 KiB every 10 ms (about 10 MB/s) produced by kgo into a 4-partition source topic for %s; "+
			"lag is, per record, the time from its produce acknowledgement at the source to its arrival at a kgo consumer of the "+
			"destination (FetchMaxWait 50 ms), so it includes the mirror's fetch, its append and the consumer's fetch (goal p99 < 20 ms).\n\n"+
			"| MB/s | records | p50 ms | p99 ms | max ms | destination CPU ms/MB |\n|---|---|---|---|---|---|\n", 3*r.opts.duration)
		p("| %s | %s | %s | %s | %s | %s |\n", cell(l.mbps), cell(l.records), cell(l.p50), cell(l.p99), cell(l.max), fmtNum(med(l.dstCPU)))
		if b := r.mirrorLagBase; b != nil && len(b.p99) > 0 {
			p("| destination `%s` (-mirror-compare): %s | %s | %s | %s | %s | %s |\n", r.opts.mirrorBase, cell(b.mbps), cell(b.records), cell(b.p50), cell(b.p99), cell(b.max), fmtNum(med(b.dstCPU)))
		}
	}
	p("\n")
}
