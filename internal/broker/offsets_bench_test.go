package broker

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/vfs"
)

// Before and after __consumer_offsets became the group coordinator's
// store (appends and start-up), side by side in one run:
// "group-log" is the coordinator on the group log (the legacyGroupLog
// seam: what the previous version did, without its follower writes to
// the topic), "topic" the coordinator on __consumer_offsets.

func offsetsBenchBroker(b *testing.B, dir string, legacy bool) *Broker {
	return offsetsBenchBrokerFS(b, dir, legacy, vfs.Default)
}

func offsetsBenchBrokerFS(b *testing.B, dir string, legacy bool, fs vfs.FS) *Broker {
	b.Helper()
	cfg := config.Default()
	cfg.DataDir, cfg.Listen, cfg.HTTPListen = dir, "127.0.0.1:0", ""
	br, err := newBroker(Options{Config: cfg, FS: fs}, func(br *Broker) { br.knobs.legacyGroupLog = legacy })
	if err != nil {
		b.Fatal(err)
	}
	return br
}

// commitLatencies runs n OffsetCommits (one partition each) from 8
// committers of their own groups and returns the latencies.
func commitLatencies(b *testing.B, br *Broker, round, n int) []time.Duration {
	const committers = 8
	lat := make([]time.Duration, 0, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range committers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			group := fmt.Sprintf("bench-%d", c)
			for i := range n / committers {
				req := coordinator.CommitRequest{Group: group, Generation: -1, Version: 8,
					Offsets: map[coordinator.TopicPartition]coordinator.OffsetAndMetadata{
						{Topic: "t", Partition: int32(i % 4)}: {Offset: int64(round*n + i), LeaderEpoch: -1}}}
				start := time.Now()
				if _, err := br.groups.CommitOffsets(req); err != nil {
					b.Error(err)
					return
				}
				d := time.Since(start)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return lat
}

func quantile(ds []time.Duration, q float64) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

func medianDuration(xs []time.Duration) time.Duration { return quantile(xs, 0.5) }

// syncCountFS counts the fsyncs of the files it opens and, if d is set,
// records how long each took.
type syncCountFS struct {
	vfs.FS
	n *atomic.Int64
	d *syncDurations
}

type syncCountFile struct {
	vfs.File
	n *atomic.Int64
	d *syncDurations
}

// syncDurations collects fsync durations.
type syncDurations struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *syncDurations) add(d time.Duration) {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
}

// take returns the durations collected since the last take.
func (s *syncDurations) take() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	ds := s.ds
	s.ds = nil
	return ds
}

func (c syncCountFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncCountFile{f, c.n, c.d}, nil
}

func (f syncCountFile) Sync() error {
	f.n.Add(1)
	if f.d == nil {
		return f.File.Sync()
	}
	start := time.Now()
	err := f.File.Sync()
	f.d.add(time.Since(start))
	return err
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		return 0
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// BenchmarkOffsetCommitStores: OffsetCommit latency (fsynced before the
// answer) on the group log and on __consumer_offsets, in alternating
// rounds; p50 and p99 per round, medians of the rounds reported, and
// where the time goes: fsyncs per commit (8 committers of 8 groups share
// the group log's fsyncs; on the topic each group's partition is a file
// of its own), the fsyncs' p50 and p99 durations (what of a commit's latency
// the file system takes; the rest is the coordinator and the wait for a
// processor) and the process's CPU time per commit (the other broker is
// idle meanwhile).
func BenchmarkOffsetCommitStores(b *testing.B) {
	var logSyncs, topicSyncs atomic.Int64
	var logDur, topicDur syncDurations
	logB := offsetsBenchBrokerFS(b, b.TempDir(), true, syncCountFS{vfs.Default, &logSyncs, &logDur})
	topicB := offsetsBenchBrokerFS(b, b.TempDir(), false, syncCountFS{vfs.Default, &topicSyncs, &topicDur})
	defer logB.Close(context.Background())
	defer topicB.Close(context.Background())
	const rounds, perRound = 5, 800
	for range b.N {
		var p50 = map[string][]time.Duration{}
		var p99 = map[string][]time.Duration{}
		syncs, cpu := map[string]int64{}, map[string]time.Duration{}
		syncP50, syncP99 := map[string][]time.Duration{}, map[string][]time.Duration{}
		for r := range rounds {
			for _, c := range []struct {
				name  string
				br    *Broker
				syncs *atomic.Int64
				dur   *syncDurations
			}{{"group-log", logB, &logSyncs, &logDur}, {"topic", topicB, &topicSyncs, &topicDur}} {
				s0, c0 := c.syncs.Load(), cpuTime()
				c.dur.take()
				lat := commitLatencies(b, c.br, r, perRound)
				if ds := c.dur.take(); len(ds) > 0 {
					syncP50[c.name] = append(syncP50[c.name], quantile(ds, 0.5))
					syncP99[c.name] = append(syncP99[c.name], quantile(ds, 0.99))
				}
				syncs[c.name] += c.syncs.Load() - s0
				cpu[c.name] += cpuTime() - c0
				p50[c.name] = append(p50[c.name], quantile(lat, 0.5))
				p99[c.name] = append(p99[c.name], quantile(lat, 0.99))
			}
		}
		for _, name := range []string{"group-log", "topic"} {
			b.ReportMetric(float64(medianDuration(p50[name]).Microseconds()), name+"-p50-µs")
			b.ReportMetric(float64(medianDuration(p99[name]).Microseconds()), name+"-p99-µs")
			b.ReportMetric(float64(syncs[name])/(rounds*perRound), name+"-fsyncs/commit")
			b.ReportMetric(float64(cpu[name].Microseconds())/(rounds*perRound), name+"-cpu-µs/commit")
			if len(syncP50[name]) > 0 {
				b.ReportMetric(float64(medianDuration(syncP50[name]).Microseconds()), name+"-fsync-p50-µs")
				b.ReportMetric(float64(medianDuration(syncP99[name]).Microseconds()), name+"-fsync-p99-µs")
			}
		}
		b.Logf("p99 per round: group-log %v, topic %v; ratio of medians topic/group-log %.2f",
			p99["group-log"], p99["topic"], float64(medianDuration(p99["topic"]))/float64(medianDuration(p99["group-log"])))
	}
}

// BenchmarkStartupOffsets: the broker's start-up with 1 M committed
// offsets (1,000 groups of 1,000 partitions) on the group log and on
// __consumer_offsets, restarted alternately; medians reported.
func BenchmarkStartupOffsets(b *testing.B) {
	const groups, parts = 1000, 1000
	dirs := map[string]string{"group-log": b.TempDir(), "topic": b.TempDir()}
	for name, dir := range dirs {
		br := offsetsBenchBroker(b, dir, name == "group-log")
		for g := range groups {
			offs := make(map[coordinator.TopicPartition]coordinator.OffsetAndMetadata, parts)
			for p := range parts {
				offs[coordinator.TopicPartition{Topic: fmt.Sprintf("topic-%d", p/100), Partition: int32(p % 100)}] =
					coordinator.OffsetAndMetadata{Offset: int64(g + p), LeaderEpoch: -1, Metadata: "m"}
			}
			if err := br.groups.CommitOffsetsAdmin(fmt.Sprintf("group-%04d", g), offs); err != nil {
				b.Fatal(err)
			}
		}
		if err := br.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	for range b.N {
		took := map[string][]time.Duration{}
		for range 3 {
			for _, name := range []string{"group-log", "topic"} {
				start := time.Now()
				br := offsetsBenchBroker(b, dirs[name], name == "group-log")
				took[name] = append(took[name], time.Since(start))
				if n := len(br.groups.ListGroupOffsets("group-0999")); n != parts {
					b.Fatalf("%s: %d offsets of group-0999 after the start", name, n)
				}
				br.Close(context.Background())
			}
		}
		for _, name := range []string{"group-log", "topic"} {
			b.ReportMetric(float64(medianDuration(took[name]).Milliseconds()), name+"-start-ms")
		}
		b.Logf("start-up with 1M offsets: group-log %v, topic %v", took["group-log"], took["topic"])
	}
}
