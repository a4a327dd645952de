package share

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/share"
	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/minibrokertest"
)

func newShareConsumer(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(10),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}
	return itest.NewClient(t, addr, append(base, opts...)...)
}

type shareDelivery struct {
	consumer int
	count    int32
}

// Three kgo share consumers on one partition: every record is delivered;
// a record accepted is never delivered again; one in ten is released on
// its first delivery and comes back with its delivery count 2 (then
// accepted); one in ten is rejected and never comes back. The share
// partition's start offset ends at the log end.
func TestShareGroupThreeConsumers(t *testing.T) {
	const topic, group, n = "sq", "sg", 300
	c := minibrokertest.Start(t, itest.FastShare(topic)...)
	itest.SetShareEarliest(t, c.Addr(), group)
	itest.GroupsProduce(t, c.Addr(), topic, "v", n)

	var mu sync.Mutex
	deliveries := map[int][]shareDelivery{}
	final := map[int]kgo.AckStatus{}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		cl := newShareConsumer(t, c.Addr(), group, topic)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					cl.Close() // sends the last acks
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollRecords(pctx, 20)
				pcancel()
				fs.EachRecord(func(r *kgo.Record) {
					v, _ := strconv.Atoi(strings.TrimPrefix(string(r.Value), "v-"))
					mu.Lock()
					deliveries[v] = append(deliveries[v], shareDelivery{i, r.DeliveryCount()})
					status := kgo.AckAccept
					switch {
					case v%10 == 1:
						status = kgo.AckReject
					case v%10 == 0 && r.DeliveryCount() == 1:
						status = kgo.AckRelease
					}
					if status != kgo.AckRelease {
						final[v] = status
					}
					mu.Unlock()
					r.Ack(status)
				})
			}
		}()
	}
	for {
		mu.Lock()
		got := len(final)
		mu.Unlock()
		if got == n {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records finished", got, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // any wrong redelivery would show now
	close(done)
	wg.Wait()

	per := map[int]int{}
	for v := 0; v < n; v++ {
		ds := deliveries[v]
		want := 1
		if v%10 == 0 {
			want = 2
		}
		if len(ds) != want {
			t.Errorf("record %d delivered %d times (%v), want %d", v, len(ds), ds, want)
			continue
		}
		for k, d := range ds {
			if d.count != int32(k+1) {
				t.Errorf("record %d delivery %d has delivery count %d", v, k+1, d.count)
			}
			per[d.consumer]++
		}
	}
	t.Logf("deliveries per consumer: %v", per)

	// DescribeShareGroupOffsets: the SPSO is past every record.
	start := itest.DescribeShareStart(t, c.Addr(), group, topic)
	if start != n {
		t.Errorf("share partition start offset %d, want %d", start, n)
	}
}

// A consumer that takes records and then stops acknowledging (and
// polling) holds them only until the acquisition lock ends: another
// consumer then gets them, at delivery count 2 or more (the stuck
// client's background fetch may take them once more before they reach
// the other). Negative control: with
// lock expiry off (the share hook NoLockExpiry) they stay with the
// stuck consumer.
func TestShareGroupLockExpiry(t *testing.T) {
	for _, expiry := range []bool{true, false} {
		t.Run(fmt.Sprintf("expiry=%v", expiry), func(t *testing.T) {
			const topic, group, n = "sl", "sl", 20
			c := itest.ShareBroker(t, topic, share.TestHooks{NoLockExpiry: !expiry},
				map[string]string{"group.share.record.lock.duration.ms": "2000"})
			itest.SetShareEarliest(t, c.Addr(), group)
			itest.GroupsProduce(t, c.Addr(), topic, "v", n)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			stuck := newShareConsumer(t, c.Addr(), group, topic, kgo.ShareMaxRecords(n))
			held := map[string]bool{}
			for len(held) == 0 {
				stuck.PollRecords(ctx, n).EachRecord(func(r *kgo.Record) { held[string(r.Value)] = true })
				if ctx.Err() != nil {
					t.Fatal("the stuck consumer got nothing")
				}
			}
			// It never polls (so never acknowledges) again.
			other := newShareConsumer(t, c.Addr(), group, topic)
			got := map[string]int32{}
			wait := time.Now().Add(8 * time.Second)
			for time.Now().Before(wait) && len(got) < len(held) {
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				other.PollRecords(pctx, n).EachRecord(func(r *kgo.Record) {
					if held[string(r.Value)] {
						got[string(r.Value)] = r.DeliveryCount()
					}
					r.Ack(kgo.AckAccept)
				})
				pcancel()
			}
			if expiry {
				if len(got) != len(held) {
					t.Fatalf("the other consumer got %d of the %d records the stuck one held", len(got), len(held))
				}
				for v, dc := range got {
					if dc < 2 {
						t.Errorf("%s redelivered at delivery count %d, want 2 or more", v, dc)
					}
				}
			} else if len(got) != 0 {
				t.Fatalf("lock expiry off: the other consumer got %d held records", len(got))
			}
			t.Logf("held %d, redelivered %d", len(held), len(got))
		})
	}
}

// share.isolation.level=read_committed: a kgo share consumer gets the
// committed transactions' records, never an aborted one's, and nothing
// at or past the last stable offset while a transaction is open (a
// plain record written after it waits too); once it commits, the rest
// comes. Negative control: read_uncommitted delivers the aborted
// records.
func TestShareGroupReadCommitted(t *testing.T) {
	for _, level := range []string{"read_committed", "read_uncommitted"} {
		t.Run(level, func(t *testing.T) {
			const topic, group = "st", "stg"
			c := minibrokertest.Start(t, itest.FastShare(topic)...)
			itest.SetGroupConfigs(t, c.Addr(), group, map[string]string{"share.auto.offset.reset": "earliest", "share.isolation.level": level})
			vals := func(prefix string, n int) []string {
				var out []string
				for i := 0; i < n; i++ {
					out = append(out, fmt.Sprintf("%s-%d", prefix, i))
				}
				return out
			}
			p1 := itest.TxnClient(t, c.Addr(), "t1", topic)
			itest.ProduceTxn(t, p1, true, vals("c1", 10)...)
			itest.ProduceTxn(t, p1, false, vals("a", 10)...)
			itest.ProduceTxn(t, p1, true, vals("c2", 10)...)
			p2 := itest.TxnClient(t, c.Addr(), "t2", topic)
			if err := p2.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, v := range vals("o", 5) {
				if err := p2.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			itest.GroupsProduce(t, c.Addr(), topic, "p", 5)

			cl := newShareConsumer(t, c.Addr(), group, topic)
			got := map[string]bool{}
			poll := func(d time.Duration) {
				end := time.Now().Add(d)
				for time.Now().Before(end) {
					pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
					cl.PollRecords(pctx, 100).EachRecord(func(r *kgo.Record) {
						got[string(r.Value)] = true
						r.Ack(kgo.AckAccept)
					})
					pcancel()
				}
			}
			poll(3 * time.Second)
			count := func(prefix string) int {
				n := 0
				for v := range got {
					if strings.HasPrefix(v, prefix+"-") {
						n++
					}
				}
				return n
			}
			if level == "read_uncommitted" {
				if count("a") != 10 {
					t.Fatalf("read_uncommitted: %d aborted records delivered, want 10 (the control)", count("a"))
				}
				return
			}
			if count("c1") != 10 || count("c2") != 10 || count("a") != 0 || count("o") != 0 || count("p") != 0 {
				t.Fatalf("before the commit: c1 %d c2 %d a %d o %d p %d, want 10 10 0 0 0",
					count("c1"), count("c2"), count("a"), count("o"), count("p"))
			}
			if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
			poll(3 * time.Second)
			if count("o") != 5 || count("p") != 5 || count("a") != 0 {
				t.Fatalf("after the commit: o %d p %d a %d, want 5 5 0", count("o"), count("p"), count("a"))
			}
		})
	}
}

// ListGroups lists a share group with type "share" (and filters by it),
// DeleteGroups refuses it with members (NON_EMPTY_GROUP) and deletes it,
// state and all, once they left; DescribeShareGroupOffsets then finds
// nothing.
func TestShareGroupListAndDelete(t *testing.T) {
	const topic, group = "sd", "sdg"
	c := minibrokertest.Start(t, itest.FastShare(topic)...)
	itest.SetShareEarliest(t, c.Addr(), group)
	itest.GroupsProduce(t, c.Addr(), topic, "v", 10)
	cl := newShareConsumer(t, c.Addr(), group, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := 0
	for got < 10 && ctx.Err() == nil {
		got += len(cl.PollRecords(ctx, 10).Records())
	}
	adm := itest.NewClient(t, c.Addr())
	list := func(types ...string) []kmsg.ListGroupsResponseGroup {
		req := kmsg.NewPtrListGroupsRequest()
		req.TypesFilter = types
		resp, err := req.RequestWith(ctx, adm)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups
	}
	if gs := list("share"); len(gs) != 1 || gs[0].Group != group || gs[0].GroupType != "share" || gs[0].GroupState != "Stable" {
		t.Fatalf("ListGroups share: %+v", gs)
	}
	if gs := list("classic"); len(gs) != 0 {
		t.Fatalf("ListGroups classic lists %+v", gs)
	}
	del := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, adm)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0].ErrorCode
	}
	if code := del(); code != 68 { // NON_EMPTY_GROUP
		t.Fatalf("DeleteGroups with a member: code %d", code)
	}
	cl.Close() // leaves
	if code := del(); code != 0 {
		t.Fatalf("DeleteGroups after the member left: code %d", code)
	}
	if gs := list(); len(gs) != 0 {
		t.Fatalf("after delete ListGroups: %+v", gs)
	}
}
