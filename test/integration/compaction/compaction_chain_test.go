package compaction

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorChainOverCleanedLog: a chained mirror of a cleaned log that
// holds a barrier. Z's compacted topic is mirrored to A; A fails over
// (its barrier) and its producer draws Z's producer id 0; A's cleaner
// then cleans past the barrier, with delete.retention.ms short enough
// that markers and tombstones go. A is mirrored to B, B to C (B and C do
// not clean, so each holds what it copied): A, B and C hold the same
// bytes and the same producer state, and A's barrier survived cleaning
// (Z's batches with producer id 0 are kept below it). Then B fails over
// (its own barrier) while C keeps mirroring B: B and C hold the same
// bytes and producer state again, and the producers that drew id 0 on A
// and on B lost nothing: C reads the latest value of every key.
func TestMirrorChainOverCleanedLog(t *testing.T) {
	t.Parallel()
	cfgs := map[string]string{"cleanup.policy": "compact", "segment.bytes": "1024",
		"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100"}
	fast := minibrokertest.Set("log.cleaner.backoff.ms", "50")
	noClean := minibrokertest.Set("log.cleaner.enable", "false")
	z := minibrokertest.Start(t, fast, minibrokertest.TopicWithConfigs("kv", 1, cfgs))
	a := minibrokertest.Start(t, fast)
	b := minibrokertest.Start(t, noClean)
	c := minibrokertest.Start(t, noClean)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	want := map[string]string{}
	produce := func(n itest.Node, prefix string, count, keys int) {
		t.Helper()
		cl := itest.IdempotentProducer(t, n.Addr())
		for i := range count {
			k, v := fmt.Sprintf("k%d", i%keys), fmt.Sprintf("%s-%d", prefix, i)
			r := &kgo.Record{Topic: "kv", Key: []byte(k), Value: []byte(v)}
			if i%9 == 4 {
				r.Value, v = nil, "" // a tombstone
			}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		cl.Close()
	}
	producers := func(n itest.Node) []kadm.DescribedProducer {
		t.Helper()
		ds, err := itest.KadmClient(t, n.Addr()).DescribeProducers(ctx, kadm.TopicsSet{"kv": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		var out []kadm.DescribedProducer
		for _, p := range ds.SortedPartitions() {
			if p.Err != nil {
				t.Fatalf("DescribeProducers %s: %v", n.Addr(), p.Err)
			}
			for _, d := range p.ActiveProducers {
				d.Leader = 0 // the node, not the state
				out = append(out, d)
			}
		}
		slices.SortFunc(out, func(x, y kadm.DescribedProducer) int {
			if x.Less(&y) {
				return -1
			}
			return 1
		})
		return out
	}
	same := func(x, y itest.Node, what string) {
		t.Helper()
		// A mirror's empty log starts at the first batch it receives
		// (restartEmptyAt), so one whose source's log begins with a gap
		// starts after it: compare from the later log start, which must
		// be at or below the first batch.
		from := max(logStartOf(x), logStartOf(y))
		hs, _ := itest.BatchesOf(t, x, "kv", 0, logStartOf(x), itest.LogEnd(x, "kv", 0))
		if len(hs) == 0 || from > hs[0].BaseOffset {
			t.Fatalf("%s: log starts %d and %d, first batch %+v", what, logStartOf(x), logStartOf(y), hs)
		}
		rx, ry := itest.RawLog(t, x, "kv", 0, from, itest.LogEnd(x, "kv", 0)), itest.RawLog(t, y, "kv", 0, from, itest.LogEnd(y, "kv", 0))
		if !bytes.Equal(rx, ry) {
			t.Fatalf("%s: logs differ from %d (%d and %d bytes)", what, from, len(rx), len(ry))
		}
		if lx, ly := itest.LogEnd(x, "kv", 0), itest.LogEnd(y, "kv", 0); lx != ly {
			t.Fatalf("%s: log ends %d and %d", what, lx, ly)
		}
		if px, py := producers(x), producers(y); !slices.Equal(px, py) {
			t.Fatalf("%s: producer states differ:\n  %+v\n  %+v", what, px, py)
		}
		if bx, by := itest.Barriers(t, x, "kv", 0), itest.Barriers(t, y, "kv", 0); !slices.Equal(bx, by) {
			t.Fatalf("%s: barriers at %v and %v", what, bx, by)
		}
	}
	latest := func(n itest.Node) map[string]string {
		t.Helper()
		got := map[string]string{}
		for _, r := range consumeUntil(t, n.Addr(), nil, itest.LogEnd(n, "kv", 0)) {
			got[string(r.Key)] = string(r.Value)
		}
		return got
	}

	produce(z, "z", 120, 12) // producer id 0 on Z
	a.Mirror("from-z", z.Addr()).Start("kv")
	itest.WaitMirrored(t, z, a, "kv", 1)
	a.Mirror("from-z").Stop("kv") // A's barrier
	barrier := itest.Barriers(t, a, "kv", 0)
	if len(barrier) != 1 {
		t.Fatalf("A's barriers at %v, want one", barrier)
	}
	produce(a, "a", 120, 8) // producer id 0 again on A; k8..k11 keep Z's values
	// Filler of its own keys rolls A's keyed records out of the active
	// segment; then A's cleaner passes them, past delete.retention.ms.
	for i := range 30 {
		k := fmt.Sprintf("f%d", i)
		if err := itest.NewClient(t, a.Addr()).ProduceSync(ctx, &kgo.Record{Topic: "kv", Key: []byte(k), Value: []byte("filler")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want[k] = "filler"
	}
	pa := itest.MustPartition(t, a, "kv", 0)
	keyedEnd := itest.LogEnd(a, "kv", 0) - 30
	itest.WaitFor(t, "A's cleaner past the keyed records", func() bool { cp, _ := pa.CleanerCheckpoint(); return cp >= keyedEnd })
	time.Sleep(200 * time.Millisecond) // past delete.retention.ms: the next pass may remove markers
	cp0, _ := pa.CleanerCheckpoint()
	for i := range 30 {
		if err := itest.NewClient(t, a.Addr()).ProduceSync(ctx, &kgo.Record{Topic: "kv", Key: []byte(fmt.Sprintf("g%d", i)), Value: []byte("filler")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("g%d", i)] = "filler"
	}
	itest.WaitFor(t, "another pass on A", func() bool { cp, _ := pa.CleanerCheckpoint(); return cp > cp0 })
	if got := itest.Barriers(t, a, "kv", 0); !slices.Equal(got, barrier) {
		t.Fatalf("A's barriers at %v after cleaning, was %v: Z's producer batches below it are kept", got, barrier)
	}
	if got := latest(a); !sameLatest(got, want) {
		t.Fatalf("A after cleaning reads\n  %v\nwant\n  %v", got, want)
	}
	raw := itest.RawLog(t, a, "kv", 0, logStartOf(a), itest.LogEnd(a, "kv", 0))
	aBatches, _ := itest.BatchesOf(t, a, "kv", 0, logStartOf(a), itest.LogEnd(a, "kv", 0))
	gaps := 0
	for i := 1; i < len(aBatches); i++ {
		if aBatches[i].BaseOffset > aBatches[i-1].LastOffset()+1 {
			gaps++
		}
	}
	if gaps == 0 {
		t.Fatalf("A's log has no gap: nothing was cleaned")
	}

	b.Mirror("from-a", a.Addr()).Start("kv")
	c.Mirror("from-b", b.Addr()).Start("kv")
	itest.WaitMirrored(t, a, b, "kv", 1)
	itest.WaitMirrored(t, b, c, "kv", 1)
	same(a, b, "A and B")
	same(a, c, "A and C")

	b.Mirror("from-a").Stop("kv") // B's barrier; C keeps mirroring B
	produce(b, "b", 60, 10)       // producer id 0 on B too
	itest.WaitMirrored(t, b, c, "kv", 1)
	same(b, c, "B and C after B's failover")
	if got := itest.Barriers(t, c, "kv", 0); len(got) != 2 || got[0] != barrier[0] {
		t.Fatalf("C's barriers at %v, want A's at %d and B's", got, barrier[0])
	}
	if got := latest(c); !sameLatest(got, want) {
		t.Fatalf("C reads\n  %v\nwant\n  %v", got, want)
	}
	t.Logf("A cleaned to %d bytes with %d gaps, first batch at %d (log start %d; B's %d, C's %d), barrier at %v kept; C's barriers %v; %d producers on C",
		len(raw), gaps, aBatches[0].BaseOffset, logStartOf(a), logStartOf(b), logStartOf(c), barrier, itest.Barriers(t, c, "kv", 0), len(producers(c)))
}

// logStartOf is kv-0's log start offset on n (-1: no such partition).
func logStartOf(n itest.Node) int64 {
	p, ok := n.Broker().Partition("kv", 0)
	if !ok {
		return -1
	}
	return p.Offsets().LogStart
}

// sameLatest reports whether a consumer's latest values match want,
// where a key whose latest record is a tombstone reads as "" or, once
// the cleaner removed the tombstone, not at all.
func sameLatest(got, want map[string]string) bool {
	for k, v := range got {
		if w, ok := want[k]; !ok || w != v {
			return false
		}
	}
	for k, w := range want {
		if _, ok := got[k]; !ok && w != "" {
			return false
		}
	}
	return true
}
