package share

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/minibroker/minibroker/internal/share"
	"github.com/minibroker/minibroker/test/integration/itest"

	"github.com/twmb/franz-go/pkg/kgo"
)

// cuttableDialer dials until cut, then refuses: cut also closes every
// connection it made, as a consumer process that dies does.
type cuttableDialer struct {
	mu    sync.Mutex
	conns []net.Conn
	dead  bool
}

func (d *cuttableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return nil, errors.New("consumer is dead")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cuttableDialer) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	for _, c := range d.conns {
		c.Close()
	}
}

// A kgo share consumer that dies mid-batch (its connections close, it
// acknowledges nothing and never comes back) has its acquired records
// released when its connections close, as Kafka's SharePartitionManager
// releases a share session's records on disconnect: another member gets
// them at once, at delivery count 2, although the acquisition lock (120
// s) and the member's session timeout (120 s) are far away. Negative
// control (the share hook NoConnRelease): none of them comes back within
// 8 s, they wait for the lock.
func TestShareGroupReleaseOnConnClose(t *testing.T) {
	for _, release := range []bool{true, false} {
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) {
			const topic, group, n = "sr", "sr", 20
			c := itest.ShareBroker(t, topic, share.TestHooks{NoConnRelease: !release}, map[string]string{
				"group.share.session.timeout.ms": "120000", "group.share.record.lock.duration.ms": "120000"})
			itest.SetShareEarliest(t, c.Addr(), group)
			itest.GroupsProduce(t, c.Addr(), topic, "v", n)
			tp, _ := c.Broker().Topic(topic)

			d := &cuttableDialer{}
			a, err := kgo.NewClient(kgo.SeedBrokers(c.Addr()), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
				kgo.ShareMaxRecords(10), kgo.FetchMaxWait(200*time.Millisecond), kgo.Dialer(d.dial),
				kgo.RetryTimeout(2*time.Second), kgo.RequestRetries(1))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				done := make(chan struct{})
				go func() { a.Close(); close(done) }()
				select {
				case <-done:
				case <-time.After(20 * time.Second):
				}
			})
			held := map[int64]bool{}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for len(held) == 0 && ctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				a.PollRecords(pctx, 5).EachRecord(func(r *kgo.Record) { held[r.Offset] = true })
				pcancel()
			}
			if len(held) == 0 {
				t.Fatal("the first consumer got no records")
			}
			d.cut() // dies mid-batch: nothing acknowledged

			b := &itest.ShareRaw{T: t, Cl: itest.NewClient(t, c.Addr()), Group: group, Member: "member-b", Topic: tp.ID, TopicName: topic}
			b.Join()
			got := map[int64]int16{}
			wait := 60 * time.Second
			if !release {
				wait = 8 * time.Second
			}
			deadline := time.Now().Add(wait)
			back := func() int {
				k := 0
				for o := range held {
					if got[o] > 0 {
						k++
					}
				}
				return k
			}
			for back() < len(held) && time.Now().Before(deadline) {
				for o, dc := range b.Fetch(100) {
					got[o] = dc
				}
			}
			switch {
			case release && back() != len(held):
				t.Fatalf("%d of the %d records the dead consumer held came back", back(), len(held))
			case !release && back() != 0:
				t.Fatalf("control: %d of the %d records the dead consumer held came back before their lock ended", back(), len(held))
			}
			for o := range held {
				if release && got[o] < 2 {
					t.Errorf("offset %d came back at delivery count %d, want 2 or more", o, got[o])
				}
			}
			t.Logf("release=%v: the dead consumer held %d records (%v); %d came back", release, len(held), held, back())
		})
	}
}
