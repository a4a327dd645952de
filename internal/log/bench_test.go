package log

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/batch"
)

// benchBatch returns one batch of about size bytes (records of 1 KiB, or
// one record for smaller sizes).
func benchBatch(size int) []byte {
	recs, value := 1, size-100
	if size >= 4096 {
		recs, value = size/1024, 1024-20
	}
	return testBatch{records: recs, valueSize: value, ts: time.Now().UnixMilli()}.build()
}

// BenchmarkAppend measures Append against a plain sequential write(2) of
// the same bytes to a file in the same directory, in the same run, and
// reports both and their ratio (the goal: ratio >= 0.7).
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		name := "1KiB"
		if size == 1<<20 {
			name = "1MiB"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			raw := benchBatch(size)
			h, _ := batch.ParseHeader(raw)
			per := int64(h.LastOffsetDelta) + 1
			l, err := Open(filepath.Join(dir, "log"), DefaultConfig(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			f, err := os.OpenFile(filepath.Join(dir, "plain"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			// Interleave the two so that both see the same page-cache and
			// writeback pressure.
			plain := append([]byte(nil), raw...)
			var logTime, fileTime time.Duration
			b.SetBytes(int64(len(raw)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				batch.SetBaseOffset(raw, int64(i)*per)
				t0 := time.Now()
				if _, err := l.Append(raw); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				batch.SetBaseOffset(plain, int64(i)*per)
				if _, err := f.Write(plain); err != nil {
					b.Fatal(err)
				}
				logTime += t1.Sub(t0)
				fileTime += time.Since(t1)
			}
			b.StopTimer()
			mb := float64(b.N) * float64(len(raw)) / 1e6
			b.ReportMetric(mb/logTime.Seconds(), "log-MB/s")
			b.ReportMetric(mb/fileTime.Seconds(), "file-MB/s")
			b.ReportMetric(fileTime.Seconds()/logTime.Seconds(), "ratio")
		})
	}
}

// BenchmarkGroupCommit: 16 concurrent appenders of 1 KiB batches, each
// waiting for its data to be fsynced (log.flush.interval.messages=1),
// against the same load under the default policy (no waiting), reported
// as appends/s and their ratio (the goal: >= 0.5).
func BenchmarkGroupCommit(b *testing.B) {
	const writers = 16
	raw := benchBatch(1 << 10)
	run := func(b *testing.B, durable bool) time.Duration {
		cfg := DefaultConfig()
		if durable {
			cfg.FlushIntervalMessages = 1
		}
		l, err := Open(b.TempDir(), cfg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		var appendMu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := append([]byte(nil), raw...)
				for i := w; i < b.N; i += writers {
					appendMu.Lock()
					batch.SetBaseOffset(buf, l.LogEndOffset())
					res, err := l.Append(buf)
					appendMu.Unlock()
					if err != nil {
						b.Error(err)
						return
					}
					if durable {
						if err := l.WaitFlushed(res.LogEndOffset); err != nil {
							b.Error(err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	durable := run(b, true)
	b.StopTimer()
	plain := run(b, false)
	fsync := fsyncLatency(b, raw)
	n := float64(b.N)
	b.ReportMetric(n/durable.Seconds(), "durable-appends/s")
	b.ReportMetric(n/plain.Seconds(), "default-appends/s")
	b.ReportMetric(plain.Seconds()/durable.Seconds(), "ratio")
	// With 16 appenders each waiting for its fsync, no design exceeds
	// 16 appends per fsync: this bound puts the ratio in perspective.
	b.ReportMetric(float64(fsync.Microseconds()), "fsync-µs")
	b.ReportMetric(n/durable.Seconds()/(writers/fsync.Seconds()), "of-bound")
}

// fsyncLatency is the median time of write(2)+fsync(2) of raw appended to
// a plain file.
func fsyncLatency(b *testing.B, raw []byte) time.Duration {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "plain"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var ds []time.Duration
	for range 200 {
		start := time.Now()
		f.Write(raw)
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// writeBenchLog fills dir with about size bytes of 1 MiB batches and
// closes the log cleanly.
func writeBenchLog(b *testing.B, dir string, size int64, batchSize int) {
	b.Helper()
	l, err := Open(dir, DefaultConfig(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	raw := benchBatch(batchSize)
	h, _ := batch.ParseHeader(raw)
	for written := int64(0); written < size; written += int64(len(raw)) {
		batch.SetBaseOffset(raw, l.LogEndOffset())
		if _, err := l.Append(raw); err != nil {
			b.Fatal(err)
		}
	}
	_ = h
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRecoveryScan: an unclean open validating (CRC32C) and
// re-indexing a 256 MiB log of 16 KiB batches from the page cache (the
// issue's goal: >= 500 MB/s).
func BenchmarkRecoveryScan(b *testing.B) {
	dir := b.TempDir()
	const size = 256 << 20
	writeBenchLog(b, dir, size, 16<<10)
	b.SetBytes(size)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		os.Remove(filepath.Join(dir, cleanShutdownName))
		os.Remove(filepath.Join(dir, recoveryPointName)) // scan it all
		b.StartTimer()
		l, err := Open(dir, DefaultConfig(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if l.Size() < size {
			b.Fatalf("recovered %d bytes", l.Size())
		}
		l.Close()
		b.StartTimer()
	}
}

// BenchmarkCleanOpen1GiB: opening a cleanly closed 1 GiB log (the issue's
// goal: < 100 ms).
func BenchmarkCleanOpen1GiB(b *testing.B) {
	dir := b.TempDir()
	writeBenchLog(b, dir, 1<<30, 1<<20)
	b.ResetTimer()
	for range b.N {
		benchOpenClean(b, dir)
	}
}

// BenchmarkRead: a 1 MiB fetch (ReadAppend into a reused buffer) at a
// random offset of a warm 256 MiB log of 16 KiB batches, every batch
// CRC-checked: as the first read after a clean open, which has verified
// nothing (the benchmark forgets what each read verified).
func BenchmarkRead(b *testing.B) { benchRead(b, false) }

// BenchmarkReadVerified is BenchmarkRead once every batch has been
// verified (read once) in this process: framing only, no CRC pass.
func BenchmarkReadVerified(b *testing.B) { benchRead(b, true) }

func benchRead(b *testing.B, verified bool) {
	dir := b.TempDir()
	writeBenchLog(b, dir, 256<<20, 16<<10)
	l, err := Open(dir, DefaultConfig(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	end := l.LogEndOffset()
	buf := make([]byte, 0, 2<<20)
	if verified {
		buf = verifyAll(b, l, buf)
	}
	b.SetBytes(1 << 20)
	b.ResetTimer()
	for i := range b.N {
		off := int64(uint64(i)*2654435761) % end
		buf, err = l.ReadAppend(buf[:0], off, end, 1<<20, true)
		if err != nil || len(buf) == 0 {
			b.Fatal(err)
		}
		if !verified { // timed: a lock and one store, next to a 1 MiB pread
			l.mu.Lock()
			for _, s := range l.segments {
				s.verified = unverified(s.size)
			}
			l.mu.Unlock()
		}
	}
}

// verifyAll reads the whole log once (into buf, returned grown), which
// verifies every batch.
func verifyAll(b *testing.B, l *Log, buf []byte) []byte {
	end := l.LogEndOffset()
	for off := int64(0); off < end; {
		var err error
		buf, err = l.ReadAppend(buf[:0], off, end, 1<<20, true)
		if err != nil || len(buf) == 0 {
			b.Fatal(err)
		}
		for p := 0; p < len(buf); { // next: after the last batch read
			h, _ := batch.ParseHeader(buf[p:])
			off, p = h.LastOffset()+1, p+h.Size()
		}
	}
	for _, s := range l.segments {
		if !s.verified.covers(0, s.size) {
			b.Fatalf("segment %d not verified: %+v", s.base, s.verified)
		}
	}
	return buf
}

// BenchmarkReadSpan is BenchmarkReadVerified for a read that leaves the
// batches in the file (a span for sendfile): the header walk and the
// descriptor duplicate, closed after each read; batches of 16 KiB (the
// walk reads a header per batch) and 64 KiB.
func BenchmarkReadSpan(b *testing.B) {
	for _, size := range []int{16 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("batch=%dKiB", size>>10), func(b *testing.B) {
			dir := b.TempDir()
			writeBenchLog(b, dir, 64<<20, size)
			l, err := Open(dir, DefaultConfig(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			end := l.LogEndOffset()
			buf := verifyAll(b, l, make([]byte, 0, 2<<20))
			get := func(n int) []byte { return buf[:0] }
			b.SetBytes(1 << 20)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				off := int64(uint64(i)*2654435761) % (end - end/16) // 1 MiB to read
				_, s, err := l.ReadSpan(get, off, end, 1<<20, true, 64<<10)
				if err != nil || s.File == nil {
					b.Fatalf("no span at %d: %v", off, err)
				}
				s.Close()
			}
		})
	}
}

// BenchmarkIdlePartitions opens 1,000 partitions holding one small
// segment each and reports heap and RSS growth per partition (the issue:
// 1,000 idle partitions under 200 MiB RSS).
func BenchmarkIdlePartitions(b *testing.B) {
	for range b.N {
		dir := b.TempDir()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		rssBefore := rssBytes()
		logs := make([]*Log, 0, 1000)
		raw := benchBatch(1 << 10)
		for i := range 1000 {
			l, err := Open(filepath.Join(dir, strconv.Itoa(i)), DefaultConfig(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Append(raw); err != nil {
				b.Fatal(err)
			}
			logs = append(logs, l)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1000, "heap-B/partition")
		b.ReportMetric(float64(rssBytes()-rssBefore)/(1<<20), "RSS-MiB/1000")
		for _, l := range logs {
			l.Close()
		}
	}
}

// rssBytes reads VmRSS from /proc/self/status (0 where unavailable).
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkNewPartition is what a new topic costs per partition before
// its first produce is acknowledged (acks=all without fsync per produce,
// the default): open a log in a new directory and append one batch.
func BenchmarkNewPartition(b *testing.B) {
	dir := b.TempDir()
	raw := testBatch{records: 1, valueSize: 100}.build()
	b.ResetTimer()
	for i := range b.N {
		l, err := Open(filepath.Join(dir, fmt.Sprintf("t-%d", i)), DefaultConfig(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Append(raw); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		l.Abandon()
		b.StartTimer()
	}
}

// BenchmarkCreate1000Logs opens 1,000 new logs (a CreateTopics of 1,000
// partitions, storage part) and reports the time per 1,000 and the file
// descriptors each new log holds (counted in /proc/self/fd: with three
// per log, 20,000 fds ran out at the 7th topic of 1,000 partitions).
func BenchmarkCreate1000Logs(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		fdsBefore := openFDs()
		start := time.Now()
		logs := make([]*Log, 0, 1000)
		for i := range 1000 {
			l, err := Open(filepath.Join(dir, strconv.Itoa(i)), DefaultConfig(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			logs = append(logs, l)
		}
		took := time.Since(start)
		b.ReportMetric(float64(took.Microseconds())/1000, "create-ms/1000")
		b.ReportMetric(float64(openFDs()-fdsBefore)/1000, "fds/log")
		for _, l := range logs {
			l.Close()
		}
	}
}

// openFDs counts this process's open file descriptors (-1 where
// /proc/self/fd is unavailable).
func openFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}

// BenchmarkCleanOpenMissingIndex: a clean open of a 64 MiB active segment
// (16 KiB batches) with its offset index file, and without it (lost, or
// never written: lazy index files), which rebuilds that segment's indexes
// by a recovery scan.
func BenchmarkCleanOpenMissingIndex(b *testing.B) {
	for _, missing := range []bool{false, true} {
		b.Run(fmt.Sprintf("missing=%v", missing), func(b *testing.B) {
			dir := b.TempDir()
			writeBenchLog(b, dir, 64<<20, 16<<10)
			for b.Loop() {
				if missing {
					b.StopTimer()
					os.Remove(segmentFileName(dir, 0, indexSuffix))
					b.StartTimer()
				}
				benchOpenClean(b, dir)
			}
		})
	}
}

// benchOpenClean times one Open of the log in dir; the check and the
// Close are off the clock.
func benchOpenClean(b *testing.B, dir string) {
	l, err := Open(dir, DefaultConfig(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if l.LogEndOffset() == 0 {
		b.Fatal("empty")
	}
	l.Close()
	b.StartTimer()
}
