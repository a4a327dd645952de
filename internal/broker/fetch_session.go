package broker

// The fetch session cache (KIP-227), after Kafka's FetchSession.scala
// (FetchSession, FetchSessionCacheShard).
//
// A session is what the broker remembers of a client's last full fetch:
// the partitions it fetches with their request parameters (fetch offset,
// max bytes, leader epoch) and what the last response told the client
// (high watermark, log start offset). An incremental fetch names only the
// partitions whose parameters changed and the ones to forget; the broker
// fetches every partition of the session and answers only those with
// records, a changed high watermark or log start offset, or an error.
//
// Eviction is Kafka's (FetchSessionCacheShard.tryEvict): when the cache
// holds max.incremental.fetch.session.cache.slots sessions, a new one
// takes the place of
//  1. the least recently used session, if it is unused for longer than
//     the minimum eviction age (Kafka's constant
//     MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, 120 s), else
//  2. the least valuable evictable session, ordered by (privileged,
//     partitions, id), if the new one is not less valuable: a follower's
//     (privileged) session over a consumer's, a bigger session over a
//     smaller one. A consumer's session becomes evictable this way only
//     once it is older than the minimum age; a follower's only by a
//     follower, and also only once older. Whether a session is old enough
//     is decided when it is last used, as in Kafka.
//
// Deviations: Kafka splits the cache into 8 shards of slots/8 sessions
// each (a new session goes to the next shard round robin, and evicts only
// within it); minibroker keeps one cache, so slots is an exact bound and
// eviction looks at every session. Kafka bounds only the number of
// sessions; minibroker also bounds the partitions all sessions hold
// (maxFetchSessionPartitions): a full fetch that would pass it gets no
// session, an incremental one that would closes its session and is
// answered as a sessionless fetch (session id 0, the client starts a new
// session), so sessions cannot grow the broker's memory without limit.
//
// Lock order: fetchSessionCache.mu, then a fetchSession's mu (never the
// cache's while a session's is held).

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// defaultFetchSessionEviction is Kafka's
// MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS (a constant there too).
const defaultFetchSessionEviction = 120 * time.Second

// maxFetchSessionPartitions bounds the partitions held by all sessions
// together (about 200 bytes each: 1,000 sessions of 1,000 partitions).
const maxFetchSessionPartitions = 1 << 20

// Session epochs (Kafka's FetchMetadata).
const (
	initialEpoch int32 = 0  // a full fetch that asks for a new session
	finalEpoch   int32 = -1 // a full fetch that asks for none
)

// nextEpoch is FetchMetadata.nextEpoch: past MaxInt32 it wraps to 1.
func nextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return finalEpoch
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}

// sessionKey names a partition in a session: by topic ID in a session
// that uses IDs (Fetch v13+), else by name.
type sessionKey struct {
	topic     string
	id        [16]byte
	partition int32
}

// cachedPartition is one partition of a session (Kafka's CachedPartition).
type cachedPartition struct {
	key sessionKey
	// topic is the name, resolved when the partition entered an ID
	// session ("" while the ID is unknown: resolved again at each fetch).
	topic string
	// req holds the parameters of the last request naming the partition.
	req kmsg.FetchRequestTopicPartition
	// What the last response that included the partition said (-1:
	// nothing yet, or an error, so that it is sent again).
	highWatermark, logStart int64
	// toEnd marks, while a response is recorded, a partition that
	// returned records (finishFetchPlan). Guarded by the session's mu.
	toEnd bool
}

// fetchSession is one session (Kafka's FetchSession). id, privileged,
// usesTopicIDs and createdMs never change.
type fetchSession struct {
	id           int32
	privileged   bool // created by a follower (replica) fetch
	usesTopicIDs bool
	createdMs    int64

	mu    sync.Mutex // guards epoch, parts, order
	epoch int32      // the epoch the next request must carry
	parts map[sessionKey]*cachedPartition
	// order is the order partitions are fetched and answered in; those
	// that returned records move to the end (Kafka's rotation, so that
	// MaxBytes does not always favour the same partitions).
	order []*cachedPartition

	// Guarded by the cache's mu (touch): when last used, the size the
	// cache counts, and the eviction sets the session was in at its last
	// use.
	lastUsedMs              int64
	cachedSize              int
	evictableByAll, byPrivd bool
}

// addLocked adds or updates the partition of a request (Kafka's
// FetchSession.update, one partition): reports whether it was new.
func (s *fetchSession) addLocked(key sessionKey, topic string, rp kmsg.FetchRequestTopicPartition) bool {
	rp.UnknownTags = kmsg.Tags{}
	if cp, ok := s.parts[key]; ok {
		cp.req = rp
		return false
	}
	cp := &cachedPartition{key: key, topic: topic, req: rp, highWatermark: -1, logStart: -1}
	s.parts[key] = cp
	s.order = append(s.order, cp)
	return true
}

// forgetLocked removes the forgotten partitions: order is rebuilt once.
func (s *fetchSession) forgetLocked(keys []sessionKey) {
	removed := false
	for _, k := range keys {
		if _, ok := s.parts[k]; ok {
			delete(s.parts, k)
			removed = true
		}
	}
	if !removed {
		return
	}
	kept := s.order[:0]
	for _, cp := range s.order {
		if s.parts[cp.key] == cp {
			kept = append(kept, cp)
		}
	}
	clear(s.order[len(kept):])
	s.order = kept
}

// fetchSessionCache holds the sessions (Kafka's FetchSessionCacheShard,
// one shard).
type fetchSessionCache struct {
	slots      func() int // max.incremental.fetch.session.cache.slots, read at each creation
	evictionMs int64      // the minimum eviction age
	maxParts   int        // maxFetchSessionPartitions (smaller in tests)

	mu         sync.Mutex // see the lock order above
	sessions   map[int32]*fetchSession
	partitions int // the sum of the sessions' cachedSize
	evictions  prometheus.Counter
}

func newFetchSessionCache(slots func() int, eviction time.Duration, maxParts int, reg prometheus.Registerer) *fetchSessionCache {
	c := &fetchSessionCache{slots: slots, evictionMs: eviction.Milliseconds(), maxParts: maxParts,
		sessions: map[int32]*fetchSession{},
		evictions: prometheus.NewCounter(prometheus.CounterOpts{Name: "minibroker_fetch_session_evictions_total",
			Help: "Fetch sessions evicted from the cache to make room for a new one (Kafka's IncrementalFetchSessionEvictionsPerSec)."})}
	if reg != nil {
		reg.MustRegister(c.evictions,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "minibroker_fetch_sessions",
				Help: "Incremental fetch sessions in the cache (Kafka's NumIncrementalFetchSessions)."},
				func() float64 { n, _ := c.size(); return float64(n) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "minibroker_fetch_session_partitions",
				Help: "Partitions held by all fetch sessions (Kafka's NumIncrementalFetchPartitionsCached)."},
				func() float64 { _, n := c.size(); return float64(n) }))
	}
	return c
}

// size returns the sessions and the partitions they hold.
func (c *fetchSessionCache) size() (sessions, partitions int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions), c.partitions
}

// removeLocked takes s out of the cache. c.mu held.
func (c *fetchSessionCache) removeLocked(s *fetchSession) {
	if c.sessions[s.id] != s {
		return
	}
	delete(c.sessions, s.id)
	c.partitions -= s.cachedSize
	s.cachedSize = 0
}

// remove closes session id, if there is one.
func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sessions[id]; ok {
		c.removeLocked(s)
	}
}

// touchLocked records a use of s at now (Kafka's touch): c.mu and s.mu
// held.
func (c *fetchSessionCache) touchLocked(s *fetchSession, now int64) {
	s.lastUsedMs = now
	c.partitions += len(s.parts) - s.cachedSize
	s.cachedSize = len(s.parts)
	old := now-s.createdMs > c.evictionMs
	s.byPrivd = !s.privileged || old
	s.evictableByAll = old
}

// evictionKeyLess orders sessions by value: (privileged, size, id).
func evictionKeyLess(p1 bool, n1 int, id1 int32, p2 bool, n2 int, id2 int32) bool {
	if p1 != p2 {
		return !p1
	}
	if n1 != n2 {
		return n1 < n2
	}
	return id1 < id2
}

// tryEvictLocked makes room for a new session of size partitions
// (Kafka's tryEvict): true if a session was evicted. c.mu held.
func (c *fetchSessionCache) tryEvictLocked(privileged bool, size int, now int64) bool {
	var lru, victim *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsedMs < lru.lastUsedMs || s.lastUsedMs == lru.lastUsedMs && s.id < lru.id {
			lru = s
		}
		evictable := s.evictableByAll
		if privileged {
			evictable = s.byPrivd
		}
		if evictable && (victim == nil || evictionKeyLess(s.privileged, s.cachedSize, s.id, victim.privileged, victim.cachedSize, victim.id)) {
			victim = s
		}
	}
	if lru == nil {
		return false
	}
	if now-lru.lastUsedMs > c.evictionMs {
		victim = lru // stale
	} else if victim == nil || evictionKeyLess(privileged, size, 0, victim.privileged, victim.cachedSize, victim.id) {
		return false
	}
	c.removeLocked(victim)
	c.evictions.Inc()
	return true
}

// create makes a session holding parts (in that order), if there is a
// free slot or one can be evicted, and the partition bound allows it
// (Kafka's maybeCreateSession); 0 when no session was made. The new
// session expects epoch 1 next.
func (c *fetchSessionCache) create(now int64, privileged, usesTopicIDs bool, parts []*cachedPartition) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	slots := c.slots()
	if slots <= 0 || c.partitions+len(parts) > c.maxParts {
		return 0
	}
	if len(c.sessions) >= slots && !c.tryEvictLocked(privileged, len(parts), now) {
		return 0
	}
	s := &fetchSession{privileged: privileged, usesTopicIDs: usesTopicIDs, createdMs: now,
		epoch: nextEpoch(initialEpoch), parts: make(map[sessionKey]*cachedPartition, len(parts)), order: parts[:0:0]}
	for _, cp := range parts {
		if _, dup := s.parts[cp.key]; !dup {
			s.parts[cp.key] = cp
			s.order = append(s.order, cp)
		}
	}
	for {
		s.id = rand.Int32N(math.MaxInt32) + 1 // positive, never 0 (INVALID_SESSION_ID)
		if _, used := c.sessions[s.id]; !used {
			break
		}
	}
	c.sessions[s.id] = s
	s.mu.Lock()
	c.touchLocked(s, now)
	s.mu.Unlock()
	return s.id
}

// holds reports whether session id holds a partition of the topic (name
// and id; partition < 0: any of its partitions).
func (c *fetchSessionCache) holds(sessionID int32, topic string, id [16]byte, partition int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[sessionID]
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if partition >= 0 {
		_, ok := s.parts[sessionKeyOf(s.usesTopicIDs, topic, id, partition)]
		return ok
	}
	for k := range s.parts {
		if k.topic == topic && !s.usesTopicIDs || k.id == id && s.usesTopicIDs {
			return true
		}
	}
	return false
}

// fetchSessionNames reports whether an incremental Fetch reads the
// partition from its session without naming it: fault injection matches
// the partitions a fetch reads (faults.go).
func (b *Broker) fetchSessionNames(body kmsg.Request, topic string, partition int32) bool {
	req, ok := body.(*kmsg.FetchRequest)
	if !ok || req.Version < 7 || req.SessionEpoch <= 0 || b.fetchSessions == nil {
		return false
	}
	var id [16]byte
	if t, ok := b.Topic(topic); ok {
		id = t.ID
	}
	return b.fetchSessions.holds(req.SessionID, topic, id, partition)
}
