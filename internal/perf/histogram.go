package perf

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// histogram counts latencies in microseconds in log-linear buckets: exact
// below 64 µs, then 32 buckets per power of two (≤ 3 % error). Record is
// safe for concurrent use and does not allocate.
type histogram struct {
	counts [64 + 58*32]atomic.Uint64
	total  atomic.Uint64
	sum    atomic.Uint64 // µs
	max    atomic.Uint64 // µs
}

func bucketOf(us uint64) int {
	if us < 64 {
		return int(us)
	}
	shift := bits.Len64(us) - 6 // keep the top 6 bits
	return 64 + (shift-1)*32 + int(us>>shift) - 32
}

// bucketValue is the middle of bucket i, in µs.
func bucketValue(i int) uint64 {
	if i < 64 {
		return uint64(i)
	}
	shift := (i-64)/32 + 1
	low := uint64((i-64)%32+32) << shift
	return low + (uint64(1)<<shift)/2
}

func (h *histogram) Record(d time.Duration) { h.RecordN(d, 1) }

// RecordN records n latencies of d.
func (h *histogram) RecordN(d time.Duration, n uint64) {
	us := uint64(max(d.Microseconds(), 0))
	h.counts[bucketOf(us)].Add(n)
	h.total.Add(n)
	h.sum.Add(us * n)
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			break
		}
	}
}

// Latency is a latency summary in milliseconds.
type Latency struct {
	// Count is how many latencies were measured: every record read
	// (consume), one record in latencySample sent (produce).
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

func (h *histogram) Summary() Latency {
	n := h.total.Load()
	if n == 0 {
		return Latency{}
	}
	l := Latency{Count: n, Mean: float64(h.sum.Load()) / float64(n) / 1000, Max: float64(h.max.Load()) / 1000}
	targets := []struct {
		q   float64
		out *float64
	}{{0.50, &l.P50}, {0.99, &l.P99}, {0.999, &l.P999}}
	var seen uint64
	ti := 0
	for i := range h.counts {
		seen += h.counts[i].Load()
		for ti < len(targets) && float64(seen) >= targets[ti].q*float64(n) {
			*targets[ti].out = min(float64(bucketValue(i))/1000, l.Max)
			ti++
		}
	}
	return l
}
