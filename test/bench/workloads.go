package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
	p50, p999  map[string][]float64 // produce ack latency p50 and p99.9, ms
	brokerCPU  map[string][]float64 // throughput rows: the broker process's CPU ms per MB of record values
	clientCPU  map[string][]float64 // throughput rows: the load tool's CPU ms per MB
	paceRates  []float64            // paced rows: the records/s asked for in each run
	size       int                  // produce rows: the record size
	command    string
}

func newRow(name, unit string, higherWins bool) *row {
	return &row{name: name, unit: unit, higherWins: higherWins, samples: map[string][]float64{},
		mbps: map[string][]float64{}, p99: map[string][]float64{}, p50: map[string][]float64{}, p999: map[string][]float64{},
		brokerCPU: map[string][]float64{}, clientCPU: map[string][]float64{}}
}

type produceWorkload struct {
	name       string
	size       int
	partitions int32
	idempotent bool
	// inFlight, when set, is the produce requests in flight of this row
	// (a non-idempotent producer), whatever -max-in-flight says.
	inFlight int
	// raw rows take the client out of the way (perf --raw-batches): the
	// broker is the bound, not kgo encoding records.
	raw bool
	// paced, when set, sends at this share of the records/s the
	// store-nothing broker took unpaced in the same run (perf
	// --throughput), for the ack latency at a sustained rate.
	paced float64
	// pacedToDisk paces at that share of the lower of the store-nothing
	// broker's rate and the disk's sustained write in the same run: on a
	// disk slower than the store-nothing broker no storing broker can
	// carry a pace set by the store-nothing broker alone.
	pacedToDisk bool
}

// Every produce workload also runs against the store-nothing broker: its
// records/s is the most any broker could give this client on this machine.
var produceWorkloads = []produceWorkload{
	{"produce 100 B, 1 partition", 100, 1, false, 0, false, 0, false},
	{"produce 100 B, 8 partitions", 100, 8, false, 0, false, 0, false},
	{"produce 10 KiB, 1 partition", 10 << 10, 1, false, 0, false, 0, false},
	{"produce 100 B, 1 partition, idempotent", 100, 1, true, 0, false, 0, false},
	{"produce 100 B, 1,000 partitions", 100, 1000, false, 0, false, 0, false},
	// The Java producer behind kafka-producer-perf-test.sh keeps up to 5
	// requests in flight (max.in.flight.requests.per.connection), kgo's
	// non-idempotent producer 1: the 10 KiB row both ways.
	{"produce 10 KiB, 1 partition, 5 requests in flight", 10 << 10, 1, false, 5, false, 0, false},
	// The 100 B rows above are bound by kgo encoding records (the
	// store-nothing broker barely passes kfake); this one sends one
	// pre-encoded 1 MiB batch per request, so the brokers are the bound.
	{"produce 100 B, 1 partition, raw batches", 100, 1, false, 0, true, 0, false},
	// The produce tail under a load the broker can carry: 10 KiB
	// acknowledgements at 70 % of what the store-nothing broker took in
	// the same run, so the latencies are not those of a saturated queue.
	{"produce 10 KiB, 1 partition, paced at 70% of store-nothing", 10 << 10, 1, false, 0, false, 0.7, false},
	{"produce 10 KiB, 1 partition, paced at 70% of min(store-nothing, disk)", 10 << 10, 1, false, 0, false, 0.7, true},
}

// diskRowMinSize: rows of records at least this large also measure the
// disk's sustained write in every run (sustainedDiskMBps), as a target
// of its own: the bound of a storing broker where the disk is slower
// than the store-nothing broker.
const diskRowMinSize = 10 << 10

// diskName is the sustained disk write's column in a produce row.
const diskName = "disk"

func produceConfig(addr, topic string, w produceWorkload, o options) perf.Config {
	cfg := perf.Config{Brokers: []string{addr}, Topic: topic, Partitions: w.partitions, Duration: o.duration,
		RecordSize: w.size, Acks: "all", Idempotent: w.idempotent, Concurrency: 1, RawBatches: w.raw}
	if !w.idempotent {
		cfg.MaxInFlight = o.maxInFlight
		if w.inFlight > 0 {
			cfg.MaxInFlight = w.inFlight
		}
	}
	return cfg
}

// perfArgs is the `minibroker perf` command line for cfg.
func perfArgs(mode string, cfg perf.Config) []string {
	args := []string{"perf", mode, "--brokers", strings.Join(cfg.Brokers, ","), "--topic", cfg.Topic,
		"--partitions", strconv.Itoa(int(cfg.Partitions)), "--record-size", strconv.Itoa(cfg.RecordSize)}
	if cfg.Duration > 0 {
		args = append(args, "--duration", cfg.Duration.String())
	}
	if cfg.Records > 0 {
		args = append(args, "--records", strconv.FormatInt(cfg.Records, 10))
	}
	if cfg.RawBatches {
		args = append(args, "--raw-batches")
	}
	if mode == "produce" {
		args = append(args, "--acks", cfg.Acks)
		if cfg.Idempotent {
			args = append(args, "--idempotent")
		}
		if cfg.MaxInFlight > 0 {
			args = append(args, "--max-in-flight", strconv.Itoa(cfg.MaxInFlight))
		}
		if cfg.Throughput > 0 {
			args = append(args, "--throughput", strconv.FormatFloat(cfg.Throughput, 'f', 0, 64))
		}
	}
	return args
}

// perfCmd is the command line a report shows, with ADDR and T for the
// broker and topic that vary between runs.
func perfCmd(mode string, cfg perf.Config) string {
	cfg.Brokers, cfg.Topic = []string{"ADDR"}, "T"
	return "minibroker " + strings.Join(perfArgs(mode, cfg), " ")
}

// runPerf runs the load tool as a process of its own and returns its
// result and its CPU time.
func runPerf(bin, mode string, cfg perf.Config) (*perf.Result, time.Duration, error) {
	cmd := exec.Command(filepath.Join(bin, "minibroker"), append(perfArgs(mode, cfg), "--json", "--progress", "0")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, 0, fmt.Errorf("minibroker perf %s: %v: %s", mode, err, strings.TrimSpace(stderr.String()))
	}
	var res perf.Result
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, 0, fmt.Errorf("minibroker perf %s: %v in %q", mode, err, out)
	}
	return &res, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// measure runs one load against a broker process and records it in rw,
// with the CPU time each process spent per MB of record values.
func measure(bin string, p *process, name, mode string, cfg perf.Config, rw *row) (*perf.Result, error) {
	cfg.Brokers = []string{p.addr}
	cpu0 := p.cpu()
	res, clientCPU, err := runPerf(bin, mode, cfg)
	if err != nil {
		return nil, err
	}
	brokerCPU := p.cpu() - cpu0
	perMB := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / (float64(res.Bytes) / 1e6) }
	logf("%s %s: %s; broker CPU %.2fs (%.2f ms/MB), client CPU %.2fs (%.2f ms/MB)", rw.name, name, res,
		brokerCPU.Seconds(), perMB(brokerCPU), clientCPU.Seconds(), perMB(clientCPU))
	rw.samples[name] = append(rw.samples[name], res.RecordsPerSec)
	rw.mbps[name] = append(rw.mbps[name], res.MBPerSec)
	rw.p99[name] = append(rw.p99[name], res.Latency.P99)
	rw.p50[name] = append(rw.p50[name], res.Latency.P50)
	rw.p999[name] = append(rw.p999[name], res.Latency.P999)
	if res.Bytes > 0 {
		rw.brokerCPU[name] = append(rw.brokerCPU[name], perMB(brokerCPU))
		rw.clientCPU[name] = append(rw.clientCPU[name], perMB(clientCPU))
	}
	return res, nil
}

// dropTopic deletes a produce run's topic from the broker it ran on, so
// that no broker carries one run's records into the next: kfake keeps
// them in its heap, a storing broker in its files and the page cache,
// and on a machine whose free memory is handed back to its host what the
// other brokers hold decides how much of it a run finds ready
// (OPTIMISATIONS.md, "Produce path"). A failure is logged, not fatal.
func dropTopic(p *process, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr))
	if err != nil {
		logf("delete topic %s on %s: %v", topic, p.addr, err)
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteTopics(ctx, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		logf("delete topic %s on %s: %v", topic, p.addr, err)
	}
}

// started runs fn with each target started once as a process; the
// processes are stopped afterwards.
func started(bin string, ts []target, fn func(ps []*process) error) error {
	var ps []*process
	for _, t := range ts {
		p, err := t.start(bin)
		if err != nil {
			return fmt.Errorf("start %s: %w", t.name, err)
		}
		defer p.stop()
		ps = append(ps, p)
	}
	return fn(ps)
}

func runProduce(r *report) error {
	for _, w := range produceWorkloads {
		if !r.opts.selected(w.name) {
			continue
		}
		ts := []target{minibroker, kfakeT, storeNothing}
		if r.opts.produceBase != "" {
			ts = append(ts, target{name: compareName, exe: r.opts.produceBase})
		}
		rw := newRow(w.name, "records/s", true)
		rw.size = w.size
		rw.command = perfCmd("produce", produceConfig("", "", w, r.opts))
		switch {
		case w.pacedToDisk:
			rw.command += fmt.Sprintf(" --throughput R (R: %.0f%% of the lower of the store-nothing broker's records/s in an unpaced run and the disk's sustained write, both just before)", w.paced*100)
		case w.paced > 0:
			rw.command += fmt.Sprintf(" --throughput R (R: %.0f%% of the store-nothing broker's records/s in an unpaced run just before)", w.paced*100)
		}
		err := started(r.bin, ts, func(ps []*process) error {
			for run := range r.opts.runs {
				diskMBps := 0.0 // MiB/s, as perf's
				if w.size >= diskRowMinSize {
					syscall.Sync()
					v, err := sustainedDiskMBps(r.opts.duration)
					if err != nil {
						return fmt.Errorf("%s, disk write: %w", w.name, err)
					}
					diskMBps = v
					rw.mbps[diskName] = append(rw.mbps[diskName], v)
					logf("%s disk: sustained write %.1f MB/s (%s of 1 MiB writes, then fsync)", w.name, v, r.opts.duration)
				}
				rate := 0.0
				if w.paced > 0 { // the store-nothing broker's rate, unpaced, in this run
					syscall.Sync()
					scratch := newRow(w.name, "records/s", true)
					res, err := measure(r.bin, ps[2], storeNothing.name, "produce", produceConfig("", fmt.Sprintf("u%d", run), w, r.opts), scratch)
					if err != nil {
						return fmt.Errorf("%s, unpaced on %s: %w", w.name, storeNothing.name, err)
					}
					dropTopic(ps[2], fmt.Sprintf("u%d", run))
					rate = w.paced * res.RecordsPerSec
					if w.pacedToDisk && diskMBps > 0 {
						rate = w.paced * min(res.RecordsPerSec, diskMBps*(1<<20)/float64(w.size))
					}
					rw.paceRates = append(rw.paceRates, rate)
				}
				for k := range ts {
					i := (k + run) % len(ts) // alternate who goes first
					cfg := produceConfig("", fmt.Sprintf("p%d", run), w, r.opts)
					cfg.Throughput = rate
					// No run pays for the writeback of the runs before it:
					// the storing brokers leave their data dirty (no fsync
					// per produce), and which target ran just before
					// changes with the round.
					syscall.Sync()
					res, err := measure(r.bin, ps[i], ts[i].name, "produce", cfg, rw)
					if err != nil {
						return fmt.Errorf("%s on %s: %w", w.name, ts[i].name, err)
					}
					if res.Errors > 0 {
						return fmt.Errorf("%s on %s: %d errors, first %s", w.name, ts[i].name, res.Errors, res.FirstError)
					}
					dropTopic(ps[i], cfg.Topic)
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
	raw        bool // records counted by batch headers, never decoded
}

var consumeWorkloads = []consumeWorkload{
	{"consume 100 B, 1 partition", 100, 1, false},
	{"consume 100 B, 8 partitions", 100, 8, false},
	{"consume 10 KiB, 1 partition", 10 << 10, 1, false},
	// As the raw produce row: kgo decoding records is the bound of the
	// 100 B rows, so this one reads batch headers only.
	{"consume 100 B, 1 partition, raw batches", 100, 1, true},
}

func runConsume(r *report) error {
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
		read.RawBatches = w.raw
		rw.command = perfCmd("produce", fill) + "; then " + perfCmd("consume", read)
		err := started(r.bin, ts, func(ps []*process) error {
			for i, p := range ps {
				if ts[i].name == cannedName {
					continue // answers every fetch from its one batch
				}
				fill.Brokers = []string{p.addr}
				if _, _, err := runPerf(r.bin, "produce", fill); err != nil {
					return fmt.Errorf("fill %s: %w", ts[i].name, err)
				}
			}
			for run := range r.opts.runs {
				for k := range ts {
					i := (k + run) % len(ts)
					res, err := measure(r.bin, ps[i], ts[i].name, "consume", read, rw)
					if err != nil {
						return fmt.Errorf("%s on %s: %w", w.name, ts[i].name, err)
					}
					if res.Records < read.Records {
						return fmt.Errorf("%s on %s: read %d of %d records", w.name, ts[i].name, res.Records, read.Records)
					}
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
