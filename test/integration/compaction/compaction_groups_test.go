package compaction

import (
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

// TestCompactionGroupOffsetInGap: a consumer group committed an offset
// that the cleaner then removed (a record a later one of its key
// replaced). As in Kafka, a fetch from an offset in a gap returns the
// next batch: the group's kgo consumer resumes at the next kept record —
// not at the start, not past it — reads every kept record after it once,
// in order, and commits the log end.
func TestCompactionGroupOffsetInGap(t *testing.T) {
	t.Parallel()
	cfgs := map[string]string{"cleanup.policy": "compact", "segment.bytes": "1024", "min.cleanable.dirty.ratio": "0.01"}
	c := minibrokertest.Start(t, minibrokertest.Set("log.cleaner.backoff.ms", "50"), minibrokertest.TopicWithConfigs("kv", 1, cfgs))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Keys k0..k4 are overwritten all along; every tenth record has a key
	// of its own (u<i>), kept for ever.
	prod := itest.IdempotentProducer(t, c.Addr())
	var gapped int64 = -1
	for i := range 300 {
		key := fmt.Sprintf("k%d", i%5)
		if i%10 == 0 {
			key = fmt.Sprintf("u%d", i)
		}
		out, err := prod.ProduceSync(ctx, &kgo.Record{Topic: "kv", Key: []byte(key), Value: []byte(fmt.Sprintf("v%d", i))}).First()
		if err != nil {
			t.Fatal(err)
		}
		if i == 123 {
			gapped = out.Offset // k3, replaced at 128
		}
	}
	adm := itest.KadmClient(t, c.Addr())
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "kv", Partition: 0, At: gapped, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	// More records of their own keys roll the ones above out of the
	// active segment; then the cleaner passes them.
	for i := range 40 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "kv", Key: []byte(fmt.Sprintf("f%d", i)), Value: []byte("filler")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p := itest.MustPartition(t, c, "kv", 0)
	itest.WaitFor(t, "the cleaner to pass the committed offset", func() bool { cp, _ := p.CleanerCheckpoint(); return cp > 300 })

	end := itest.EndOffset(t, itest.NewClient(t, c.Addr()), "kv", 0)
	var kept []int64
	for _, r := range consumeUntil(t, c.Addr(), nil, end) {
		kept = append(kept, r.Offset)
	}
	if slices.Contains(kept, gapped) {
		t.Fatalf("the committed offset %d was not removed (the control): kept %v", gapped, kept)
	}
	i, _ := slices.BinarySearch(kept, gapped)
	want := kept[i:]
	if want[0] == gapped+1 {
		t.Fatalf("the gap at %d is one offset wide; the test wants a wider one: kept %v", gapped, kept[:i+3])
	}

	// The group resumes from its committed offset; AtStart applies only
	// if it had none, so reading from 0 would show here.
	got := consumeUntil(t, c.Addr(), []kgo.Opt{kgo.ConsumerGroup("g"), kgo.ConsumeTopics("kv"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit()}, end)
	var gotOffs []int64
	for _, r := range got {
		gotOffs = append(gotOffs, r.Offset)
	}
	if !slices.Equal(gotOffs, want) {
		t.Fatalf("the group committed at %d (in a gap) read offsets %v, want %v", gapped, gotOffs, want)
	}
	t.Logf("committed %d, in a gap; resumed at %d, read %d records to %d", gapped, gotOffs[0], len(gotOffs), end)
}

// consumeUntil reads kv partition 0 with opts (nil: from offset 0, no
// group) until the record before end.
func consumeUntil(t *testing.T, addr string, opts []kgo.Opt, end int64) []*kgo.Record {
	t.Helper()
	if opts == nil {
		opts = []kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kv": {0: kgo.NewOffset().AtStart()}})}
	}
	cl := itest.NewClient(t, addr, append(opts, kgo.FetchMaxWait(100*time.Millisecond))...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end-1 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d records, none at %d: %v", len(out), end-1, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		out = append(out, fs.Records()...)
	}
	return out
}
