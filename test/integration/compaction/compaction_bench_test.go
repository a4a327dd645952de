package compaction

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/minibrokertest"
)

// BenchmarkCompactionProduceP99 (make bench, section compaction; not part
// of make test): the p99 latency of acknowledged produces (acks=all, one
// record at a time, 1 KiB) to a topic while the log cleaner cleans
// another, against the same produces with the cleaner idle, in the same
// run. Each round fills a fresh compacted topic with
// MINIBROKER_BENCH_COMPACT_MB (48) of keyed records while
// min.compaction.lag.ms keeps the cleaner off it, measures the idle p99,
// then sets min.compaction.lag.ms=0 (IncrementalAlterConfigs wakes the
// cleaner) and measures while the pass runs: from its first .cleaned
// file to its checkpoint moving. Medians over
// MINIBROKER_BENCH_COMPACT_ROUNDS (3). Goal: cleaning/idle <= 2.
func BenchmarkCompactionProduceP99(b *testing.B) {
	mb := itest.EnvInt("MINIBROKER_BENCH_COMPACT_MB", 48)
	rounds := itest.EnvInt("MINIBROKER_BENCH_COMPACT_ROUNDS", 3)
	for range b.N {
		c := minibrokertest.Start(b, minibrokertest.Set("log.cleaner.backoff.ms", "20"),
			minibrokertest.Set("log.cleaner.dedupe.buffer.size", "33554432"), minibrokertest.Topic("latency", 1))
		ctx := context.Background()
		prod, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.DefaultProduceTopic("latency"))
		if err != nil {
			b.Fatal(err)
		}
		defer prod.Close()
		adm := kadm.NewClient(prod)
		value := []byte(strings.Repeat("v", 1024))
		// p99 of sequential acknowledged produces for d, or until stop.
		measure := func(d time.Duration, stop func() bool) (p99 float64, n int) {
			var lat []float64
			for end := time.Now().Add(d); time.Now().Before(end) && (stop == nil || !stop()); {
				t0 := time.Now()
				if err := prod.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
			}
			slices.Sort(lat)
			if len(lat) == 0 {
				return 0, 0
			}
			return lat[len(lat)*99/100], len(lat)
		}
		var idle, cleaning, ratios, cleanSecs []float64
		for round := range rounds {
			topic := fmt.Sprintf("busy-%d", round)
			res, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": itest.Sp("compact"),
				"segment.bytes": itest.Sp("4194304"), "min.cleanable.dirty.ratio": itest.Sp("0.01"),
				"min.compaction.lag.ms": itest.Sp("86400000")}, topic)
			if err != nil || res.Err != nil {
				b.Fatalf("create %s: %v %v", topic, err, res.Err)
			}
			fill, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
				kgo.ProducerBatchCompression(kgo.NoCompression())) // MB of log, not of snappy
			if err != nil {
				b.Fatal(err)
			}
			for i := range mb * 1024 {
				fill.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("key-%05d", i%20000)), Value: value}, nil)
			}
			if err := fill.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			fill.Close()
			p := mustPartitionB(b, c, topic)
			// The checkpoint file, not CleanerCheckpoint, which waits for
			// the pass.
			cp0 := checkpointFile(p.Dir())
			passDone := func() bool { return checkpointFile(p.Dir()) != cp0 }

			// Idle first, then cleaning: the pass has to be under way
			// when the window opens, and is timed to its end.
			pi, ni := measure(3*time.Second, nil)
			alter := kadm.AlterConfig{Op: kadm.SetConfig, Name: "min.compaction.lag.ms", Value: itest.Sp("0")}
			if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{alter}, topic); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			for !passDone() && len(cleanerFiles(p.Dir())) == 0 {
				if time.Since(t0) > time.Minute {
					ca, err := p.Cleanable()
					b.Fatalf("the cleaner did not start: %+v %v %+v files %v", ca, err, p.Offsets(), segmentFilesB(p.Dir()))
				}
				time.Sleep(time.Millisecond)
			}
			pc, nc := measure(10*time.Minute, passDone)
			for !passDone() {
				time.Sleep(10 * time.Millisecond)
			}
			took := time.Since(t0)
			if nc < 50 {
				b.Logf("round %d: only %d produces while the pass ran (%v): skipped", round, nc, took)
				continue
			}
			idle, cleaning = append(idle, pi), append(cleaning, pc)
			ratios, cleanSecs = append(ratios, pc/pi), append(cleanSecs, took.Seconds())
			b.Logf("round %d: idle p99 %.2f ms (%d produces), cleaning p99 %.2f ms (%d produces, pass %v)",
				round, pi, ni, pc, nc, took.Round(time.Millisecond))
		}
		if len(ratios) == 0 {
			b.Fatal("no round measured")
		}
		b.ReportMetric(itest.Median(idle), "idle-p99-ms")
		b.ReportMetric(itest.Median(cleaning), "cleaning-p99-ms")
		b.ReportMetric(itest.Median(ratios), "cleaning/idle")
		b.ReportMetric(itest.Median(cleanSecs), "pass-s")
		b.ReportMetric(float64(len(ratios)), "rounds")
	}
}

func mustPartitionB(b *testing.B, n itest.Node, topic string) *partition.Partition {
	p, ok := n.Broker().Partition(topic, 0)
	if !ok {
		b.Fatalf("no %s-0", topic)
	}
	return p
}

func segmentFilesB(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// checkpointFile is the offset in a partition directory's
// cleaner-offset-checkpoint ("0" then the offset; -1 if none).
func checkpointFile(dir string) int64 {
	data, _ := os.ReadFile(filepath.Join(dir, "cleaner-offset-checkpoint"))
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return -1
	}
	off, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return -1
	}
	return off
}
