package mirror

import (
	"fmt"
	"testing"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorFailoverFailbackCycles repeats failover A→B and failback B→A
// three times. Every cycle's new producers draw producer ids that collide
// with the other cluster's; nothing is lost, the logs stay byte-identical
// up to each failover, and each failover adds exactly one barrier.
func TestMirrorFailoverFailbackCycles(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 2))
	b := minibrokertest.Start(t)
	var want [2][]string
	write := func(c *minibrokertest.Cluster, prefix string) {
		pr := itest.IdempotentProducer(t, c.Addr())
		for p := int32(0); p < 2; p++ {
			name := fmt.Sprintf("%s-p%d", prefix, p)
			itest.ProduceSerially(t, pr, "orders", p, name, 4)
			want[p] = append(want[p], itest.Values(name, 4)...)
		}
	}
	write(a, "a0")
	const cycles = 3
	for i := 0; i < cycles; i++ {
		b.Mirror(fmt.Sprintf("from-a-%d", i), a.Addr()).Start("orders").WaitCaughtUp(itest.Timeout)
		b.Mirror(fmt.Sprintf("from-a-%d", i)).Stop()
		write(b, fmt.Sprintf("b%d", i))

		a.Mirror(fmt.Sprintf("from-b-%d", i), b.Addr()).Start("orders").WaitCaughtUp(itest.Timeout)
		a.Mirror(fmt.Sprintf("from-b-%d", i)).Stop()
		write(a, fmt.Sprintf("a%d", i+1))
	}
	b.Mirror("final", a.Addr()).Start("orders").WaitCaughtUp(itest.Timeout)
	for p := int32(0); p < 2; p++ {
		itest.AssertIdentical(t, a, b, "orders", p, itest.LogEnd(a, "orders", p))
		itest.AssertValues(t, a, "orders", p, want[p])
		itest.AssertValues(t, b, "orders", p, want[p])
		if got := itest.Barriers(t, a, "orders", p); len(got) != 2*cycles {
			t.Fatalf("partition %d: %d barriers (%v), want %d", p, len(got), got, 2*cycles)
		}
	}
}
