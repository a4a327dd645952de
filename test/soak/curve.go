package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// sample is one point of the curve: the broker's resident memory and
// runtime figures at one moment of one lifetime.
type sample struct {
	at         time.Time
	lifetime   int
	pid        int
	rssKiB     int64 // VmRSS from /proc/PID/status
	goroutines int64 // go_goroutines from /metrics
	heapInuse  int64 // go_memstats_heap_inuse_bytes
	openFDs    int64 // process_open_fds
}

// The growth rule. Within one lifetime the client population is constant
// (connections come and go with group churn, but their number is bounded),
// so after a warm-up the broker's figures must plateau.
const (
	warmUp            = 60 * time.Second // recovery, reconnects, caches filling: not judged
	minJudgedSamples  = 6                // a lifetime needs ≥ 6 post-warm-up samples to be judged
	edgeSamples       = 3                // start/end = median of the first/last 3 judged samples
	goroutineSlack    = 50               // allowed growth: max(50, 25 % of start)
	goroutineSlackPct = 25
	rssSlackKiB       = 32 << 10 // allowed growth: max(32 MiB, 50 % of start)
	rssSlackPct       = 50
	fdSlack           = 50 // allowed growth: max(50, 25 % of start)
	fdSlackPct        = 25
)

// curve collects samples and writes each to the CSV as it is taken.
type curve struct {
	began time.Time

	mu      sync.Mutex // guards the fields below
	samples []sample
	starts  map[int]time.Time // lifetime -> when it started serving
	out     *csv.Writer
	file    io.Closer
}

func newCurve(path string, began time.Time) (*curve, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	c := &curve{began: began, starts: map[int]time.Time{}, out: csv.NewWriter(f), file: f}
	c.out.Write([]string{"elapsed_s", "time_utc", "lifetime", "pid", "lifetime_uptime_s", "rss_kib", "goroutines", "heap_inuse_bytes", "open_fds"})
	c.out.Flush()
	return c, nil
}

func (c *curve) lifetimeStarted(lifetime int, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.starts[lifetime] = at
}

// run samples b every interval until ctx ends.
func (c *curve) run(ctx context.Context, b *broker, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s, ok := b.sample(ctx); ok {
			c.add(s)
		}
	}
}

func (c *curve) add(s sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.samples = append(c.samples, s)
	up := s.at.Sub(c.starts[s.lifetime])
	c.out.Write([]string{
		strconv.FormatFloat(s.at.Sub(c.began).Seconds(), 'f', 1, 64),
		s.at.UTC().Format(time.RFC3339),
		strconv.Itoa(s.lifetime), strconv.Itoa(s.pid),
		strconv.FormatFloat(up.Seconds(), 'f', 1, 64),
		strconv.FormatInt(s.rssKiB, 10), strconv.FormatInt(s.goroutines, 10),
		strconv.FormatInt(s.heapInuse, 10), strconv.FormatInt(s.openFDs, 10),
	})
	c.out.Flush()
}

func (c *curve) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.Flush()
	return c.file.Close()
}

func (c *curve) last() (sample, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.samples) == 0 {
		return sample{}, false
	}
	return c.samples[len(c.samples)-1], true
}

// lifetimeSummary is start/max/end of one lifetime's figures; start and end
// are over the judged (post-warm-up) samples when there are enough of them.
type lifetimeSummary struct {
	lifetime         int
	samples, judged  int
	uptime           time.Duration
	goStart, goMax   int64
	goEnd            int64
	rssStart, rssMax int64
	rssEnd           int64
	fdStart, fdMax   int64
	fdEnd            int64
	heapMax          int64
	judgedForGrowth  bool
}

// summarize groups the samples by lifetime and applies the growth rule.
func (c *curve) summarize() ([]lifetimeSummary, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	byLifetime := map[int][]sample{}
	var order []int
	for _, s := range c.samples {
		if _, ok := byLifetime[s.lifetime]; !ok {
			order = append(order, s.lifetime)
		}
		byLifetime[s.lifetime] = append(byLifetime[s.lifetime], s)
	}
	var sums []lifetimeSummary
	var violations []string
	for _, lt := range order {
		all := byLifetime[lt]
		var judged []sample
		for _, s := range all {
			if s.at.Sub(c.starts[lt]) >= warmUp {
				judged = append(judged, s)
			}
		}
		sum := lifetimeSummary{lifetime: lt, samples: len(all), judged: len(judged),
			uptime: all[len(all)-1].at.Sub(c.starts[lt])}
		edge := all
		if len(judged) >= minJudgedSamples {
			edge = judged
			sum.judgedForGrowth = true
		}
		pick := func(f func(sample) int64) (start, maxV, end int64) {
			for _, s := range all {
				maxV = max(maxV, f(s))
			}
			n := min(edgeSamples, len(edge))
			return median(edge[:n], f), maxV, median(edge[len(edge)-n:], f)
		}
		sum.goStart, sum.goMax, sum.goEnd = pick(func(s sample) int64 { return s.goroutines })
		sum.rssStart, sum.rssMax, sum.rssEnd = pick(func(s sample) int64 { return s.rssKiB })
		sum.fdStart, sum.fdMax, sum.fdEnd = pick(func(s sample) int64 { return s.openFDs })
		_, sum.heapMax, _ = pick(func(s sample) int64 { return s.heapInuse })
		if sum.judgedForGrowth {
			if bound := sum.goStart + max(goroutineSlack, sum.goStart*goroutineSlackPct/100); sum.goEnd > bound {
				violations = append(violations, fmt.Sprintf("lifetime %d: goroutines grew %d -> %d (bound %d)", lt, sum.goStart, sum.goEnd, bound))
			}
			if bound := sum.rssStart + max(rssSlackKiB, sum.rssStart*rssSlackPct/100); sum.rssEnd > bound {
				violations = append(violations, fmt.Sprintf("lifetime %d: RSS grew %d -> %d KiB (bound %d)", lt, sum.rssStart, sum.rssEnd, bound))
			}
			if sum.fdStart >= 0 {
				if bound := sum.fdStart + max(fdSlack, sum.fdStart*fdSlackPct/100); sum.fdEnd > bound {
					violations = append(violations, fmt.Sprintf("lifetime %d: open fds grew %d -> %d (bound %d)", lt, sum.fdStart, sum.fdEnd, bound))
				}
			}
		}
		sums = append(sums, sum)
	}
	// Across lifetimes: what a fresh broker starts with must not creep up
	// (goroutines or fds carried over through on-disk state).
	var firstJudged *lifetimeSummary
	for i := range sums {
		s := &sums[i]
		if !s.judgedForGrowth {
			continue
		}
		if firstJudged == nil {
			firstJudged = s
			continue
		}
		if bound := firstJudged.goStart + max(goroutineSlack, firstJudged.goStart/2); s.goStart > bound {
			violations = append(violations, fmt.Sprintf("lifetime %d starts with %d goroutines, lifetime %d started with %d (bound %d)",
				s.lifetime, s.goStart, firstJudged.lifetime, firstJudged.goStart, bound))
		}
	}
	return sums, violations
}

func median(ss []sample, f func(sample) int64) int64 {
	if len(ss) == 0 {
		return 0
	}
	v := make([]int64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	slices.Sort(v)
	return v[len(v)/2]
}
