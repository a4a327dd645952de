package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/perf"
	"github.com/minibroker/minibroker/minibrokertest"
)

// row is one measured quantity: samples per target.
type row struct {
	name, unit string
	higherWins bool
	samples    map[string][]float64
	mbps       map[string][]float64 // throughput rows: MB/s beside records/s
	p99        map[string][]float64 // produce ack / consume latency p99, ms
	command    string
}

func newRow(name, unit string, higherWins bool) *row {
	return &row{name: name, unit: unit, higherWins: higherWins, samples: map[string][]float64{},
		mbps: map[string][]float64{}, p99: map[string][]float64{}}
}

type produceWorkload struct {
	name       string
	size       int
	partitions int32
	idempotent bool
}

// Every produce workload also runs against the store-nothing broker: its
// records/s is the most any broker could give this client on this machine.
var produceWorkloads = []produceWorkload{
	{"produce 100 B, 1 partition", 100, 1, false},
	{"produce 100 B, 8 partitions", 100, 8, false},
	{"produce 10 KiB, 1 partition", 10 << 10, 1, false},
	{"produce 100 B, 1 partition, idempotent", 100, 1, true},
	{"produce 100 B, 1,000 partitions", 100, 1000, false},
}

func produceConfig(addr, topic string, w produceWorkload, d time.Duration) perf.Config {
	return perf.Config{Brokers: []string{addr}, Topic: topic, Partitions: w.partitions, Duration: d,
		RecordSize: w.size, Acks: "all", Idempotent: w.idempotent, Concurrency: 1}
}

func perfCmd(mode string, cfg perf.Config) string {
	s := fmt.Sprintf("minibroker perf %s --brokers ADDR --topic T --partitions %d --record-size %d", mode, cfg.Partitions, cfg.RecordSize)
	if cfg.Duration > 0 {
		s += fmt.Sprintf(" --duration %s", cfg.Duration)
	}
	if cfg.Records > 0 {
		s += fmt.Sprintf(" --records %d", cfg.Records)
	}
	if mode == "produce" {
		s += " --acks all"
		if cfg.Idempotent {
			s += " --idempotent"
		}
	}
	return s
}

// started runs fn with each target started once; targets are stopped
// afterwards.
func started(ts []target, fn func(addrs []string) error) error {
	var addrs []string
	for _, t := range ts {
		addr, stop, err := t.start()
		if err != nil {
			return fmt.Errorf("start %s: %w", t.name, err)
		}
		defer stop()
		addrs = append(addrs, addr)
	}
	return fn(addrs)
}

func runProduce(r *report) error {
	ctx := context.Background()
	for _, w := range produceWorkloads {
		if !r.opts.selected(w.name) {
			continue
		}
		ts := []target{minibroker, kfakeT, storeNothing}
		rw := newRow(w.name, "records/s", true)
		rw.command = perfCmd("produce", produceConfig("", "", w, r.opts.duration))
		err := started(ts, func(addrs []string) error {
			for run := range r.opts.runs {
				for k := range ts {
					i := (k + run) % len(ts) // alternate who goes first
					cpu0 := cpuTime()
					res, err := perf.Produce(ctx, produceConfig(addrs[i], fmt.Sprintf("p%d", run), w, r.opts.duration))
					if err != nil {
						return fmt.Errorf("%s on %s: %w", w.name, ts[i].name, err)
					}
					if res.Errors > 0 {
						return fmt.Errorf("%s on %s: %d errors, first %s", w.name, ts[i].name, res.Errors, res.FirstError)
					}
					logf("%s %s run %d: %s; %s", w.name, ts[i].name, run, res, cpuPerMB(cpuTime()-cpu0, res.Bytes))
					rw.samples[ts[i].name] = append(rw.samples[ts[i].name], res.RecordsPerSec)
					rw.mbps[ts[i].name] = append(rw.mbps[ts[i].name], res.MBPerSec)
					rw.p99[ts[i].name] = append(rw.p99[ts[i].name], res.Latency.P99)
				}
			}
			return nil
		})
		r.produce = append(r.produce, rw)
		if err != nil {
			return err
		}
	}
	return nil
}

type consumeWorkload struct {
	name       string
	size       int
	partitions int32
}

var consumeWorkloads = []consumeWorkload{
	{"consume 100 B, 1 partition", 100, 1},
	{"consume 100 B, 8 partitions", 100, 8},
	{"consume 10 KiB, 1 partition", 10 << 10, 1},
}

func runConsume(r *report) error {
	ctx := context.Background()
	for _, w := range consumeWorkloads {
		if !r.opts.selected(w.name) {
			continue
		}
		ts := []target{minibroker, kfakeT, serveCanned(w.size)}
		records := int64(r.opts.consumeMB) << 20 / int64(w.size)
		rw := newRow(w.name, "records/s", true)
		fill := perf.Config{Topic: "c", Partitions: w.partitions, Records: records, RecordSize: w.size, Acks: "all",
			Concurrency: 1}
		read := fill
		read.Records++ // the producer's warm-up record
		read.Duration = 2 * time.Minute
		rw.command = perfCmd("produce", fill) + "; then " + perfCmd("consume", read)
		err := started(ts, func(addrs []string) error {
			for i, addr := range addrs {
				if ts[i].name == cannedName {
					continue // answers every fetch from its one batch
				}
				fill.Brokers = []string{addr}
				if _, err := perf.Produce(ctx, fill); err != nil {
					return fmt.Errorf("fill %s: %w", ts[i].name, err)
				}
			}
			for run := range r.opts.runs {
				for k := range ts {
					i := (k + run) % len(ts)
					read.Brokers = []string{addrs[i]}
					cpu0 := cpuTime()
					res, err := perf.Consume(ctx, read)
					if err != nil {
						return fmt.Errorf("%s on %s: %w", w.name, ts[i].name, err)
					}
					if res.Records < read.Records {
						return fmt.Errorf("%s on %s: read %d of %d records", w.name, ts[i].name, res.Records, read.Records)
					}
					logf("%s %s run %d: %s; %s", w.name, ts[i].name, run, res, cpuPerMB(cpuTime()-cpu0, res.Bytes))
					rw.samples[ts[i].name] = append(rw.samples[ts[i].name], res.RecordsPerSec)
					rw.mbps[ts[i].name] = append(rw.mbps[ts[i].name], res.MBPerSec)
				}
			}
			return nil
		})
		r.consume = append(r.consume, rw)
		if err != nil {
			return err
		}
	}
	return nil
}

// firstProduce is the time for one acknowledged record.
func firstProduce(addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("t"))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
}

func runStartup(r *report) error {
	empty := newRow("start-up to first acknowledged produce, empty broker", "ms", false)
	empty.command = "minibrokertest.New(Topic(\"t\", 1)) | kfake.NewCluster(NumBrokers(1), SeedTopics(1, \"t\")); then one kgo ProduceSync"
	r.startup = append(r.startup, empty)
	starts := map[string]func() (func(), error){
		"minibroker": func() (func(), error) {
			c, err := minibrokertest.New(minibrokertest.Topic("t", 1))
			if err != nil {
				return nil, err
			}
			return c.Close, firstProduce(c.Addr())
		},
		"kfake": func() (func(), error) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
			if err != nil {
				return nil, err
			}
			return c.Close, firstProduce(c.ListenAddrs()[0])
		},
	}
	names := []string{"minibroker", "kfake"}
	for run := range r.opts.runs {
		for k := range names {
			name := names[(k+run)%2]
			t0 := time.Now()
			stop, err := starts[name]()
			d := time.Since(t0)
			if stop != nil {
				stop()
			}
			if err != nil {
				return fmt.Errorf("empty start-up %s: %w", name, err)
			}
			empty.samples[name] = append(empty.samples[name], float64(d.Microseconds())/1000)
		}
	}

	// A broker holding startup-mb MiB, restarted from its data directory.
	full := newRow(fmt.Sprintf("start-up to first acknowledged produce, holding %d MiB", r.opts.startupMB), "ms", false)
	full.command = fmt.Sprintf("fill topic t with %d MiB of 10 KiB records, close; then minibrokertest.New(DataDir(dir)) | kfake.NewCluster(DataDir(dir)) and one ProduceSync", r.opts.startupMB)
	r.startup = append(r.startup, full)
	mbDir, err := os.MkdirTemp("", "bench-mb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(mbDir)
	kfDir, err := os.MkdirTemp("", "bench-kfake-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(kfDir)
	records := int64(r.opts.startupMB) << 20 / (10 << 10)
	fill := func(addr string) error {
		_, err := perf.Produce(context.Background(), perf.Config{Brokers: []string{addr}, Topic: "t", Partitions: 1,
			Records: records, RecordSize: 10 << 10, Acks: "all", Concurrency: 1})
		return err
	}
	t0 := time.Now()
	c, err := minibrokertest.New(minibrokertest.DataDir(mbDir))
	if err != nil {
		return err
	}
	err = fill(c.Addr())
	c.Close()
	if err != nil {
		return fmt.Errorf("fill minibroker: %w", err)
	}
	logf("filled minibroker with %d MiB in %s", r.opts.startupMB, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(kfDir))
	if err != nil {
		return err
	}
	err = fill(kc.ListenAddrs()[0])
	kc.Close()
	if err != nil {
		return fmt.Errorf("fill kfake: %w", err)
	}
	logf("filled kfake with %d MiB in %s", r.opts.startupMB, time.Since(t0).Round(time.Millisecond))
	starts = map[string]func() (func(), error){
		"minibroker": func() (func(), error) {
			c, err := minibrokertest.New(minibrokertest.DataDir(mbDir))
			if err != nil {
				return nil, err
			}
			return c.Close, firstProduce(c.Addr())
		},
		"kfake": func() (func(), error) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(kfDir))
			if err != nil {
				return nil, err
			}
			return c.Close, firstProduce(c.ListenAddrs()[0])
		},
	}
	for run := range r.opts.runs {
		for k := range names {
			name := names[(k+run)%2]
			t0 := time.Now()
			stop, err := starts[name]()
			d := time.Since(t0)
			if stop != nil {
				stop()
			}
			if err != nil {
				return fmt.Errorf("start-up with data %s: %w", name, err)
			}
			full.samples[name] = append(full.samples[name], float64(d.Microseconds())/1000)
			logf("start-up holding %d MiB %s run %d: %s", r.opts.startupMB, name, run, d.Round(time.Microsecond))
		}
	}
	return nil
}
