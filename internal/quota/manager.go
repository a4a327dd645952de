package quota

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Type is what a sensor measures; each reads one quota key.
type Type int

const (
	Produce            Type = iota // producer_byte_rate: request bytes
	Fetch                          // consumer_byte_rate: response bytes
	Request                        // request_percentage: handler time, percent of one thread
	ControllerMutation             // controller_mutation_rate: partitions created or deleted
	numTypes
)

var typeKeys = [numTypes]string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}

// typeNames are Kafka's QuotaType names, used as the metrics' label.
var typeNames = [numTypes]string{"Produce", "Fetch", "Request", "ControllerMutation"}

func (t Type) String() string { return typeNames[t] }

// Config is the sensors' sampling, Kafka's settings.
type Config struct {
	// Samples and Window: quota.window.num, quota.window.size.seconds.
	Samples int
	Window  time.Duration
	// ControllerSamples and ControllerWindow:
	// controller.quota.window.num, controller.quota.window.size.seconds.
	ControllerSamples int
	ControllerWindow  time.Duration
}

// DefaultConfig is Kafka's defaults: 11 samples of 1 s.
func DefaultConfig() Config {
	return Config{Samples: 11, Window: time.Second, ControllerSamples: 11, ControllerWindow: time.Second}
}

// sensorKey names a sensor: its type and metric tags (user, client-id),
// which say who shares it (ClientQuotaManager.quotaMetricTags).
type sensorKey struct {
	typ            Type
	user, clientID string
}

type sensor struct {
	mu     sync.Mutex
	rate   rate        // the measured rate (all types)
	bucket tokenBucket // ControllerMutation's tokens
	bound  float64     // the quota when last used
	used   time.Time
	// throttled counts throttled responses and their time.
	throttledCount int64
	throttledTime  time.Duration
}

// Manager resolves each request's quota (Kafka's precedence) and keeps
// the sensors.
type Manager struct {
	cfg   Config
	store *Store
	now   func() time.Time

	view atomic.Pointer[view]

	mu      sync.Mutex // guards sensors, ips and lastSweep; taken before a sensor's mu
	sensors map[sensorKey]*sensor
	ips     map[string]*sensor
	// lastSweep: when sweepLocked last dropped idle sensors.
	lastSweep time.Time
}

// view is the quotas as the sensors read them, rebuilt on each change.
type view struct {
	q map[Entity]values
	// enabled: some entity has the type's key.
	enabled [numTypes]bool
	ip      bool
}

// NewManager enforces store's quotas. now is the clock (nil: time.Now).
func NewManager(cfg Config, store *Store, now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	d := DefaultConfig()
	if cfg.Samples < 1 {
		cfg.Samples = d.Samples
	}
	if cfg.Window <= 0 {
		cfg.Window = d.Window
	}
	if cfg.ControllerSamples < 1 {
		cfg.ControllerSamples = d.ControllerSamples
	}
	if cfg.ControllerWindow <= 0 {
		cfg.ControllerWindow = d.ControllerWindow
	}
	m := &Manager{cfg: cfg, store: store, now: now, sensors: map[sensorKey]*sensor{}, ips: map[string]*sensor{}}
	store.mu.Lock()
	m.setView(store.current)
	store.onChange = m.setView
	store.mu.Unlock()
	return m
}

// Store is the quotas the manager enforces.
func (m *Manager) Store() *Store { return m.store }

// Now is the manager's clock.
func (m *Manager) Now() time.Time { return m.now() }

func (m *Manager) setView(q map[Entity]values) {
	v := &view{q: q}
	for e, vs := range q {
		for t, k := range typeKeys {
			if _, ok := vs[k]; ok {
				v.enabled[t] = true
			}
		}
		if _, ok := vs[ConnectionCreationRate]; ok && e.IP.Set {
			v.ip = true
		}
	}
	m.view.Store(v)
}

// Enabled reports whether any entity has a quota of type t (Kafka
// records nothing otherwise).
func (m *Manager) Enabled(t Type) bool { return m.view.Load().enabled[t] }

// AnyEnabled reports whether any user or client-id quota is set: without
// one, requests cost nothing to check.
func (m *Manager) AnyEnabled() bool { return m.view.Load().enabled != [numTypes]bool{} }

func (v *view) get(t Type, e Entity) (float64, bool) {
	q, ok := v.q[e][typeKeys[t]]
	return q, ok
}

func (v *view) has(t Type, e Entity) bool { _, ok := v.get(t, e); return ok }

// tags are the metric tags of (user, clientID): the entity whose quota
// applies decides who shares the sensor (DefaultQuotaCallback.quotaMetricTags).
func (v *view) tags(t Type, user, clientID string) (string, string) {
	u, c := Named(user), Named(clientID)
	switch {
	case v.has(t, Entity{User: u, ClientID: c}), v.has(t, Entity{User: u, ClientID: DefaultName}):
		return user, clientID
	case v.has(t, Entity{User: u}):
		return user, ""
	case v.has(t, Entity{User: DefaultName, ClientID: c}), v.has(t, Entity{User: DefaultName, ClientID: DefaultName}):
		return user, clientID
	case v.has(t, Entity{User: DefaultName}):
		return user, ""
	}
	return "", clientID
}

// limit is the quota of a sensor's tags, in Kafka's order of precedence:
// /users/<user>/clients/<client-id>, /users/<user>/clients/<default>,
// /users/<user>, /users/<default>/clients/<client-id>,
// /users/<default>/clients/<default>, /users/<default>,
// /clients/<client-id>, /clients/<default> (DefaultQuotaCallback.quotaLimit).
func (v *view) limit(t Type, user, clientID string) (float64, bool) {
	u, c := Named(user), Named(clientID)
	var order []Entity
	switch {
	case user != "" && clientID != "":
		order = []Entity{{User: u, ClientID: c}, {User: u, ClientID: DefaultName},
			{User: DefaultName, ClientID: c}, {User: DefaultName, ClientID: DefaultName}}
	case user != "":
		order = []Entity{{User: u}, {User: DefaultName}}
	case clientID != "":
		order = []Entity{{ClientID: c}, {ClientID: DefaultName}}
	}
	for _, e := range order {
		if q, ok := v.get(t, e); ok {
			return q, true
		}
	}
	return 0, false
}

// Quota is the quota of type t that applies to user (the principal's
// name) and clientID, and whether there is one.
func (m *Manager) Quota(t Type, user, clientID string) (float64, bool) {
	v := m.view.Load()
	tu, tc := v.tags(t, user, clientID)
	return v.limit(t, tu, tc)
}

func (m *Manager) window(t Type) window {
	if t == ControllerMutation {
		return window{m.cfg.ControllerSamples, m.cfg.ControllerWindow}
	}
	return window{m.cfg.Samples, m.cfg.Window}
}

// sensorFor returns the sensor (user, clientID) records into for t and
// its quota (+Inf: none).
func (m *Manager) sensorFor(t Type, user, clientID string) (*sensor, float64) {
	v := m.view.Load()
	tu, tc := v.tags(t, user, clientID)
	bound, ok := v.limit(t, tu, tc)
	if !ok {
		bound = math.Inf(1)
	}
	k := sensorKey{t, tu, tc}
	m.mu.Lock()
	s := m.sensors[k]
	if s == nil {
		now := m.now()
		m.sweepLocked(now)
		s = &sensor{used: now}
		m.sensors[k] = s
	}
	m.mu.Unlock()
	return s, bound
}

// sweepEvery is how often a new sensor also sweeps the idle ones (Kafka's
// ExpireSensorTask runs every 30 s).
const sweepEvery = 30 * time.Second

// sweepLocked drops the sensors unused for inactiveExpiry, at most once
// every sweepEvery, so a client that makes up a new client id per
// request leaves memory bounded by what one hour of such requests adds,
// whether or not anyone scrapes /metrics. One pass, under m.mu.
func (m *Manager) sweepLocked(now time.Time) {
	if now.Sub(m.lastSweep) < sweepEvery {
		return
	}
	m.lastSweep = now
	for k, s := range m.sensors {
		if s.idle(now) {
			delete(m.sensors, k)
		}
	}
	for ip, s := range m.ips {
		if s.idle(now) {
			delete(m.ips, ip)
		}
	}
}

// idle reports whether s has been unused for inactiveExpiry.
func (s *sensor) idle(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return now.Sub(s.used) > inactiveExpiry
}

// Record records v (bytes, or percent of a thread's second) for
// (user, clientID) and returns how long to throttle the client: zero
// while the rate is within its quota. Nothing is recorded while no
// entity has a quota of type t.
func (m *Manager) Record(t Type, user, clientID string, v float64) time.Duration {
	if !m.Enabled(t) {
		return 0
	}
	now := m.now()
	s, bound := m.sensorFor(t, user, clientID)
	w := m.window(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bound, s.used = bound, now
	s.rate.record(w, v, now)
	d := s.rate.throttle(w, s.rate.measure(w, now), bound, now)
	if t == Request {
		// ClientRequestQuotaManager bounds the throttle by one window.
		d = min(d, w.width)
	}
	return d
}

// Unrecord takes back v recorded by Record: a throttled Fetch is answered
// empty, so what it would have sent does not count (ClientQuotaManager.unrecordQuotaSensor).
func (m *Manager) Unrecord(t Type, user, clientID string, v float64) {
	if !m.Enabled(t) {
		return
	}
	now := m.now()
	s, _ := m.sensorFor(t, user, clientID)
	s.mu.Lock()
	s.rate.record(m.window(t), -v, now)
	s.mu.Unlock()
}

// MaxInWindow is the most a single response may carry without certain
// throttling: the quota times samples-1 windows (getMaxValueInQuotaWindow);
// +Inf without a quota.
func (m *Manager) MaxInWindow(t Type, user, clientID string) float64 {
	if !m.Enabled(t) {
		return math.Inf(1)
	}
	q, ok := m.Quota(t, user, clientID)
	if !ok {
		return math.Inf(1)
	}
	w := m.window(t)
	return q * float64(w.samples-1) * w.width.Seconds()
}

// Throttled counts a response throttled for d in the sensor's metrics
// (Kafka's throttle-time sensor).
func (m *Manager) Throttled(t Type, user, clientID string, d time.Duration) {
	if d <= 0 || !m.Enabled(t) {
		return
	}
	s, _ := m.sensorFor(t, user, clientID)
	s.mu.Lock()
	s.throttledCount++
	s.throttledTime += d
	s.mu.Unlock()
}

// Mutations is one request's controller mutation quota: strict (Kafka's
// StrictControllerMutationQuota: CreateTopics v6+, CreatePartitions v3+,
// DeleteTopics v5+) refuses a topic once the bucket is empty; permissive
// (older versions) records and only throttles.
type Mutations struct {
	m        *Manager
	s        *sensor
	bound    float64
	strict   bool
	throttle time.Duration
	at       time.Time
}

// Mutations returns (user, clientID)'s mutation quota for one request.
func (m *Manager) Mutations(user, clientID string, strict bool) *Mutations {
	mq := &Mutations{m: m, strict: strict}
	if m.Enabled(ControllerMutation) {
		mq.s, mq.bound = m.sensorFor(ControllerMutation, user, clientID)
	}
	return mq
}

// Record takes permits (partitions) for one topic. In strict mode it
// returns false, taking nothing, when the bucket is already below zero.
func (q *Mutations) Record(permits float64) bool {
	if q.s == nil || math.IsInf(q.bound, 1) {
		return true
	}
	now := q.m.now()
	w := q.m.window(ControllerMutation)
	s := q.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bound, s.used = q.bound, now
	if q.strict {
		if tokens := s.bucket.measure(w, q.bound, now); tokens < 0 {
			q.throttle, q.at = bucketThrottle(tokens, q.bound), now
			return false
		}
		s.bucket.record(w, q.bound, permits, now)
		s.rate.record(w, permits, now)
		return true
	}
	s.bucket.record(w, q.bound, permits, now)
	s.rate.record(w, permits, now)
	if tokens := s.bucket.measure(w, q.bound, now); tokens < 0 {
		q.throttle, q.at = bucketThrottle(tokens, q.bound), now
	}
	return true
}

// Refund gives back permits taken for a topic that then failed for
// another reason.
func (q *Mutations) Refund(permits float64) {
	if q.s == nil || math.IsInf(q.bound, 1) {
		return
	}
	now := q.m.now()
	w := q.m.window(ControllerMutation)
	q.s.mu.Lock()
	q.s.bucket.record(w, q.bound, -permits, now)
	q.s.rate.record(w, -permits, now)
	q.s.mu.Unlock()
}

// ThrottleTime is the throttle of the last refusal (strict) or
// violation (permissive), less the time since (AbstractControllerMutationQuota.throttleTime).
func (q *Mutations) ThrottleTime() time.Duration {
	if q.throttle <= 0 {
		return 0
	}
	return max(0, q.throttle-q.m.now().Sub(q.at))
}

// ConnectionThrottle records a new connection from ip against its
// connection_creation_rate (the ip's own entity, else the <default> ip
// entity) and returns how long to hold it before closing it: zero while
// within the quota. A throttled connection is not counted
// (ConnectionQuotas.recordIpConnectionMaybeThrottle).
func (m *Manager) ConnectionThrottle(ip string) time.Duration {
	v := m.view.Load()
	if !v.ip {
		return 0
	}
	bound, ok := v.q[Entity{IP: Named(ip)}][ConnectionCreationRate]
	if !ok {
		if bound, ok = v.q[Entity{IP: DefaultName}][ConnectionCreationRate]; !ok {
			return 0
		}
	}
	now := m.now()
	m.mu.Lock()
	s := m.ips[ip]
	if s == nil {
		m.sweepLocked(now)
		s = &sensor{used: now}
		m.ips[ip] = s
	}
	m.mu.Unlock()
	w := m.window(Request)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bound, s.used = bound, now
	s.rate.record(w, 1, now)
	d := s.rate.throttle(w, s.rate.measure(w, now), bound, now)
	if d > 0 {
		s.rate.record(w, -1, now)
		s.throttledCount++
		s.throttledTime += d
	}
	return d
}
