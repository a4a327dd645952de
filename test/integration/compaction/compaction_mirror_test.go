package compaction

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorCompactedFailoverFailback: a compacted topic on A, cleaned on
// A (the source log has gaps), mirrored to B whose own cleaner runs while
// it mirrors; B fails over and takes writes, A writes a late record; A
// mirrors B back (the divergence search by leader epoch on cleaned logs
// cuts A's late record) and fails back. At every step a consumer from
// offset 0 reads the latest value of every key, and after the failback
// the producer that draws B's producer id on A loses nothing.
func TestMirrorCompactedFailoverFailback(t *testing.T) {
	t.Parallel()
	cfgs := map[string]string{"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"}
	fast := minibrokertest.Set("log.cleaner.backoff.ms", "50")
	a := minibrokertest.Start(t, fast, minibrokertest.TopicWithConfigs("kv", 1, cfgs))
	b := minibrokertest.Start(t, fast)
	want := map[string]string{}
	produce := func(n itest.Node, prefix string, count int) {
		t.Helper()
		cl := itest.IdempotentProducer(t, n.Addr())
		for i := range count {
			k, v := fmt.Sprintf("k%d", i%10), fmt.Sprintf("%s-%d", prefix, i)
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "kv", Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		cl.Close()
	}
	latest := func(n itest.Node) map[string]string {
		t.Helper()
		cl := itest.NewClient(t, n.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kv": {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
		end := itest.EndOffset(t, itest.NewClient(t, n.Addr()), "kv", 0)
		got := map[string]string{}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("reading kv from %s: %v", n.Addr(), ctx.Err())
			}
			done := false
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Key)] = string(r.Value) })
			fs.EachPartition(func(p kgo.FetchTopicPartition) {
				if n := len(p.Records); n > 0 && p.Records[n-1].Offset >= end-1 {
					done = true
				}
			})
			if done {
				return got
			}
		}
	}
	cleaned := func(n itest.Node, what string) {
		t.Helper()
		p := itest.MustPartition(t, n, "kv", 0)
		itest.WaitFor(t, what, func() bool { cp, _ := p.CleanerCheckpoint(); return cp > 0 })
	}
	check := func(n itest.Node, what string) {
		t.Helper()
		if got := latest(n); !maps.Equal(got, want) {
			t.Fatalf("%s: latest values\n  %v\nwant\n  %v", what, got, want)
		}
	}

	produce(a, "a", 200)
	cleaned(a, "A's cleaner")
	b.Mirror("from-a", a.Addr()).Start("kv")
	itest.WaitMirrored(t, a, b, "kv", 1)
	produce(a, "a2", 100) // more for B to mirror and clean while mirroring
	itest.WaitMirrored(t, a, b, "kv", 1)
	cleaned(b, "B's cleaner while mirroring")
	check(b, "B mirroring")

	b.Mirror("from-a").Stop("kv") // failover: B's barrier
	saved := maps.Clone(want)
	produce(a, "a-late", 3) // A keeps writing: lost on failback
	want = saved
	produce(b, "b", 150)
	check(b, "B after failover")

	a.Mirror("from-b", b.Addr()).StartAllowTruncate("kv")
	itest.WaitMirrored(t, b, a, "kv", 1)
	check(a, "A mirroring B")
	a.Mirror("from-b").Stop("kv") // failback: A's barrier
	produce(a, "a3", 50)
	check(a, "A after failback")
	if got := itest.Barriers(t, a, "kv", 0); len(got) != 2 {
		t.Fatalf("A's barriers at %v, want B's and its own", got)
	}
}
