package mirror

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	mbt "github.com/minibroker/minibroker/minibrokertest"
)

// The mirror link paused: B's mirror reads nothing of what A appends while
// the fault holds (its connections to A stall), and once it is cleared the
// mirror catches up and B holds A's bytes exactly; failover still writes
// one barrier at A's end.
func TestFaultMirrorLinkPauseResumesByteIdentical(t *testing.T) {
	t.Parallel()
	a := mbt.Start(t, mbt.Topic("orders", 1))
	b := mbt.Start(t, mbt.HTTP())
	pa := itest.IdempotentProducer(t, a.Addr())
	itest.ProduceSerially(t, pa, "orders", 0, "before", 5)
	b.Mirror("from-a", a.Addr()).Start("orders")
	itest.WaitMirrored(t, a, b, "orders", 1)

	f := b.Fault(mbt.FaultSpec{Kind: mbt.FaultMirrorPause, Mirror: "from-a"})
	if m := itest.Metric(t, b.HTTPAddr(), `minibroker_fault_active{api="",error="",id="`+f.ID()+`",kind="mirror-pause",mirror="from-a",partition="",topic=""}`); m != "1" {
		t.Fatalf("paused link not in /metrics: %q", m)
	}
	itest.ProduceSerially(t, pa, "orders", 0, "during", 20)
	// The mirror would catch up in milliseconds; paused, it stays put.
	time.Sleep(700 * time.Millisecond)
	bp, _ := b.Broker().Partition("orders", 0)
	if hw := bp.Offsets().HighWatermark; hw != 5 {
		t.Fatalf("mirror advanced to %d while its link was paused", hw)
	}

	f.Clear()
	itest.ProduceSerially(t, pa, "orders", 0, "after", 5)
	itest.WaitMirrored(t, a, b, "orders", 1)
	ap, _ := a.Broker().Partition("orders", 0)
	end := ap.Offsets().LogEnd
	itest.AssertIdentical(t, a, b, "orders", 0, end)
	b.Mirror("from-a").Stop("orders")
	if got := itest.Barriers(t, b, "orders", 0); len(got) != 1 || got[0] != end {
		t.Fatalf("barriers %v, want one at %d", got, end)
	}
}

// The source unreachable: the mirror's connections are cut and new ones
// refused, which its fetchers report (fetch errors, last error); once the
// fault is cleared they reconnect and the copy is byte-identical.
func TestFaultMirrorSourceUnreachable(t *testing.T) {
	t.Parallel()
	a := mbt.Start(t, mbt.Topic("orders", 1))
	b := mbt.Start(t)
	pa := itest.IdempotentProducer(t, a.Addr())
	itest.ProduceSerially(t, pa, "orders", 0, "before", 3)
	b.Mirror("from-a", a.Addr()).Start("orders")
	itest.WaitMirrored(t, a, b, "orders", 1)

	f := b.Fault(mbt.FaultSpec{Kind: mbt.FaultMirrorUnreachable, Mirror: "from-a"})
	itest.ProduceSerially(t, pa, "orders", 0, "during", 3)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := b.Mirror("from-a").Status().Partitions[0]
		if st.FetchErrors > 0 && strings.Contains(st.LastError, "unreachable") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror never reported the unreachable source: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	bp, _ := b.Broker().Partition("orders", 0)
	if hw := bp.Offsets().HighWatermark; hw != 3 {
		t.Fatalf("mirror advanced to %d from an unreachable source", hw)
	}
	f.Clear()
	itest.WaitMirrored(t, a, b, "orders", 1)
	ap, _ := a.Broker().Partition("orders", 0)
	itest.AssertIdentical(t, a, b, "orders", 0, ap.Offsets().LogEnd)
}

// A throttled link: 200 KiB through a link slowed to 100 KiB/s take at
// least about 2 s (a lower bound only: a busy machine is slower still),
// and arrive intact.
func TestFaultMirrorThrottle(t *testing.T) {
	t.Parallel()
	a := mbt.Start(t, mbt.Topic("orders", 1))
	b := mbt.Start(t)
	pa := itest.IdempotentProducer(t, a.Addr())
	itest.ProduceSerially(t, pa, "orders", 0, "warm", 1)
	b.Mirror("from-a", a.Addr()).Start("orders")
	itest.WaitMirrored(t, a, b, "orders", 1)

	b.Fault(mbt.FaultSpec{Kind: mbt.FaultMirrorThrottle, Mirror: "from-a", BytesPerSecond: 100 << 10})
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []*kgo.Record
	for i := 0; i < 20; i++ {
		value := make([]byte, 10<<10) // random: no codec shrinks it
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		recs = append(recs, &kgo.Record{Topic: "orders", Partition: 0, Key: []byte(fmt.Sprint(i)), Value: value})
	}
	start := time.Now()
	if err := pa.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	itest.WaitMirrored(t, a, b, "orders", 1)
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Fatalf("200 KiB crossed a 100 KiB/s link in %v", d)
	}
	ap, _ := a.Broker().Partition("orders", 0)
	itest.AssertIdentical(t, a, b, "orders", 0, ap.Offsets().LogEnd)
}
