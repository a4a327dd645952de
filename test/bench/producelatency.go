package main

import (
	"fmt"
	"strings"
)

// renderProduceLatency is the produce ack latency of every broker per row
// (medians of the runs' p50, p99 and p99.9), each minibroker's MB/s over
// min(store-nothing, disk) (the share of the reachable bound it gets), and for paced rows the
// p99.9 over the store-nothing broker's in the same runs (goal ≤ 2).
func (r *report) renderProduceLatency(p func(string, ...any)) {
	names := []string{"minibroker", "kfake", "store-nothing"}
	if r.opts.produceBase != "" {
		names = []string{"minibroker", compareName, "kfake", "store-nothing"}
	}
	disk := 0.0
	for _, l := range r.limits {
		if strings.HasPrefix(l.name, "sequential write") {
			disk = med(l.samples["limit"])
		}
	}
	bound := "min(store-nothing MB/s, the sequential disk write above)"
	if disk == 0 {
		bound = "store-nothing MB/s (no disk write measured in this run)"
	}
	p("\nProduce acknowledgement latency, medians of the runs' p50 / p99 / p99.9 (ms), and minibroker's MB/s over %s:\n\n| workload |", bound)
	for _, n := range names {
		p(" %s |", n)
	}
	p(" share minibroker")
	if r.opts.produceBase != "" {
		p(" / compare")
	}
	p(" | p99.9 minibroker / store-nothing (paced rows; goal ≤ 2) |\n|---|")
	for range names {
		p("---|")
	}
	p("---|---|\n")
	for _, rw := range r.produce {
		p("| %s |", rw.name)
		for _, n := range names {
			p(" %s / %s / %s |", fmtNum(med(rw.p50[n])), fmtNum(med(rw.p99[n])), fmtNum(med(rw.p999[n])))
		}
		bound := med(rw.mbps["store-nothing"])
		if disk > 0 {
			bound = min(bound, disk) // both MiB/s
		}
		share := func(n string) string {
			if bound <= 0 || len(rw.mbps[n]) == 0 {
				return "–"
			}
			return fmt.Sprintf("%.2f", med(rw.mbps[n])/bound)
		}
		p(" %s", share("minibroker"))
		if r.opts.produceBase != "" {
			p(" / %s", share(compareName))
		}
		tail := "–"
		if len(rw.paceRates) > 0 && med(rw.p999["store-nothing"]) > 0 {
			tail = fmt.Sprintf("**%.2f**", med(rw.p999["minibroker"])/med(rw.p999["store-nothing"]))
			if r.opts.produceBase != "" {
				tail += fmt.Sprintf(" (compare %.2f)", med(rw.p999[compareName])/med(rw.p999["store-nothing"]))
			}
			tail += fmt.Sprintf(", at %s records/s", fmtNum(med(rw.paceRates)))
		}
		p(" | %s |\n", tail)
	}
	if r.opts.produceBase != "" {
		p("\nThe compare column is `%s` (-produce-compare), a fourth broker in every run, interleaved with the others.\n", r.opts.produceBase)
	}
}
