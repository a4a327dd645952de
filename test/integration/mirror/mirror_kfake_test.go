package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/minibrokertest"
)

// records reads every record of a topic from a cluster, per partition.
func recordsByPartition(t *testing.T, addrs []string, topic string, total int) map[int32][]*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.MetadataMinAge(50*time.Millisecond), kgo.MetadataMaxAge(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[int32][]*kgo.Record{}
	n := 0
	for n < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", n, total)
		}
		fs.EachRecord(func(r *kgo.Record) { out[r.Partition] = append(out[r.Partition], r); n++ })
	}
	return out
}

// TestMirrorFromKfakeCluster mirrors a foreign 3-broker cluster (franz-go's
// kfake), follows a partition leader that moves between its brokers, and
// fails over with a barrier naming the source cluster.
func TestMirrorFromKfakeCluster(t *testing.T) {
	t.Parallel()
	src, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "orders"), kfake.ClusterID("kfake-src"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	prod := itest.NewClient(t, src.ListenAddrs()[0], kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produce := func(prefix string, n int) {
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Key: []byte(prefix), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))})
		}
		if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("first", 300)

	b := minibrokertest.Start(t)
	m := b.Mirror("from-kfake", src.ListenAddrs()...).Start("orders")
	m.WaitCaughtUp(20 * time.Second)

	old := src.LeaderFor("orders", 0)
	if err := src.MoveTopicPartition("orders", 0, (old+1)%3); err != nil {
		t.Fatal(err)
	}
	produce("second", 300)
	m.WaitCaughtUp(20 * time.Second)

	want := recordsByPartition(t, src.ListenAddrs(), "orders", 600)
	got := recordsByPartition(t, []string{b.Addr()}, "orders", 600)
	for p := int32(0); p < 3; p++ {
		if len(got[p]) != len(want[p]) {
			t.Fatalf("partition %d: %d records mirrored, source has %d", p, len(got[p]), len(want[p]))
		}
		for i := range want[p] {
			w, g := want[p][i], got[p][i]
			if w.Offset != g.Offset || string(w.Value) != string(g.Value) || w.ProducerID != g.ProducerID || w.Timestamp != g.Timestamp {
				t.Fatalf("partition %d record %d: mirrored %d/%s, source %d/%s", p, i, g.Offset, g.Value, w.Offset, w.Value)
			}
		}
	}

	m.Stop()
	for p := int32(0); p < 3; p++ {
		hs, bs := itest.BatchesOf(t, b, "orders", p, 0, itest.LogEnd(b, "orders", p))
		last := len(hs) - 1
		if !batch.IsBarrier(&hs[last], bs[last]) {
			t.Fatalf("partition %d: no barrier at the end", p)
		}
		c, _ := batch.ReadControl(bs[last])
		var v batch.MirrorPidResetRecord
		if err := v.ReadFrom(c.Value); err != nil || v.SourceClusterID != "kfake-src" {
			t.Fatalf("barrier value %+v %v", v, err)
		}
	}
}
