package quota

// The arithmetic of Kafka's quota sensors, with time passed in (no clock
// inside): rate is Kafka's Rate over a SampledStat (quota.window.num
// samples of quota.window.size.seconds each), tokenBucket its TokenBucket
// (KIP-599, controller_mutation_rate). The throttle times are Kafka's
// QuotaUtils.throttleTime and ControllerMutationQuotaManager.throttleTimeMs.

import (
	"math"
	"time"
)

// window is a sensor's sampling: samples of width each.
type window struct {
	samples int
	width   time.Duration
}

// sample is one of a rate's samples: the sum of what was recorded from
// start, and when the last value was.
type sample struct {
	start, last time.Time
	value       float64
}

// rate is Kafka's Rate(SampledStat): a ring of samples+1 samples (the
// extra one overlaps the window's start). Not safe for concurrent use.
type rate struct {
	ring    []sample
	current int
}

func (r *rate) currentSample(now time.Time) *sample {
	if len(r.ring) == 0 {
		r.ring = append(r.ring, sample{start: now, last: now})
	}
	return &r.ring[r.current]
}

// record adds v at now, starting a new sample when the current one is a
// window old.
func (r *rate) record(w window, v float64, now time.Time) {
	s := r.currentSample(now)
	if now.Sub(s.start) >= w.width {
		r.current = (r.current + 1) % (w.samples + 1)
		if r.current >= len(r.ring) {
			r.ring = append(r.ring, sample{start: now, last: now})
		} else {
			r.ring[r.current] = sample{start: now, last: now}
		}
		s = &r.ring[r.current]
	}
	s.value += v
	s.last = now
}

// purge resets the samples with no event within the whole window.
func (r *rate) purge(w window, now time.Time) {
	expire := time.Duration(w.samples) * w.width
	for i := range r.ring {
		if now.Sub(r.ring[i].last) >= expire {
			r.ring[i] = sample{start: now, last: now}
		}
	}
}

// windowSize is the time the rate divides by: from the oldest sample's
// start, but never less than samples-1 whole windows (so a client's first
// second is not measured as a rate over one second), at least 1 ms.
func (r *rate) windowSize(w window, now time.Time) time.Duration {
	r.purge(w, now)
	oldest := r.currentSample(now).start
	for _, s := range r.ring {
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	full := int(elapsed / w.width)
	if min := w.samples - 1; full < min {
		elapsed += time.Duration(min-full) * w.width
	}
	return max(elapsed, time.Millisecond)
}

// measure is the rate per second at now.
func (r *rate) measure(w window, now time.Time) float64 {
	size := r.windowSize(w, now) // purges
	total := 0.0
	for _, s := range r.ring {
		total += s.value
	}
	return total / size.Seconds()
}

// throttle is how long the client must wait for the measured rate to
// come back to bound: X = (O - T) / T * W (Kafka's QuotaUtils.throttleTime).
func (r *rate) throttle(w window, observed, bound float64, now time.Time) time.Duration {
	if observed <= bound {
		return 0
	}
	ms := (observed - bound) / bound * float64(r.windowSize(w, now).Milliseconds())
	return time.Duration(math.Round(ms)) * time.Millisecond
}

// tokenBucket is Kafka's TokenBucket: tokens refill at the quota per
// second up to a burst of quota × samples × window seconds; a mutation
// takes as many tokens as partitions it changes and may take the bucket
// below zero, after which the next is refused until it refills.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

func (t *tokenBucket) refill(w window, quota float64, now time.Time) {
	burst := float64(w.samples) * w.width.Seconds() * quota
	if t.last.IsZero() {
		t.tokens = burst // a new bucket is full (Kafka's starts at time 0)
	} else {
		t.tokens += quota * now.Sub(t.last).Seconds()
	}
	t.tokens = min(burst, t.tokens)
	t.last = now
}

func (t *tokenBucket) measure(w window, quota float64, now time.Time) float64 {
	t.refill(w, quota, now)
	return t.tokens
}

func (t *tokenBucket) record(w window, quota, v float64, now time.Time) {
	t.refill(w, quota, now)
	burst := float64(w.samples) * w.width.Seconds() * quota
	t.tokens = min(burst, t.tokens-v)
}

// bucketThrottle is how long until a bucket at tokens < 0 is back at
// zero (ControllerMutationQuotaManager.throttleTimeMs).
func bucketThrottle(tokens, quota float64) time.Duration {
	if tokens >= 0 {
		return 0
	}
	return time.Duration(math.Round(-tokens/quota*1000)) * time.Millisecond
}
