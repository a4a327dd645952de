package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// runCompactionBench runs the log cleaner's benchmarks (docs/COMPACTION.md):
// the cleaner's throughput against the disk's sustained write, -runs
// times in one go test (internal/log/clean_bench_test.go); the cleaner's
// RSS with 10 M distinct keys against 1 M (clean_rss_bench_test.go); and
// produce p99 on another topic while the cleaner runs against idle
// (test/integration/compaction/compaction_bench_test.go).
func runCompactionBench(r *report) error {
	t0 := time.Now()
	var errs []string
	for _, b := range []struct {
		args []string
	}{
		{[]string{"test", "-run", "^$", "-bench", "CleanerVsDiskWrite", "-benchtime", "1x", "-count", strconv.Itoa(r.opts.runs), "-timeout", "20m", "./internal/log"}},
		{[]string{"test", "-run", "^$", "-bench", "CleanerRSS", "-benchtime", "1x", "-count", "1", "-timeout", "30m", "./internal/log"}},
		{[]string{"test", "-run", "^$", "-bench", "CompactionProduceP99", "-benchtime", "1x", "-count", "1", "-timeout", "20m", "./test/integration/compaction"}},
	} {
		cmdline, lines, err := runGoTestBench(nil, b.args...)
		r.compactionCmds = append(r.compactionCmds, cmdline)
		r.compaction = append(r.compaction, lines...)
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	r.compactionTook = time.Since(t0)
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// renderCompaction writes the section: the medians of the cleaner's
// runs, the RSS and the p99 rows as go test reported them.
func (r *report) renderCompaction(p func(string, ...any)) {
	if len(r.compactionCmds) == 0 {
		return
	}
	p("## Log compaction\n\n`%s` (took %s; docs/COMPACTION.md): the cleaner's throughput (MB of log read and cleaned a second, "+
		"over the passes a 2 MiB offset map needs for 100,000 keys) beside the disk's sustained write of the same bytes in the "+
		"same run (goal: clean/disk at least 0.5), and its CPU per MB read, which the machine's load moves less; the cleaner's "+
		"RSS growth while cleaning 10 M distinct keys and a tenth of them with a 128 MiB offset map (bounded by the map, not "+
		"the keys); produce p99 (acks=all, one 1 KiB record at a time) on another topic while a pass runs, against idle, "+
		"medians of rounds (goal: at most 2×).\n\n",
		strings.Join(r.compactionCmds, "`, `"), r.compactionTook.Round(time.Second))
	var clean, disk, ratio, cpu []float64
	for _, l := range r.compaction {
		if l.name == "BenchmarkCleanerVsDiskWrite" {
			clean, disk = append(clean, l.metrics["clean-MB/s"]), append(disk, l.metrics["disk-write-MB/s"])
			ratio, cpu = append(ratio, l.metrics["clean/disk"]), append(cpu, l.metrics["clean-cpu-ms/MB"])
		}
	}
	p("| benchmark | metrics |\n|---|---|\n")
	if len(clean) > 0 {
		p("| cleaner against disk write (median of %d) | clean %s MB/s, disk %s MB/s, **clean/disk %.2f**, %s CPU ms/MB |\n",
			len(clean), fmtNum(med(clean)), fmtNum(med(disk)), med(ratio), fmtNum(med(cpu)))
	}
	for _, l := range r.compaction {
		if l.name == "BenchmarkCleanerVsDiskWrite" {
			continue
		}
		var ms []string
		for _, unit := range sortedKeys(l.metrics) {
			ms = append(ms, fmt.Sprintf("%s %s", fmtNum(l.metrics[unit]), unit))
		}
		p("| %s | %s |\n", l.name, strings.Join(ms, ", "))
	}
	p("\n")
}
