package mirror

import (
	"fmt"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorFailback: A→B, B fails over while A keeps writing; A then
// mirrors B back, which truncates A's records written after the failover
// point (leader-epoch divergence), receives B's barrier (clearing A's
// producer state), and fails back with a barrier of its own.
func TestMirrorFailback(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	b := minibrokertest.Start(t)
	pa := itest.IdempotentProducer(t, a.Addr())
	itest.ProduceSerially(t, pa, "orders", 0, "a", 5)

	b.Mirror("from-a", a.Addr()).Start("orders")
	itest.WaitMirrored(t, a, b, "orders", 1)
	b.Mirror("from-a").Stop("orders")                      // B: barrier at 5 (epoch 1)
	itest.ProduceSerially(t, pa, "orders", 0, "a-late", 3) // A keeps writing: 5..7, lost on failback
	pb := itest.IdempotentProducer(t, b.Addr())
	itest.ProduceSerially(t, pb, "orders", 0, "b", 5) // B: 6..10, producer id 0 like A's

	a.Mirror("from-b", b.Addr()).StartAllowTruncate("orders") // cuts A's late records
	itest.WaitMirrored(t, b, a, "orders", 1)
	itest.AssertIdentical(t, b, a, "orders", 0, itest.LogEnd(b, "orders", 0))
	a.Mirror("from-b").Stop("orders") // A: its own barrier at 11 (epoch 2)

	if got := itest.Barriers(t, a, "orders", 0); fmt.Sprint(got) != "[5 11]" {
		t.Fatalf("A's barriers at %v, want [5 11]", got)
	}
	if e := a.Broker().Mirrors(); e == nil {
		t.Fatal("no mirror manager")
	}
	pa2 := itest.IdempotentProducer(t, a.Addr())
	itest.ProduceSerially(t, pa2, "orders", 0, "a2", 3)
	itest.AssertValues(t, a, "orders", 0, itest.Concat(itest.Values("a", 5), itest.Values("b", 5), itest.Values("a2", 3)))
	part, _ := a.Broker().Partition("orders", 0)
	if e := part.LeaderEpoch(); e != 2 {
		t.Fatalf("A writes at epoch %d after failback, want 2", e)
	}
}

// TestMirrorChain: A→B→C. B's barrier reaches C through mirroring; each
// failover clears producer state, so the producers that draw id 0 on B and
// on C lose nothing.
func TestMirrorChain(t *testing.T) {
	t.Parallel()
	b, c := minibrokertest.Start(t), minibrokertest.Start(t)
	itest.Chain(t, b, c)
	itest.AssertValues(t, c, "orders", 0, itest.Concat(itest.Values("a", 5), itest.Values("b", 5), itest.Values("c", 5)))
	if got := itest.Barriers(t, c, "orders", 0); fmt.Sprint(got) != "[5 11]" {
		t.Fatalf("C's barriers at %v, want [5 11] (B's, mirrored, and C's own)", got)
	}
	if got := itest.Barriers(t, b, "orders", 0); fmt.Sprint(got) != "[5]" {
		t.Fatalf("B's barriers at %v, want [5]", got)
	}
}

// TestMirrorChainWithoutBarrier is the negative control: the same chain
// with the barrier write removed at B and C. B's producer, which drew A's
// producer id, is swallowed as duplicates at B; C's likewise at C. Every
// produce call reported success.
func TestMirrorChainWithoutBarrier(t *testing.T) {
	t.Parallel()
	b, c := itest.StartBroker(t, itest.BrokerOptions{Mirror: itest.NoBarrier()}), itest.StartBroker(t, itest.BrokerOptions{Mirror: itest.NoBarrier()})
	itest.Chain(t, b, c)
	itest.AssertValues(t, c, "orders", 0, itest.Values("a", 5))
	if got := itest.Barriers(t, c, "orders", 0); len(got) != 0 {
		t.Fatalf("negative control has barriers %v", got)
	}
}

// TestMirrorFanOut: A→B and A→C independently; each fails over with its
// own barrier and its colliding producer loses nothing.
func TestMirrorFanOut(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 2))
	pa := itest.IdempotentProducer(t, a.Addr())
	for p := int32(0); p < 2; p++ {
		itest.ProduceSerially(t, pa, "orders", p, fmt.Sprintf("a%d", p), 5)
	}
	dsts := []*minibrokertest.Cluster{minibrokertest.Start(t), minibrokertest.Start(t)}
	for _, d := range dsts {
		d.Mirror("from-a", a.Addr()).Start("orders")
	}
	for i, d := range dsts {
		itest.WaitMirrored(t, a, d, "orders", 2)
		d.Mirror("from-a").Stop()
		pd := itest.IdempotentProducer(t, d.Addr())
		for p := int32(0); p < 2; p++ {
			itest.AssertIdentical(t, a, d, "orders", p, 5)
			if got := itest.Barriers(t, d, "orders", p); fmt.Sprint(got) != "[5]" {
				t.Fatalf("dst %d partition %d barriers %v", i, p, got)
			}
			itest.ProduceSerially(t, pd, "orders", p, fmt.Sprintf("d%d-%d", i, p), 5)
			itest.AssertValues(t, d, "orders", p, itest.Concat(itest.Values(fmt.Sprintf("a%d", p), 5), itest.Values(fmt.Sprintf("d%d-%d", i, p), 5)))
		}
	}
}

// TestMirrorFanIn: A→C (topic a-orders) and B→C (topic b-orders), two
// mirrors on C with independent partitions and barriers.
func TestMirrorFanIn(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("a-orders", 1))
	b := minibrokertest.Start(t, minibrokertest.Topic("b-orders", 1))
	c := minibrokertest.Start(t)
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "a-orders", 0, "a", 5)
	itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "b-orders", 0, "b", 5)
	c.Mirror("from-a", a.Addr()).Start("a-orders")
	c.Mirror("from-b", b.Addr()).Start("b-orders")
	itest.WaitMirrored(t, a, c, "a-orders", 1)
	itest.WaitMirrored(t, b, c, "b-orders", 1)
	itest.AssertIdentical(t, a, c, "a-orders", 0, 5)
	itest.AssertIdentical(t, b, c, "b-orders", 0, 5)
	c.Mirror("from-a").Stop()
	c.Mirror("from-b").Stop()
	pc := itest.IdempotentProducer(t, c.Addr())
	for _, topic := range []string{"a-orders", "b-orders"} {
		if got := itest.Barriers(t, c, topic, 0); fmt.Sprint(got) != "[5]" {
			t.Fatalf("%s barriers %v", topic, got)
		}
		itest.ProduceSerially(t, pc, topic, 0, "c-"+topic, 5)
		itest.AssertValues(t, c, topic, 0, itest.Concat(itest.Values(topic[:1], 5), itest.Values("c-"+topic, 5)))
	}
}
