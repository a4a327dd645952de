package clients

import (
	"context"
	"fmt"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestKgoIdempotentProduceConsumeRestart: ≥10k idempotent records over
// several partitions, consumed back in order per partition, then again
// after a clean restart and after a crash.
func TestKgoIdempotentProduceConsumeRestart(t *testing.T) {
	t.Parallel()
	c := minibrokertest.Start(t, minibrokertest.Set("log.segment.bytes", "65536"))
	const topic, parts, n = "orders", 4, 12000
	adm := kadm.NewClient(itest.NewClient(t, c.Addr()))
	if _, err := adm.CreateTopic(context.Background(), parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := context.Background()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(fmt.Sprint(i % 97)), Value: []byte(fmt.Sprintf("value-%06d", i))}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		got := itest.ConsumeAll(t, c.Addr(), topic, n)
		if len(got) != n {
			t.Fatalf("%s: got %d records, want %d", stage, len(got), n)
		}
		seen := map[string]bool{}
		next := map[int32]int64{}
		for _, r := range got {
			if r.Offset != next[r.Partition] {
				t.Fatalf("%s: partition %d offset %d, want %d", stage, r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			if seen[string(r.Value)] {
				t.Fatalf("%s: duplicate %s", stage, r.Value)
			}
			seen[string(r.Value)] = true
		}
		// Per-partition order matches produce order.
		byPart := map[int32][]string{}
		for _, r := range got {
			byPart[r.Partition] = append(byPart[r.Partition], string(r.Value))
		}
		for _, r := range recs {
			vals := byPart[r.Partition]
			if len(vals) == 0 || vals[0] != string(r.Value) {
				t.Fatalf("%s: order differs in partition %d", stage, r.Partition)
			}
			byPart[r.Partition] = vals[1:]
		}
	}
	check("first read")
	c.Restart()
	check("after restart")
	c.Kill()
	c.Revive()
	check("after crash")

	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != n {
		t.Fatalf("end offsets sum to %d, want %d", total, n)
	}
}
