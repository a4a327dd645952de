package log

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/batch"
)

// BenchmarkCleanerVsDiskWrite measures, side by side in one run on the
// same disk (the test's temp dir), the cleaner's throughput (MB of dirty
// log read and cleaned a second) and the disk's sustained write (the
// same bytes written and fsynced), and the heap the cleaner holds beyond
// its offset map while cleaning keys that do not fit in the map.
//
//	go test ./internal/log -run '^$' -bench CleanerVsDiskWrite -benchtime 1x
func BenchmarkCleanerVsDiskWrite(b *testing.B) {
	const (
		batches  = 60000
		perBatch = 10
		keys     = 100000 // distinct keys: more than the 2 MiB map holds (≈ 78,000)
	)
	for range b.N {
		dir := b.TempDir()
		cfg := DefaultConfig()
		cfg.SegmentBytes = 16 << 20
		cfg.Compact, cfg.NoDelete = true, true
		l, err := Open(dir, cfg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		val := string(make([]byte, 100))
		for i := range batches {
			recs := make([]keyed, perBatch)
			for j := range recs {
				recs[j] = keyed{fmt.Sprintf("key-%07d", (i*perBatch+j)%keys), val}
			}
			if _, err := l.Append(keyedBatchAt(l.LogEndOffset(), int64(i), batch.CodecNone, recs...)); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
		size := l.Size()
		// The disk: the same number of bytes written in 1 MiB writes and
		// fsynced, as the cleaner writes its segments.
		f, err := os.Create(filepath.Join(dir, "disk-probe"))
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		start := time.Now()
		for n := int64(0); n < size; n += int64(len(buf)) {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		diskMBs := float64(size) / (1 << 20) / time.Since(start).Seconds()
		f.Close()
		os.Remove(f.Name())

		c := NewCleaner(2<<20, 0.9, nil)
		runtime.GC()
		var before, peak runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(50 * time.Millisecond):
				}
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peak.HeapInuse {
					peak = m
				}
			}
		}()
		cpu0 := processCPU()
		start = time.Now()
		var read int64
		for {
			st, err := c.Clean(l, CleanRequest{Now: time.Now(), FirstUnstable: l.LogEndOffset(), Force: read == 0})
			if err != nil {
				b.Fatal(err)
			}
			if !st.Cleaned {
				break
			}
			read += st.BytesRead
		}
		elapsed := time.Since(start)
		cpu := processCPU() - cpu0
		close(done)
		cleanMBs := float64(read) / (1 << 20) / elapsed.Seconds()
		b.ReportMetric(cleanMBs, "clean-MB/s")
		b.ReportMetric(diskMBs, "disk-write-MB/s")
		b.ReportMetric(cleanMBs/diskMBs, "clean/disk")
		// CPU time per MB read: what the cleaner costs, which the
		// machine's load changes less than its MB/s.
		b.ReportMetric(float64(cpu.Milliseconds())/(float64(read)/(1<<20)), "clean-cpu-ms/MB")
		b.ReportMetric(float64(size)/(1<<20)/elapsed.Seconds(), "log-MB/s")
		b.ReportMetric(float64(peak.HeapInuse-min(before.HeapInuse, peak.HeapInuse))/(1<<20), "heap-growth-MiB")
		b.Logf("log %.1f MiB, %d keys; cleaner read %.1f MiB in %v (%.1f MB/s, CPU %v); disk wrote %.1f MB/s; heap growth %.1f MiB (map 2 MiB)",
			float64(size)/(1<<20), keys, float64(read)/(1<<20), elapsed, cleanMBs, cpu, diskMBs,
			float64(peak.HeapInuse-min(before.HeapInuse, peak.HeapInuse))/(1<<20))
		l.Close()
	}
}
