package main

import (
	"fmt"
	"strings"
)

// renderProduceLatency is the produce ack latency of every broker per row
// (medians of the runs' p50, p99 and p99.9), each minibroker's MB/s over
// min(store-nothing, disk) (the share of the reachable bound it gets;
// disk: the row's own sustained disk write where it measured one, else
// the sequential write of the limits), and for paced rows the p99.9 over
// the store-nothing broker's in the same runs (goal ≤ 2) and the pace
// over the disk's sustained write.
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
	bound := "min(store-nothing MB/s, disk MB/s: the row's sustained disk write where it has one, else the sequential disk write above)"
	if disk == 0 {
		bound = "min(store-nothing MB/s, the row's sustained disk write where it has one)"
	}
	p("\nProduce acknowledgement latency, medians of the runs' p50 / p99 / p99.9 (ms), and minibroker's MB/s over %s:\n\n| workload |", bound)
	for _, n := range names {
		p(" %s |", n)
	}
	p(" share minibroker")
	if r.opts.produceBase != "" {
		p(" / compare")
	}
	p(" | disk sustained write MB/s | p99.9 minibroker / store-nothing (paced rows; goal ≤ 2) |\n|---|")
	for range names {
		p("---|")
	}
	p("---|---|---|\n")
	for _, rw := range r.produce {
		p("| %s |", rw.name)
		for _, n := range names {
			p(" %s / %s / %s |", fmtNum(med(rw.p50[n])), fmtNum(med(rw.p99[n])), fmtNum(med(rw.p999[n])))
		}
		bound := med(rw.mbps["store-nothing"])
		rowDisk := disk
		if d := rw.mbps[diskName]; len(d) > 0 {
			rowDisk = med(d)
		}
		if rowDisk > 0 {
			bound = min(bound, rowDisk) // both MiB/s
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
		diskCell := "–"
		if d := rw.mbps[diskName]; len(d) > 0 {
			diskCell = fmtNum(med(d))
		}
		tail := "–"
		if len(rw.paceRates) > 0 && med(rw.p999["store-nothing"]) > 0 {
			tail = fmt.Sprintf("**%.2f**", med(rw.p999["minibroker"])/med(rw.p999["store-nothing"]))
			if r.opts.produceBase != "" {
				tail += fmt.Sprintf(" (compare %.2f)", med(rw.p999[compareName])/med(rw.p999["store-nothing"]))
			}
			tail += fmt.Sprintf(", at %s records/s", fmtNum(med(rw.paceRates)))
			if d := rw.mbps[diskName]; len(d) > 0 && len(rw.paceRates) == len(d) {
				ratios := make([]float64, len(d))
				for k := range d {
					ratios[k] = rw.paceRates[k] * float64(rw.size) / (1 << 20) / d[k]
				}
				tail += fmt.Sprintf(" (pace / disk sustained write: %.2f)", med(ratios))
			}
		}
		p(" | %s | %s |\n", diskCell, tail)
	}
	if r.opts.produceBase != "" {
		p("\nThe compare column is `%s` (-produce-compare), a fourth broker in every run, interleaved with the others.\n", r.opts.produceBase)
	}
}
