package mirror

import (
	"context"
	"sync"
	"time"
)

// throttle is a token bucket over the bytes a mirror fetches, all its
// partitions and source brokers together (mirror.replication.throttled.rate).
// A loop waits until the bucket is not in debt before it fetches, and
// spends what the answer carried afterwards: a fetch cannot know its size
// in advance, so the bucket goes into debt and the next fetch waits it
// off. Each fetch asks for at most a tenth of a second's worth
// (fetchBytes), so no single answer overshoots the rate by much; a source
// still answers one whole batch larger than that (Kafka's rule, so a fetch
// always makes progress), which the debt then pays for.
//
// Deviation from Kafka: Kafka throttles replication on the leader's side
// (leader.replication.throttled.rate, and the fetch quota a cluster link's
// principal has there), delaying the answers; minibroker throttles the
// mirror's own fetches on the destination, so it works against any
// source, and a source's own quotas still apply on top.
type throttle struct {
	mu     sync.Mutex // guards the fields below; taken alone (no other lock inside it)
	rate   float64    // bytes per second; 0: unlimited
	tokens float64    // may be negative: the debt of the last answers
	last   time.Time
}

// burstSeconds is how much a bucket holds when nothing is fetched (half
// a second of the rate, so the gaps between fetches do not lose tokens),
// fetchSeconds what one fetch asks for.
const (
	burstSeconds = 0.5
	fetchSeconds = 0.1
)

// minFetchBytes bounds fetchBytes from below, so a low rate still fetches
// in reasonable requests.
const minFetchBytes = 16 << 10

// setRate sets the rate in bytes per second (≤ 0: unlimited). A change
// starts the bucket afresh: no credit and no debt carried over.
func (t *throttle) setRate(bytesPerSec int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rate := max(float64(bytesPerSec), 0)
	if rate == t.rate {
		return
	}
	t.rate, t.tokens, t.last = rate, 0, time.Now()
}

// refill adds the tokens earned since last; holds mu.
func (t *throttle) refill(now time.Time) {
	t.tokens = min(t.tokens+now.Sub(t.last).Seconds()*t.rate, t.rate*burstSeconds)
	t.last = now
}

// take spends n bytes fetched.
func (t *throttle) take(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate == 0 {
		return
	}
	t.refill(time.Now())
	t.tokens -= float64(n)
}

// wait returns when the bucket is out of debt (at once when unlimited),
// or with ctx's error. It calls refresh (which may change the rate) first
// and at least every 100 ms while it waits, so a new rate applies at once
// even when the old one left a long debt.
func (t *throttle) wait(ctx context.Context, refresh func()) error {
	for {
		refresh()
		t.mu.Lock()
		if t.rate == 0 {
			t.mu.Unlock()
			return nil
		}
		t.refill(time.Now())
		if t.tokens >= 0 {
			t.mu.Unlock()
			return nil
		}
		d := min(time.Duration(-t.tokens/t.rate*float64(time.Second)), 100*time.Millisecond)
		t.mu.Unlock()
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// fetchBytes is the most one fetch should ask for under the rate, 0 when
// unlimited.
func (t *throttle) fetchBytes() int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate == 0 {
		return 0
	}
	return int32(min(max(t.rate*fetchSeconds, minFetchBytes), 1<<30))
}
