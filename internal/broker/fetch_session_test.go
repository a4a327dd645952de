package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// sessionFetch sends a Fetch of partitions 0..n-1 of topic (n 0: none)
// from offset 0, for session id at epoch; replica >= 0 makes it a
// follower's fetch.
func sessionFetch(t *testing.T, cl *kgo.Client, topic string, id, epoch int32, n int, replica int32, wait int32) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = replica, wait, 1, 1<<20
	req.SessionID, req.SessionEpoch = id, epoch
	if n > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p := range n {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = int32(p), 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func sessionBroker(t *testing.T, seams func(*Broker)) (*Broker, *kgo.Client) {
	t.Helper()
	b, _ := startSeamed(t, seams)
	cl := fetchV12Client(t, b.Addr())
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 8, 1, nil, "s"); err != nil {
		t.Fatal(err)
	}
	return b, cl
}

// fetchV12Client sends Fetch at v12, topics by name.
func fetchV12Client(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(1, 12)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(v), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestFetchSessionEviction: Kafka's eviction rules with two slots and a
// minimum eviction age of 1.5 s (the seam for Kafka's 120 s): a fresh
// session is evicted only by a follower's (privileged) one; once older
// than the minimum age, a consumer's session gives way to a bigger one,
// never to a smaller one, and never to a consumer's when the candidate is
// a follower's; a session unused for longer than the age is evicted by
// any new one.
func TestFetchSessionEviction(t *testing.T) {
	const age = 1500 * time.Millisecond
	b, cl := sessionBroker(t, func(b *Broker) {
		b.knobs.fetchSessionEviction = age
		if err := b.cfg.Set("max.incremental.fetch.session.cache.slots", "2"); err != nil {
			t.Fatal(err)
		}
	})
	full := func(what string, n int, replica int32, wantSession bool) int32 {
		t.Helper()
		resp := sessionFetch(t, cl, "s", 0, 0, n, replica, 0)
		if resp.ErrorCode != 0 || (resp.SessionID > 0) != wantSession {
			t.Fatalf("%s: error %v, session id %d; want a session: %v", what, kerr.ErrorForCode(resp.ErrorCode), resp.SessionID, wantSession)
		}
		return resp.SessionID
	}
	alive := func(what string, id, epoch int32, want bool) {
		t.Helper()
		resp := sessionFetch(t, cl, "s", id, epoch, 0, -1, 0)
		if got := resp.ErrorCode == 0; got != want {
			t.Fatalf("%s: session %d epoch %d answered %v; want alive: %v", what, id, epoch, kerr.ErrorForCode(resp.ErrorCode), want)
		}
	}
	a := full("A, 1 partition", 1, -1, true)
	bb := full("B, 2 partitions", 2, -1, true)
	full("C, 1 partition, cache full of fresh sessions", 1, -1, false)
	full("C, 3 partitions, cache full of fresh sessions", 3, -1, false)
	f := full("F, a follower's", 1, 1, true)
	alive("A, evicted by the follower's", a, 1, false)
	full("C, 5 partitions, no session old enough", 5, -1, false)

	time.Sleep(age + 200*time.Millisecond)
	alive("B, used once older than the minimum age", bb, 1, true)
	alive("F, used once older than the minimum age", f, 1, true)
	full("D, 1 partition, smaller than B", 1, -1, false)
	time.Sleep(20 * time.Millisecond) // F is used before E, not in the same millisecond
	e := full("E, 3 partitions, bigger than B", 3, -1, true)
	alive("B, evicted by a bigger session", bb, 2, false)
	full("G, 4 partitions, the only old session a follower's", 4, -1, false)

	time.Sleep(age + 200*time.Millisecond)
	full("H, 1 partition, F and E stale", 1, -1, true)
	alive("F, the least recently used, stale", f, 2, false)
	alive("E, not evicted", e, 1, true)
	if n := testutilCounter(t, b, "minibroker_fetch_session_evictions_total"); n != 3 {
		t.Fatalf("evictions counted %v, want 3", n)
	}
}

// testutilCounter reads a counter or gauge of the broker's registry.
func testutilCounter(t *testing.T, b *Broker, name string) float64 {
	t.Helper()
	mfs, err := b.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		return sum
	}
	t.Fatalf("no series %s", name)
	return 0
}

// TestFetchSessionPartitionBound: the partitions all sessions hold are
// bounded (the seam lowers the bound to 5): a full fetch that would pass
// it gets no session, an incremental one that would closes its session
// and is answered without one (session id 0, its own partitions read).
// Negative control: the same requests with the default bound keep their
// sessions.
func TestFetchSessionPartitionBound(t *testing.T) {
	for _, bound := range []int{5, 0} {
		t.Run(fmt.Sprint("bound ", bound), func(t *testing.T) {
			b, cl := sessionBroker(t, func(b *Broker) { b.knobs.fetchSessionMaxPartitions = bound })
			bounded := bound > 0
			id := sessionFetch(t, cl, "s", 0, 0, 4, -1, 0).SessionID
			if id <= 0 {
				t.Fatalf("4 partitions: no session")
			}
			if got := sessionFetch(t, cl, "s", 0, 0, 2, -1, 0).SessionID; (got > 0) == bounded {
				t.Fatalf("2 more partitions: session id %d, want one: %v", got, !bounded)
			}
			// Kept, the session answers the 2 new partitions only;
			// closed, the request is answered whole.
			want := map[bool]int{true: 6, false: 2}[bounded]
			resp := sessionFetch(t, cl, "s", id, 1, 6, -1, 0)
			if resp.ErrorCode != 0 || (resp.SessionID == id) == bounded || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != want {
				t.Fatalf("incremental growing to 6: error %v, session %d (was %d), %+v; want the session kept: %v, %d partitions",
					kerr.ErrorForCode(resp.ErrorCode), resp.SessionID, id, resp.Topics, !bounded, want)
			}
			_, parts := b.fetchSessions.size()
			if bounded && parts > bound {
				t.Fatalf("%d partitions cached, bound %d", parts, bound)
			}
		})
	}
}

// TestFetchSessionDuplicateEpoch: two requests of one session at once
// (the same epoch sent twice, or the next sent before the first is
// answered): the one whose epoch the session moved past while it waited
// answers INVALID_FETCH_SESSION_EPOCH with the session's id, as Kafka's
// IncrementalFetchContext does; the session goes on.
func TestFetchSessionDuplicateEpoch(t *testing.T) {
	b, cl := sessionBroker(t, nil)
	cl2 := fetchV12Client(t, b.Addr())
	id := sessionFetch(t, cl, "s", 0, 0, 2, -1, 0).SessionID
	slow := make(chan *kmsg.FetchResponse)
	go func() {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 1500, 1, 1<<20
		req.SessionID, req.SessionEpoch = id, 1
		resp, err := req.RequestWith(context.Background(), cl2)
		if err != nil {
			resp = nil
		}
		slow <- resp
	}()
	time.Sleep(300 * time.Millisecond) // the long poll is waiting
	if resp := sessionFetch(t, cl, "s", id, 2, 0, -1, 0); resp.ErrorCode != 0 {
		t.Fatalf("epoch 2 while epoch 1 waits: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	resp := <-slow
	if resp == nil || kerr.ErrorForCode(resp.ErrorCode) != kerr.InvalidFetchSessionEpoch || resp.SessionID != id || len(resp.Topics) != 0 {
		t.Fatalf("epoch 1 answered after epoch 2: %+v; want INVALID_FETCH_SESSION_EPOCH, session %d, no topics", resp, id)
	}
	if resp := sessionFetch(t, cl, "s", id, 3, 0, -1, 0); resp.ErrorCode != 0 {
		t.Fatalf("epoch 3: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// TestFetchSessionsConcurrentConsumers: kgo consumers on their own
// connections, each with its fetch session, read every record while
// producers write (run with -race: the cache and its sessions are shared
// by all connections).
func TestFetchSessionsConcurrentConsumers(t *testing.T) {
	b, cl := sessionBroker(t, nil)
	const consumers, perPartition = 6, 50
	var wg sync.WaitGroup
	errs := make(chan error, consumers+8)
	for p := range int32(8) {
		wg.Go(func() {
			for i := range perPartition {
				r := &kgo.Record{Topic: "s", Partition: p, Value: fmt.Appendf(nil, "%d", i)}
				if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range consumers {
		wg.Go(func() {
			c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("s"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got := 0
			for got < 8*perPartition {
				fs := c.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					errs <- fmt.Errorf("consumer got %d of %d records: %w", got, 8*perPartition, err)
					return
				}
				fs.EachError(func(_ string, _ int32, err error) { errs <- err })
				got += fs.NumRecords()
			}
			if n, _ := b.fetchSessions.size(); n == 0 {
				errs <- fmt.Errorf("a consumer read every record with no session in the cache")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
