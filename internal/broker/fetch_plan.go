package broker

// What one Fetch reads and how it is answered: Kafka's FetchManager.newContext
// and its FetchContexts (FetchSession.scala), over the cache of
// fetch_session.go.
//
//	session id  epoch   Kafka's context     minibroker
//	any         -1      sessionless         closes session id if there is one; reads the request's partitions; answers session id 0
//	any         0       full                closes session id if there is one; reads the request's partitions; answers a new session's id, or 0 when the cache has no room
//	id          > 0     incremental         the session's partitions, updated by the request's and less the forgotten ones; answers only the changed ones
//	unknown id  not 0/-1                    FETCH_SESSION_ID_NOT_FOUND
//	id          ≠ the session's next epoch  INVALID_FETCH_SESSION_EPOCH
//	id          v13+ on a session made below v13, or the reverse: FETCH_SESSION_TOPIC_ID_ERROR
//
// Errors of the session are top-level codes with session id 0 and no
// topics. An incremental fetch whose partitions all are forgotten closes
// the session and is answered as a sessionless one (Kafka). A request
// that finds its session's epoch moved on while it was read (the same
// epoch sent twice at once) answers INVALID_FETCH_SESSION_EPOCH with the
// session's id, as Kafka's IncrementalFetchContext does.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type planMode int8

const (
	planSessionless planMode = iota
	planFull
	planIncremental
)

// fetchPlan is Kafka's FetchContext: the partitions one request reads,
// in response order.
type fetchPlan struct {
	mode         planMode
	errorCode    int16         // a session error: answered alone
	session      *fetchSession // planIncremental
	reqEpoch     int32
	usesTopicIDs bool // v13+: topics are named by ID
	privileged   bool // a replica (follower) fetch
	topics       []planTopic
	// faults answers a partition's injected error code (fault
	// injection, faults.go), nil when no fault fired.
	faults func(topic string, partition int32) int16
}

type planTopic struct {
	name  string // "" for an ID not known when the plan was made
	id    [16]byte
	parts []planPartition
}

type planPartition struct {
	req    kmsg.FetchRequestTopicPartition
	cached *cachedPartition // planIncremental: the session's entry
	// planIncremental: what the session last told the client.
	prevHW, prevLogStart int64
	// The outcome of the last read (fetchOnce), for the session.
	included bool
	hw       int64
	logStart int64
	code     int16
	records  bool
}

// isReplicaFetch reports whether a Fetch comes from a follower.
func isReplicaFetch(req *kmsg.FetchRequest) bool {
	if req.Version >= 15 {
		return req.ReplicaState.ID >= 0
	}
	return req.ReplicaID >= 0
}

// requestPlan is the plan of the request's own partitions, in its order
// (sessionless and full fetches). names are the request topics' names,
// resolved from their IDs for v13+.
func requestPlan(req *kmsg.FetchRequest, names []string) []planTopic {
	topics := make([]planTopic, len(req.Topics))
	for i, rt := range req.Topics {
		pt := planTopic{name: names[i], id: rt.TopicID, parts: make([]planPartition, len(rt.Partitions))}
		for j, rp := range rt.Partitions {
			pt.parts[j] = planPartition{req: rp}
		}
		topics[i] = pt
	}
	return topics
}

// fetchTopicNames resolves the request's topics: names below v13, IDs
// (unknown: "") from v13.
func (b *Broker) fetchTopicNames(req *kmsg.FetchRequest) []string {
	names := make([]string, len(req.Topics))
	for i, rt := range req.Topics {
		if req.Version >= 13 {
			names[i] = b.topicName(rt.TopicID)
		} else {
			names[i] = rt.Topic
		}
	}
	return names
}

func sessionKeyOf(usesTopicIDs bool, name string, id [16]byte, partition int32) sessionKey {
	if usesTopicIDs {
		return sessionKey{id: id, partition: partition}
	}
	return sessionKey{topic: name, partition: partition}
}

// newFetchPlan is Kafka's FetchManager.newContext.
func (b *Broker) newFetchPlan(req *kmsg.FetchRequest, now time.Time) *fetchPlan {
	names := b.fetchTopicNames(req)
	p := &fetchPlan{usesTopicIDs: req.Version >= 13, privileged: isReplicaFetch(req)}
	if req.Version < 7 || b.fetchSessions == nil {
		p.topics = requestPlan(req, names)
		return p
	}
	if req.SessionEpoch == initialEpoch || req.SessionEpoch == finalEpoch {
		// A full fetch closes the session it names.
		if req.SessionID != 0 {
			b.fetchSessions.remove(req.SessionID)
		}
		p.topics = requestPlan(req, names)
		if req.SessionEpoch == initialEpoch {
			p.mode = planFull
		}
		return p
	}
	b.fetchSessions.incrementalPlan(p, req, names, now.UnixMilli())
	return p
}

// incrementalPlan fills p for an incremental fetch.
func (c *fetchSessionCache) incrementalPlan(p *fetchPlan, req *kmsg.FetchRequest, names []string, now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[req.SessionID]
	if !ok {
		p.errorCode = kerr.FetchSessionIDNotFound.Code
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.epoch != req.SessionEpoch:
		p.errorCode = kerr.InvalidFetchSessionEpoch.Code
		return
	case s.usesTopicIDs != p.usesTopicIDs:
		p.errorCode = kerr.FetchSessionTopicIDError.Code
		return
	}
	for i, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			s.addLocked(sessionKeyOf(s.usesTopicIDs, names[i], rt.TopicID, rp.Partition), names[i], rp)
		}
	}
	var forget []sessionKey
	for _, ft := range req.ForgottenTopics {
		for _, part := range ft.Partitions {
			forget = append(forget, sessionKeyOf(s.usesTopicIDs, ft.Topic, ft.TopicID, part))
		}
	}
	s.forgetLocked(forget)
	if len(s.parts) == 0 || c.partitions-s.cachedSize+len(s.parts) > c.maxParts {
		// Nothing left (Kafka), or past the partition bound
		// (minibroker): the session is closed, the request served
		// without one.
		c.removeLocked(s)
		p.topics = requestPlan(req, names)
		return
	}
	c.touchLocked(s, now)
	s.epoch = nextEpoch(s.epoch)
	p.mode, p.session, p.reqEpoch = planIncremental, s, req.SessionEpoch
	// One allocation for the partitions; topics are runs of them.
	all := make([]planPartition, len(s.order))
	from := 0
	for i, cp := range s.order {
		all[i] = planPartition{req: cp.req, cached: cp, prevHW: cp.highWatermark, prevLogStart: cp.logStart}
		if i+1 == len(s.order) || s.order[i+1].topic != cp.topic || s.order[i+1].key.id != cp.key.id {
			p.topics = append(p.topics, planTopic{name: cp.topic, id: cp.key.id, parts: all[from : i+1 : i+1]})
			from = i + 1
		}
	}
}

// mustRespond is Kafka's CachedPartition.maybeUpdateResponseData: an
// incremental response leaves out a partition with no records, no error,
// and the high watermark and log start offset the client last got.
func (pp *planPartition) mustRespond(mode planMode) bool {
	return mode != planIncremental || pp.records || pp.code != 0 || pp.hw != pp.prevHW || pp.logStart != pp.prevLogStart
}

// finishFetchPlan answers the session part of resp once it is read: a
// full fetch gets a new session, an incremental one updates its session.
func (b *Broker) finishFetchPlan(p *fetchPlan, resp *kmsg.FetchResponse, release func(), now time.Time) {
	switch p.mode {
	case planFull:
		var parts []*cachedPartition
		for _, t := range p.topics {
			for _, pp := range t.parts {
				hw := pp.hw
				if pp.code != 0 {
					hw = -1
				}
				rp := pp.req
				rp.UnknownTags = kmsg.Tags{}
				parts = append(parts, &cachedPartition{key: sessionKeyOf(p.usesTopicIDs, t.name, t.id, rp.Partition),
					topic: t.name, req: rp, highWatermark: hw, logStart: pp.logStart})
			}
		}
		resp.SessionID = b.fetchSessions.create(now.UnixMilli(), p.privileged, p.usesTopicIDs, parts)
	case planIncremental:
		s := p.session
		s.mu.Lock()
		defer s.mu.Unlock()
		resp.SessionID = s.id
		if s.epoch != nextEpoch(p.reqEpoch) {
			// Another request of the same epoch went first.
			resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
			resp.Topics = nil
			release()
			return
		}
		moved := 0
		for _, t := range p.topics {
			for _, pp := range t.parts {
				cp := pp.cached
				if cp.topic == "" && t.name != "" {
					cp.topic = t.name
				}
				if !pp.included {
					continue
				}
				cp.highWatermark, cp.logStart = pp.hw, pp.logStart
				if pp.code != 0 {
					cp.highWatermark = -1
				}
				if pp.records {
					cp.toEnd = true
					moved++
				}
			}
		}
		if moved > 0 {
			// Partitions that returned records go to the end, in
			// order: the others are read first next time.
			order := make([]*cachedPartition, 0, len(s.order))
			for _, cp := range s.order {
				if !cp.toEnd {
					order = append(order, cp)
				}
			}
			for _, cp := range s.order {
				if cp.toEnd {
					order = append(order, cp)
					cp.toEnd = false
				}
			}
			s.order = order
		}
	}
}
