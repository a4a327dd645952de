package integration

import (
	"fmt"
	"testing"

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
	pa := idempotentProducer(t, a.Addr())
	produceSerially(t, pa, "orders", 0, "a", 5)

	b.Mirror("from-a", a.Addr()).Start("orders")
	waitMirrored(t, a, b, "orders", 1)
	b.Mirror("from-a").Stop("orders")                // B: barrier at 5 (epoch 1)
	produceSerially(t, pa, "orders", 0, "a-late", 3) // A keeps writing: 5..7, lost on failback
	pb := idempotentProducer(t, b.Addr())
	produceSerially(t, pb, "orders", 0, "b", 5) // B: 6..10, producer id 0 like A's

	a.Mirror("from-b", b.Addr()).StartAllowTruncate("orders") // cuts A's late records
	waitMirrored(t, b, a, "orders", 1)
	assertIdentical(t, b, a, "orders", 0, logEnd(b, "orders", 0))
	a.Mirror("from-b").Stop("orders") // A: its own barrier at 11 (epoch 2)

	if got := barriers(t, a, "orders", 0); fmt.Sprint(got) != "[5 11]" {
		t.Fatalf("A's barriers at %v, want [5 11]", got)
	}
	if e := a.Broker().Mirrors(); e == nil {
		t.Fatal("no mirror manager")
	}
	pa2 := idempotentProducer(t, a.Addr())
	produceSerially(t, pa2, "orders", 0, "a2", 3)
	assertValues(t, a, "orders", 0, concat(values("a", 5), values("b", 5), values("a2", 3)))
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
	chain(t, b, c)
	assertValues(t, c, "orders", 0, concat(values("a", 5), values("b", 5), values("c", 5)))
	if got := barriers(t, c, "orders", 0); fmt.Sprint(got) != "[5 11]" {
		t.Fatalf("C's barriers at %v, want [5 11] (B's, mirrored, and C's own)", got)
	}
	if got := barriers(t, b, "orders", 0); fmt.Sprint(got) != "[5]" {
		t.Fatalf("B's barriers at %v, want [5]", got)
	}
}

// TestMirrorChainWithoutBarrier is the negative control: the same chain
// with the barrier write removed at B and C. B's producer, which drew A's
// producer id, is swallowed as duplicates at B; C's likewise at C. Every
// produce call reported success.
func TestMirrorChainWithoutBarrier(t *testing.T) {
	t.Parallel()
	b, c := startNoBarrier(t), startNoBarrier(t)
	chain(t, b, c)
	assertValues(t, c, "orders", 0, values("a", 5))
	if got := barriers(t, c, "orders", 0); len(got) != 0 {
		t.Fatalf("negative control has barriers %v", got)
	}
}

// TestMirrorFanOut: A→B and A→C independently; each fails over with its
// own barrier and its colliding producer loses nothing.
func TestMirrorFanOut(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 2))
	pa := idempotentProducer(t, a.Addr())
	for p := int32(0); p < 2; p++ {
		produceSerially(t, pa, "orders", p, fmt.Sprintf("a%d", p), 5)
	}
	dsts := []*minibrokertest.Cluster{minibrokertest.Start(t), minibrokertest.Start(t)}
	for _, d := range dsts {
		d.Mirror("from-a", a.Addr()).Start("orders")
	}
	for i, d := range dsts {
		waitMirrored(t, a, d, "orders", 2)
		d.Mirror("from-a").Stop()
		pd := idempotentProducer(t, d.Addr())
		for p := int32(0); p < 2; p++ {
			assertIdentical(t, a, d, "orders", p, 5)
			if got := barriers(t, d, "orders", p); fmt.Sprint(got) != "[5]" {
				t.Fatalf("dst %d partition %d barriers %v", i, p, got)
			}
			produceSerially(t, pd, "orders", p, fmt.Sprintf("d%d-%d", i, p), 5)
			assertValues(t, d, "orders", p, concat(values(fmt.Sprintf("a%d", p), 5), values(fmt.Sprintf("d%d-%d", i, p), 5)))
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
	produceSerially(t, idempotentProducer(t, a.Addr()), "a-orders", 0, "a", 5)
	produceSerially(t, idempotentProducer(t, b.Addr()), "b-orders", 0, "b", 5)
	c.Mirror("from-a", a.Addr()).Start("a-orders")
	c.Mirror("from-b", b.Addr()).Start("b-orders")
	waitMirrored(t, a, c, "a-orders", 1)
	waitMirrored(t, b, c, "b-orders", 1)
	assertIdentical(t, a, c, "a-orders", 0, 5)
	assertIdentical(t, b, c, "b-orders", 0, 5)
	c.Mirror("from-a").Stop()
	c.Mirror("from-b").Stop()
	pc := idempotentProducer(t, c.Addr())
	for _, topic := range []string{"a-orders", "b-orders"} {
		if got := barriers(t, c, topic, 0); fmt.Sprint(got) != "[5]" {
			t.Fatalf("%s barriers %v", topic, got)
		}
		produceSerially(t, pc, topic, 0, "c-"+topic, 5)
		assertValues(t, c, topic, 0, concat(values(topic[:1], 5), values("c-"+topic, 5)))
	}
}
