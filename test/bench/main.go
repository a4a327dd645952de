// Command bench is the side-by-side benchmark behind `make bench`: it runs
// identical workloads (internal/perf, kgo) against minibroker and against
// franz-go's kfake on this machine, alternating runs, measures the limits
// in the same run (kfake with BlackholeProduce as the store-nothing broker,
// loopback TCP, sequential disk write), and writes docs/PERFORMANCE.md.
//
//	go run ./test/bench -runs 5 -duration 3s -startup-mb 1024 -out docs/PERFORMANCE.md
//
// Everything above the "end of generated section" marker of the output
// file is regenerated; what follows it (hand-written: reproducing, the
// hot-path benchmarks, the pointer to docs/OPTIMISATIONS.md) is kept.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"
)

type options struct {
	runs        int
	duration    time.Duration
	startupMB   int
	diskMB      int
	consumeMB   int
	out         string
	goBench     bool
	mirrorBench bool
	mirrorMB    int
	mirrorBase  string
	produceBase string
	txnBase     string
	txnPeer     string
	securityMB  int
	maxInFlight int
	only        string
	workload    string
	cpuProfile  string
	memProfile  string
	blockProf   string
	traceFile   string
}

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 5, "runs per workload and broker")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "length of each produce run")
	flag.IntVar(&o.startupMB, "startup-mb", 1024, "data held by the broker in the start-up-with-data measurement, MiB")
	flag.IntVar(&o.diskMB, "disk-mb", 256, "size of the sequential disk write, MiB")
	flag.IntVar(&o.consumeMB, "consume-mb", 256, "data consumed per consume run, MiB")
	flag.StringVar(&o.out, "out", "docs/PERFORMANCE.md", "report to write")
	flag.BoolVar(&o.goBench, "gobench", true, "also run the minibrokertest start-up and cycle benchmarks (go test)")
	flag.BoolVar(&o.mirrorBench, "mirror", true, "also run the mirror benchmarks (sections mirrorspeed and failover)")
	flag.IntVar(&o.mirrorMB, "mirror-backlog-mb", 1024, "backlog of the mirror catch-up benchmark (section mirrorspeed), MiB")
	flag.StringVar(&o.mirrorBase, "mirror-compare", "", "a second minibroker binary (e.g. built from an older commit) whose mirror catch-up runs beside this tree's, as a destination, in the same run")
	flag.StringVar(&o.produceBase, "produce-compare", "", "a second minibroker binary (e.g. built from an older commit) run as a fourth broker in every produce run, interleaved with the others, with its latency and share in the produce latency table")
	flag.StringVar(&o.txnBase, "txn-compare", "", "a second minibroker binary (e.g. built from the commit before __transaction_state became the transaction coordinator's store) whose EndTxn latency and start-up with 100k transactional ids run beside this tree's in the same run (section txn)")
	flag.StringVar(&o.txnPeer, "txn-peer", "", "a third minibroker binary (e.g. built from the commit before a change to the write path) whose EndTxn latency and start-up run beside this tree's and -txn-compare's in the same run, as column `peer` (section txn)")
	flag.IntVar(&o.securityMB, "security-mb", 64, "MINIBROKER_BENCH_SECURITY_MB: data produced and consumed per listener in the SASL_SSL/PLAINTEXT benchmark")
	flag.IntVar(&o.maxInFlight, "max-in-flight", 0, "produce requests in flight for the non-idempotent produce workloads (0: kgo's default, 1)")
	flag.StringVar(&o.only, "only", "", "run only the sections whose name contains this (limits, produce, consume, fetchsessions, sharegroups, startup, rss, gobench, mirrorspeed, failover, security, authz, quotas, compaction, txn)")
	flag.StringVar(&o.workload, "workload", "", "run only the produce, consume and mirrorspeed workloads whose name contains this (mirrorspeed: \"catch-up 1\", \"catch-up 8\", \"lag\")")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the limits, the in-process start-up runs; brokers and load tool run as processes of their own)")
	flag.StringVar(&o.memProfile, "memprofile", "", "write an allocation profile at the end")
	flag.StringVar(&o.blockProf, "blockprofile", "", "write a block (off-CPU waits) profile at the end")
	flag.StringVar(&o.traceFile, "trace", "", "write an execution trace of the whole run (keep the run short)")
	flag.Parse()
	if o.traceFile != "" {
		if f, err := os.Create(o.traceFile); err == nil {
			trace.Start(f)
			defer trace.Stop()
		}
	}
	if o.blockProf != "" {
		runtime.SetBlockProfileRate(10000) // one sample per 10 µs blocked
		defer func() {
			if f, err := os.Create(o.blockProf); err == nil {
				pprof.Lookup("block").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if o.memProfile != "" {
		runtime.MemProfileRate = 64 << 10
		defer func() {
			if f, err := os.Create(o.memProfile); err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	start := time.Now()
	r := &report{opts: o, machine: describeMachine()}
	bin, err := buildBinaries()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(bin)
	r.bin = bin
	r.machine.loadBefore = loadAvg()
	steps := []struct {
		name string
		run  func(*report) error
	}{
		{"limits", runLimits},
		{"produce", runProduce},
		{"consume", runConsume},
		{"fetchsessions", runFetchSessions},
		{"sharegroups", runShareGroups},
		{"startup", runStartup},
		{"rss", runRSS},
		{"gobench", runGoBench},
		{"mirrorspeed", runMirrorSpeed},
		{"failover", runFailoverBench},
		{"security", runSecurityBench},
		{"authz", runAuthzBench},
		{"quotas", runQuotaBench},
		{"compaction", runCompactionBench},
		{"txn", runTxnBench},
	}
	for _, s := range steps {
		if o.only != "" && !contains(o.only, s.name) ||
			s.name == "gobench" && !o.goBench || (strings.HasPrefix(s.name, "mirror") || s.name == "failover") && !o.mirrorBench {
			continue
		}
		t0 := time.Now()
		logf("== %s", s.name)
		if err := s.run(r); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n", s.name, err)
			r.failures = append(r.failures, fmt.Sprintf("%s: %v", s.name, err))
		}
		logf("== %s took %s", s.name, time.Since(t0).Round(time.Second))
	}
	r.machine.loadAfter = loadAvg()
	r.took = time.Since(start)
	if err := r.write(o.out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		trace.Stop()
		os.RemoveAll(bin)
		os.Exit(1)
	}
	logf("wrote %s in %s (GOMAXPROCS %d)", o.out, r.took.Round(time.Second), runtime.GOMAXPROCS(0))
}

// selected reports whether a workload runs under -workload.
func (o options) selected(name string) bool {
	return o.workload == "" || strings.Contains(name, o.workload)
}

func contains(list, name string) bool {
	for _, f := range splitComma(list) {
		if f == name {
			return true
		}
	}
	return false
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}
