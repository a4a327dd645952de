package groups

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	mbt "github.com/minibroker/minibroker/minibrokertest"
)

// The group coordinator answers NOT_COORDINATOR to a consumer's
// heartbeats: kgo drops the coordinator it knew, looks it up again
// (FindCoordinator), and, its heartbeat having failed, rejoins the group
// (a rebalance: a new generation, partitions assigned again); then it
// consumes on.
func TestFaultGroupNotCoordinator(t *testing.T) {
	t.Parallel()
	c := mbt.Start(t, mbt.Topic("events", 1), mbt.HTTP())
	var assigned atomic.Int32
	cons := itest.NewClient(t, c.Addr(), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.HeartbeatInterval(50*time.Millisecond), kgo.RequestRetries(1),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { assigned.Add(1) }))
	prod := itest.NewClient(t, c.Addr(), kgo.DefaultProduceTopic("events"))
	consumeValue(t, prod, cons, "e-0")
	_, gen1 := cons.GroupMetadata()
	finds := itest.Counter(t, c.HTTPAddr(), `minibroker_requests_total{api="FindCoordinator"}`)

	f := c.Fault(mbt.FaultSpec{Kind: mbt.FaultError, APIKey: mbt.Key(kmsg.Heartbeat),
		ErrorCode: kerr.NotCoordinator.Code, Count: 2})
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, gen := cons.GroupMetadata()
		if f.Fired() == 2 && gen > gen1 && assigned.Load() >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rebalance: fault fired %d times, generation %d (was %d), assigned %d times", f.Fired(), gen, gen1, assigned.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if now := itest.Counter(t, c.HTTPAddr(), `minibroker_requests_total{api="FindCoordinator"}`); now <= finds {
		t.Fatalf("FindCoordinator requests %d, %d before the fault: kgo did not look its coordinator up again", now, finds)
	}
	consumeValue(t, prod, cons, "e-1")
}

// consumeValue produces v and polls the consumer until it sees it.
func consumeValue(t *testing.T, prod, cons *kgo.Client, v string) {
	t.Helper()
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cons.PollFetches(ctx)
		cancel()
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == v })
		if found {
			return
		}
	}
	t.Fatalf("consumer never got %q", v)
}
