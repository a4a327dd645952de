package mirror

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorActivePassive: B mirrors A byte for byte, refuses produce while
// mirrored, fails over with exactly one barrier per partition, and a new
// producer on B that draws A's producer id (both clusters start at 0)
// loses nothing.
func TestMirrorActivePassive(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 2))
	b := minibrokertest.Start(t)

	pa := itest.IdempotentProducer(t, a.Addr())
	for p := int32(0); p < 2; p++ {
		itest.ProduceSerially(t, pa, "orders", p, fmt.Sprintf("a%d", p), 5)
	}
	b.Mirror("from-a", a.Addr()).Start("orders")
	itest.WaitMirrored(t, a, b, "orders", 2)

	// Read-only while mirrored: kgo fails fast with POLICY_VIOLATION.
	pb0 := itest.IdempotentProducer(t, b.Addr(), kgo.RecordRetries(2))
	err := pb0.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("produce to a mirrored partition: %v, want POLICY_VIOLATION", err)
	}

	b.Mirror("from-a").Stop("orders")
	st := b.Mirror("from-a").Status()
	for p := int32(0); p < 2; p++ {
		ap, _ := a.Broker().Partition("orders", p)
		end := ap.Offsets().LogEnd
		itest.AssertIdentical(t, a, b, "orders", p, end)
		if got := itest.Barriers(t, b, "orders", p); len(got) != 1 || got[0] != end {
			t.Fatalf("partition %d: barriers at %v, want exactly one at %d", p, got, end)
		}
		ps := st.Partitions[p]
		if ps.State != "STOPPED" || ps.LastMirroredOffset != end || ps.BarrierOffset != end {
			t.Fatalf("partition %d status %+v", p, ps)
		}
	}

	// The collision: a fresh producer on B gets producer id 0 at epoch 0,
	// as A's did, and sends sequences 0..4 in the same shapes.
	pb := itest.IdempotentProducer(t, b.Addr())
	for p := int32(0); p < 2; p++ {
		itest.ProduceSerially(t, pb, "orders", p, fmt.Sprintf("b%d", p), 5)
	}
	for p := int32(0); p < 2; p++ {
		got := itest.ReadValues(t, b.Addr(), "orders", p, 0)
		want := []string{}
		for _, side := range []string{"a", "b"} {
			for i := 0; i < 5; i++ {
				want = append(want, fmt.Sprintf("%s%d-%d", side, p, i))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("partition %d holds %v, want %v", p, got, want)
		}
	}
}

// TestMirrorActivePassiveWithoutBarrier is the negative control: the same
// failover with the barrier write removed. B's new producer, which drew A's
// producer id, is answered as a duplicate of A's batches and its records
// are silently dropped: the corruption the barrier exists to prevent.
func TestMirrorActivePassiveWithoutBarrier(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	b := itest.StartBroker(t, itest.BrokerOptions{Mirror: itest.NoBarrier()})

	pa := itest.IdempotentProducer(t, a.Addr())
	itest.ProduceSerially(t, pa, "orders", 0, "a0", 5)
	ctx := context.Background()
	if err := itest.MirrorOn(b).Create("from-a", []string{a.Addr()}, ""); err != nil {
		t.Fatal(err)
	}
	if err := itest.MirrorOn(b).Start(ctx, "from-a", []string{"orders"}); err != nil {
		t.Fatal(err)
	}
	itest.WaitMirrored(t, a, b, "orders", 1)
	if err := itest.MirrorOn(b).Stop("from-a", nil); err != nil {
		t.Fatal(err)
	}
	if got := itest.Barriers(t, b, "orders", 0); len(got) != 0 {
		t.Fatalf("negative control wrote barriers at %v", got)
	}
	pb := itest.IdempotentProducer(t, b.Addr())
	itest.ProduceSerially(t, pb, "orders", 0, "b0", 5) // every ProduceSync reports success
	got := itest.ReadValues(t, b.Addr(), "orders", 0, 0)
	if len(got) != 5 {
		t.Fatalf("expected the 5 records of B's producer to be swallowed as duplicates; log holds %v", got)
	}
	for i, v := range got {
		if v != fmt.Sprintf("a0-%d", i) {
			t.Fatalf("unexpected record %q", v)
		}
	}
}
