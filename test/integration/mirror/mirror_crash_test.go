package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/minibrokertest"
)

// TestMirrorCrashWhileMirroring: the destination is killed (no clean
// shutdown) while the source is being written and mirrored; after restart
// the mirror resumes where its log ends and ends byte-identical.
func TestMirrorCrashWhileMirroring(t *testing.T) {
	t.Parallel()
	a := minibrokertest.Start(t, minibrokertest.Topic("orders", 2))
	b := minibrokertest.Start(t, minibrokertest.Set("log.segment.bytes", "16384"))
	b.Mirror("from-a", a.Addr()).Start("orders")

	pa := itest.NewClient(t, a.Addr(), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 40; i++ {
			var recs []*kgo.Record
			for j := 0; j < 50; j++ {
				recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "v-%d-%d", i, j)})
			}
			if err := pa.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	b.Kill()
	time.Sleep(100 * time.Millisecond)
	b.Revive()
	wg.Wait()
	itest.WaitMirrored(t, a, b, "orders", 2)
	for p := int32(0); p < 2; p++ {
		itest.AssertIdentical(t, a, b, "orders", p, itest.LogEnd(a, "orders", p))
		if mode, _ := itest.MustPartition(t, b, "orders", p).Mode(); mode != partition.Mirrored {
			t.Fatalf("partition %d writable after restart while mirroring", p)
		}
	}
	if st := b.Mirror("from-a").Status(); st.Partitions[0].State != mirror.Mirroring {
		t.Fatalf("state after restart: %+v", st.Partitions[0])
	}
}

// TestMirrorCrashAtEachStoppingStep: a crash at every step of STOPPING is
// resumed on restart, ends STOPPED and writable with exactly one barrier,
// and the colliding producer after it loses nothing.
func TestMirrorCrashAtEachStoppingStep(t *testing.T) {
	t.Parallel()
	for _, step := range []mirror.StopStep{mirror.StepStopFetcher, mirror.StepTruncate, mirror.StepBarrier, mirror.StepStopped} {
		t.Run(string(step), func(t *testing.T) {
			a := minibrokertest.Start(t, minibrokertest.Topic("orders", 1))
			itest.ProduceSerially(t, itest.IdempotentProducer(t, a.Addr()), "orders", 0, "a", 5)
			crashAt := mirror.WithTestHooks(mirror.Options{}, itest.MirrorHooks{StopStep: func(s mirror.StopStep, _ string, _ int32) error {
				if s == step {
					return itest.ErrCrash
				}
				return nil
			}})
			b := itest.StartBroker(t, itest.BrokerOptions{Mirror: crashAt})
			if err := itest.MirrorOn(b).Create("from-a", []string{a.Addr()}, ""); err != nil {
				t.Fatal(err)
			}
			if err := itest.MirrorOn(b).Start(t.Context(), "from-a", []string{"orders"}); err != nil {
				t.Fatal(err)
			}
			itest.WaitMirrored(t, a, b, "orders", 1)
			if err := itest.MirrorOn(b).Stop("from-a", nil); !errors.Is(err, itest.ErrCrash) {
				t.Fatalf("stop: %v, want the simulated crash", err)
			}
			if mode, _ := itest.MustPartition(t, b, "orders", 0).Mode(); mode != partition.Mirrored {
				t.Fatal("writable before STOPPED")
			}
			b.CrashAndRestart(mirror.Options{})

			st, err := itest.MirrorOn(b).Describe("from-a")
			if err != nil {
				t.Fatal(err)
			}
			if ps := st.Partitions[0]; ps.State != mirror.Stopped || ps.BarrierOffset != 5 || ps.LastMirroredOffset != 5 {
				t.Fatalf("after restart: %+v", ps)
			}
			if got := itest.Barriers(t, b, "orders", 0); fmt.Sprint(got) != "[5]" {
				t.Fatalf("barriers %v, want exactly one at 5", got)
			}
			itest.AssertIdentical(t, a, b, "orders", 0, 5)
			itest.ProduceSerially(t, itest.IdempotentProducer(t, b.Addr()), "orders", 0, "b", 5)
			itest.AssertValues(t, b, "orders", 0, itest.Concat(itest.Values("a", 5), itest.Values("b", 5)))
		})
	}
}
