package log

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/batch"
)

// vmRSS is the process's resident set (VmRSS, bytes) from /proc; 0
// where there is no /proc.
func vmRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkCleanerRSS: the cleaner's resident memory does not grow with
// the number of keys, only with its offset map (log.cleaner.dedupe.buffer.size).
// A log of MINIBROKER_BENCH_CLEAN_KEYS distinct keys (default 10,000,000;
// 1,000-record batches of a 9-byte key and an 8-byte value, segments of
// up to 4 MiB) is cleaned up to its active segment with a 128 MiB map (Kafka's default buffer) and, in the same
// run, a log of a tenth of the keys; the process's RSS is sampled every
// 20 ms while cleaning; its peak and its growth over the RSS before the
// first pass are reported beside the map's size.
//
//	go test ./internal/log -run '^$' -bench CleanerRSS -benchtime 1x
func BenchmarkCleanerRSS(b *testing.B) {
	keys := 10_000_000
	if v, err := strconv.Atoi(os.Getenv("MINIBROKER_BENCH_CLEAN_KEYS")); err == nil && v > 0 {
		keys = v
	}
	const mapBytes = 128 << 20
	for range b.N {
		for _, n := range []int{keys / 10, keys} {
			before, peak, logBytes, passes, elapsed := cleanerRSSRun(b, n, mapBytes)
			b.ReportMetric(float64(peak-before)/(1<<20), fmt.Sprintf("rss-growth-MiB/%dkeys", n))
			b.ReportMetric(float64(peak)/(1<<20), fmt.Sprintf("rss-peak-MiB/%dkeys", n))
			b.Logf("%d keys, log %.0f MiB: RSS %.1f MiB before the first pass, at most %.1f MiB over %d passes in %v (offset map %d MiB)",
				n, float64(logBytes)/(1<<20), float64(before)/(1<<20), float64(peak)/(1<<20), passes, elapsed.Round(time.Millisecond), mapBytes>>20)
		}
		b.ReportMetric(mapBytes/(1<<20), "map-MiB")
	}
}

func cleanerRSSRun(b *testing.B, keys int, mapBytes int64) (before, peak, logBytes int64, passes int, elapsed time.Duration) {
	dir := b.TempDir()
	cfg := DefaultConfig()
	// The active segment, never cleaned, holds few keys: an eighth of
	// the log (about 25 bytes a record), at most 4 MiB.
	cfg.SegmentBytes = min(4<<20, max(1<<20, int64(keys)*25/8))
	cfg.Compact, cfg.NoDelete = true, true
	l, err := Open(dir, cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const perBatch = 1000
	recs := make([]keyed, perBatch)
	for i := 0; i < keys; i += perBatch {
		for j := range recs {
			recs[j] = keyed{fmt.Sprintf("k%08d", i+j), "value-01"}
		}
		if _, err := l.Append(keyedBatchAt(l.LogEndOffset(), int64(i), batch.CodecNone, recs...)); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	logBytes = l.Size()
	c := NewCleaner(mapBytes, 0.9, nil)
	runtime.GC()
	debug.FreeOSMemory()
	before = vmRSS()
	peak = before
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			peak = max(peak, vmRSS())
		}
	}()
	start := time.Now()
	for {
		st, err := c.Clean(l, CleanRequest{Now: time.Now(), FirstUnstable: l.LogEndOffset(), Force: passes == 0})
		if err != nil {
			b.Fatal(err)
		}
		if !st.Cleaned {
			break
		}
		passes++
	}
	elapsed = time.Since(start)
	close(done)
	<-sampled
	peak = max(peak, vmRSS())
	return before, peak, logBytes, passes, elapsed
}
