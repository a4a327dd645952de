package integration

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/broker"
	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// rawLog returns a partition's log bytes in [from, to).
func rawLog(t *testing.T, c node, topic string, p int32, from, to int64) []byte {
	t.Helper()
	part, ok := c.Broker().Partition(topic, p)
	if !ok {
		t.Fatalf("no partition %s-%d", topic, p)
	}
	var out []byte
	for from < to {
		raw, err := part.Log().ReadUpTo(from, to, 1<<20, true)
		if err != nil {
			t.Fatalf("read %s-%d at %d: %v", topic, p, from, err)
		}
		if len(raw) == 0 {
			break
		}
		it := batch.NewIter(raw)
		for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
			out = append(out, b...)
			from = h.LastOffset() + 1
		}
	}
	return out
}

// batchesOf lists the headers of a partition's batches in [from, to).
func batchesOf(t *testing.T, c node, topic string, p int32, from, to int64) ([]batch.Header, [][]byte) {
	t.Helper()
	raw := rawLog(t, c, topic, p, from, to)
	var hs []batch.Header
	var bs [][]byte
	it := batch.NewIter(raw)
	for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
		hs = append(hs, h)
		bs = append(bs, b)
	}
	return hs, bs
}

// barriers returns the offsets of MIRROR_PID_RESET batches in a partition.
func barriers(t *testing.T, c node, topic string, p int32) []int64 {
	t.Helper()
	part, _ := c.Broker().Partition(topic, p)
	hs, bs := batchesOf(t, c, topic, p, part.Offsets().LogStart, part.Offsets().LogEnd)
	var out []int64
	for i := range hs {
		if batch.IsBarrier(&hs[i], bs[i]) {
			out = append(out, hs[i].BaseOffset)
		}
	}
	return out
}

// assertIdentical checks two clusters hold the same bytes for a partition
// in [0, upTo).
func assertIdentical(t *testing.T, a, b node, topic string, p int32, upTo int64) {
	t.Helper()
	ra, rb := rawLog(t, a, topic, p, 0, upTo), rawLog(t, b, topic, p, 0, upTo)
	if len(ra) == 0 {
		t.Fatalf("%s-%d: nothing to compare below %d", topic, p, upTo)
	}
	if !bytes.Equal(ra, rb) {
		t.Fatalf("%s-%d: logs differ below offset %d (%d vs %d bytes)", topic, p, upTo, len(ra), len(rb))
	}
}

// produceSerially produces one record per ProduceSync call (one batch per
// record), so batch shapes are the same on every run.
func produceSerially(t *testing.T, cl *kgo.Client, topic string, p int32, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatalf("produce %s-%d: %v", prefix, i, err)
		}
	}
}

// idempotentProducer is a kgo producer writing to explicit partitions.
func idempotentProducer(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, addr, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
}

// readValues reads a partition (read_committed) from offset to its end and
// returns the record values. Control batches (markers, barriers) are
// invisible to the consumer, so the end is reached when the high
// watermark has been seen and a further poll stays empty.
func readValues(t *testing.T, addr, topic string, p int32, from int64) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
	adm := newClient(t, addr)
	end := endOffset(t, adm, topic, p)
	var out []string
	deadline := time.Now().Add(20 * time.Second)
	sawEnd := false
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)); n++ })
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.HighWatermark >= end {
				sawEnd = true
			}
		})
		if sawEnd && n == 0 {
			return out
		}
	}
	t.Fatalf("reading %s-%d from %d: got %d values, never reached end %d", topic, p, from, len(out), end)
	return nil
}

// startNoBarrier starts a cluster whose mirrors skip the barrier: the
// negative control, wired through broker options no user can reach.
func startNoBarrier(t *testing.T) *rawCluster {
	t.Helper()
	return startRaw(t, t.TempDir(), mirror.Options{SkipBarrier: true})
}

// rawCluster is a broker started with internal options (test seams that
// minibrokertest does not offer its users).
type rawCluster struct {
	t   *testing.T
	cfg config.Config
	b   *broker.Broker
}

func startRaw(t *testing.T, dir string, mopts mirror.Options) *rawCluster {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = dir
	cfg.Listen = "127.0.0.1:0"
	cfg.HTTPListen = ""
	cfg.Kafka["group.initial.rebalance.delay.ms"] = "0" // as minibrokertest: groups form at once
	r := &rawCluster{t: t, cfg: cfg}
	r.start(mopts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.b.Close(ctx)
	})
	return r
}

func (r *rawCluster) start(mopts mirror.Options) {
	r.t.Helper()
	b, err := broker.New(broker.Options{Config: r.cfg, Logger: zap.NewNop(), Mirror: mopts})
	if err != nil {
		r.t.Fatal(err)
	}
	b.Serve()
	r.b = b
	r.cfg.Listen = b.Addr() // restarts keep the port
}

// crashAndRestart kills the broker (no clean shutdown) and starts it again
// on the same data and port with mopts.
func (r *rawCluster) crashAndRestart(mopts mirror.Options) {
	r.t.Helper()
	r.b.Kill()
	r.start(mopts)
}

func (r *rawCluster) Broker() *broker.Broker { return r.b }
func (r *rawCluster) Addr() string           { return r.b.Addr() }

// node is a running broker under test: a minibrokertest.Cluster or a
// rawCluster.
type node interface {
	Broker() *broker.Broker
	Addr() string
}

var _ node = (*minibrokertest.Cluster)(nil)

// endOffset is a partition's high watermark.
func endOffset(t *testing.T, cl *kgo.Client, topic string, p int32) int64 {
	t.Helper()
	offs, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, p)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s-%d: %v", topic, p, o.Err)
	}
	return o.Offset
}

// mirrorOn returns the broker's mirror manager.
func mirrorOn(n node) *mirror.Manager { return n.Broker().Mirrors() }
