package mirror

import (
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorResumeWhilePreparing: a partition held in PREPARING (the
// source answers its OffsetForLeaderEpoch with a retriable error) is
// paused, then resumed. Both answer success and it stays PREPARING; once
// the source answers, it goes to MIRRORING, not PAUSED: the resume
// cancelled the pause the fetcher remembered (before, the lifecycle
// refused the resume and the partition paused after its prepare).
func TestMirrorResumeWhilePreparing(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
	itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "orders", 0, "a", 3)
	d := minibrokertest.Start(t)
	m := d.Mirror("from-a", a.Addr()).Start("orders")
	m.WaitCaughtUp(20 * time.Second)
	m.Stop() // local data and a barrier: the next start has to prepare against the source
	state := func() mirror.State { return m.Status().Partitions[0].State }

	// How many OffsetForLeaderEpoch requests a start's plan makes.
	count := a.Fault(minibrokertest.FaultSpec{Kind: minibrokertest.FaultError,
		APIKey: minibrokertest.Key(kmsg.OffsetForLeaderEpoch), ErrorCode: kerr.NotLeaderForPartition.Code, Nth: 1 << 40})
	if _, err := d.Broker().Mirrors().StartWith(t.Context(), "from-a", []string{"orders"}, mirror.StartOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	planCalls := count.Status().Matched
	count.Clear()
	// The real start's plan gets its answers; PREPARING's do not.
	hold := a.Fault(minibrokertest.FaultSpec{Kind: minibrokertest.FaultError,
		APIKey: minibrokertest.Key(kmsg.OffsetForLeaderEpoch), ErrorCode: kerr.NotLeaderForPartition.Code, Nth: planCalls + 1})
	m.Start("orders")
	for deadline := time.Now().Add(10 * time.Second); hold.Fired() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("PREPARING never asked the source (plan made %d calls); state %s", planCalls, state())
		}
	}
	m.Pause("orders")
	m.Resume("orders")
	if s := state(); s != mirror.Preparing {
		t.Fatalf("after pause and resume while held: %s, want PREPARING", s)
	}
	hold.Clear()
	for deadline := time.Now().Add(20 * time.Second); state() != mirror.Mirroring; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after the source answered: %s, want MIRRORING (the resume was lost)", state())
		}
	}
}
