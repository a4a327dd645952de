package mirror

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
)

// brokerLoop fetches every mirrored partition led by one source broker
// with one multi-partition Fetch at a time — Kafka's replica fetcher —
// and appends what comes back on a second goroutine, so the next fetch
// is on the wire while the last one is written (a Kafka follower fetches,
// then appends, then fetches again; here the two overlap). One long poll
// per broker, not one per partition: fetches share a connection, and per-
// partition long polls would queue behind each other.
//
// Partition fetchers join (add) when they are ready to mirror and leave
// (remove) to pause, stop, or re-resolve their leader; a partition's error
// removes it and is handed to its fetcher.
//
// Offsets stay exact although a fetch runs ahead of the appends: each
// membership (one add) is a member with its own next fetch offset, which a
// fetch advances past the whole batches it answered; the appender appends
// a partition's answer only when the member is still the one that asked
// and the local log ends exactly where the fetch started. Anything else
// (an append that failed, a truncation, a member removed and added again)
// drops the answer and the member fetches again from its log end.
//
// Locks: mu guards the membership and the next offsets and is never held
// across an append. An append holds its member's own lock (member.mu), and
// remove and evict take that lock after taking the member out of the map:
// when they return, no append for it is running and none will start. So
// an append that waits for an fsync (flush.messages=1) holds up only its
// own partition's removal, not the fetching goroutine's snapshot and
// advance nor the other partitions' pauses (before, mu was held across
// the append, and the next fetch of every partition of the source broker
// waited for the fsync).
type brokerLoop struct {
	src      *source
	leader   int32
	maxBytes int32
	partMax  int32

	mu      sync.Mutex // guards members and their next offsets; never held across an append
	members map[tp]*member
	wake    chan struct{}
	applyq  chan fetched

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// member is one membership of a fetcher in a loop.
type member struct {
	f *fetcher
	// topicID is the source topic's id the fetcher resolved before it
	// joined (zero: fetched by name). Set at add and never changed, so the
	// loop's goroutines read it without a lock (the fetcher kept it in a
	// field of its own that it rewrote while the loop read it: a data
	// race).
	topicID [16]byte
	// epoch is the source partition's leader epoch the fetcher read in the
	// same Metadata answer (-1: not said), sent as the fetches'
	// CurrentLeaderEpoch (epoch.go); set at add, never changed.
	epoch int32
	// next is the offset the next fetch asks for: the local log end at
	// add, then past what fetches answered (appended or queued). Guarded
	// by brokerLoop.mu.
	next int64
	// mu is held across an append for this member; gone is set under it
	// once the member left the loop, and no append starts after that.
	mu   sync.Mutex
	gone bool
}

// leave marks m gone, after waiting for an append for it in progress.
// Called after m was taken out of the loop's map, with no lock held.
func (m *member) leave() {
	m.mu.Lock()
	m.gone = true
	m.mu.Unlock()
}

// fetched is one fetch's answer on its way to the appender, with the
// identity errors of topics recreated at the source (checkByName).
type fetched struct {
	parts   []loopPart
	resp    *kmsg.FetchResponse
	changed map[string]error
}

// loopPart is a member and the offset a fetch asked for it.
type loopPart struct {
	m      *member
	offset int64
}

func newBrokerLoop(src *source, leader int32, maxBytes int32) *brokerLoop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &brokerLoop{src: src, leader: leader, maxBytes: maxBytes,
		partMax: min(maxBytes, 4<<20), members: map[tp]*member{}, wake: make(chan struct{}, 1),
		applyq: make(chan fetched, 1), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	appended := make(chan struct{})
	go l.appender(appended)
	go func() {
		l.run()
		<-appended
		close(l.done)
	}()
	return l
}

func (l *brokerLoop) add(f *fetcher, topicID [16]byte, epoch int32) {
	l.mu.Lock()
	old := l.members[f.k]
	l.members[f.k] = &member{f: f, topicID: topicID, epoch: epoch, next: f.p.Offsets().LogEnd}
	l.mu.Unlock()
	if old != nil {
		old.leave()
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// remove takes f out of the loop; when it returns, the loop is not
// appending for f and never will again (STOPPING relies on this).
func (l *brokerLoop) remove(f *fetcher) {
	l.mu.Lock()
	m := l.members[f.k]
	if m != nil && m.f == f {
		delete(l.members, f.k)
	} else {
		m = nil
	}
	l.mu.Unlock()
	if m != nil {
		m.leave()
	}
}

func (l *brokerLoop) close() {
	l.cancel()
	<-l.done
}

func (l *brokerLoop) snapshot() []loopPart {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]loopPart, 0, len(l.members))
	for _, m := range l.members {
		out = append(out, loopPart{m: m, offset: m.next})
	}
	return out
}

// run is the fetching goroutine.
func (l *brokerLoop) run() {
	for {
		parts := l.snapshot()
		if len(parts) == 0 {
			select {
			case <-l.wake:
				continue
			case <-l.ctx.Done():
				return
			}
		}
		var wait time.Duration
		if err := l.src.throttle.wait(l.ctx, func() { wait = l.src.applySettings() }); err != nil {
			return
		}
		resp, err := l.fetch(parts, wait)
		if l.ctx.Err() != nil {
			return
		}
		if err != nil {
			// The broker is unreachable or answered badly: every member
			// re-resolves its leader with backoff.
			for _, p := range parts {
				l.evict(p.m, err)
			}
			continue
		}
		changed, err := l.checkByName(parts, resp)
		if err != nil {
			for _, p := range parts {
				l.evict(p.m, err)
			}
			continue
		}
		l.src.throttle.take(l.advance(parts, resp, changed))
		select {
		case l.applyq <- fetched{parts, resp, changed}:
		case <-l.ctx.Done():
			return
		}
	}
}

// appender is the appending goroutine.
func (l *brokerLoop) appender(done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case j := <-l.applyq:
			l.dispatch(j.parts, j.resp, j.changed)
		case <-l.ctx.Done():
			return
		}
	}
}

func (l *brokerLoop) fetch(parts []loopPart, wait time.Duration) (*kmsg.FetchResponse, error) {
	maxBytes, partMax := l.maxBytes, l.partMax
	if b := l.src.throttle.fetchBytes(); b > 0 {
		maxBytes, partMax = min(maxBytes, b), min(partMax, b)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(wait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = maxBytes
	// read_committed (nothing past the source's LSO) in the failover mode
	// truncate-to-lso; read_uncommitted (up to the high watermark, open
	// transactions too) in abort-open-transactions, as KIP-1279's June
	// 2026 revision fetches.
	req.IsolationLevel = l.src.settings().FailoverMode.fetchIsolation()
	req.SessionEpoch = -1
	byTopic := map[string]int{}
	for _, p := range parts {
		f := p.m.f
		i, ok := byTopic[f.k.topic]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = f.k.topic, p.m.topicID
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[f.k.topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = f.k.partition, p.offset, partMax
		// The source's leader epoch as the fetcher last read it, as
		// Kafka's replica fetcher sends its own: a leader whose epoch
		// rose since answers FENCED_LEADER_EPOCH (and one that does not
		// know it yet UNKNOWN_LEADER_EPOCH), which evicts the partition
		// and makes its fetcher read the metadata again and raise the
		// local epoch (epoch.go). With -1 a source never fences.
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = p.m.epoch, -1, -1
		if l.src.noFetchEpoch {
			rp.CurrentLeaderEpoch = -1
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	kresp, err := l.src.cl.Broker(int(l.leader)).Request(l.ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	return resp, nil
}

// checkByName guards a fetch that named its topics (Fetch before v13 has
// no topic ids): a topic deleted and recreated at the source under the
// same name would answer with the new topic's batches. Before any of them
// is appended, one Metadata request, sent after the fetch answered,
// checks that each topic with batches still has the id the mirror copies;
// it returns the identity error of those that do not. A fetch by id
// (v13+) needs no check: the source answers UNKNOWN_TOPIC_ID for an id it
// no longer has.
func (l *brokerLoop) checkByName(parts []loopPart, resp *kmsg.FetchResponse) (map[string]error, error) {
	if resp.Version >= 13 || len(parts) == 0 {
		return nil, nil
	}
	withID := map[string]bool{}
	for _, p := range parts {
		if p.m.topicID != ([16]byte{}) {
			withID[p.m.f.k.topic] = true
		}
	}
	var topics []string
	for _, t := range resp.Topics {
		if !withID[t.Topic] {
			continue
		}
		for _, rp := range t.Partitions {
			if len(rp.RecordBatches) > 0 {
				topics = append(topics, t.Topic)
				break
			}
		}
	}
	if len(topics) == 0 {
		return nil, nil
	}
	f := parts[0].m.f
	return l.src.verifyTopicIDs(l.ctx, f.m, f.rt, topics)
}

// each calls fn for every partition of resp that parts asked for, with
// the part that asked; it answers the parts resp lacks.
func each(parts []loopPart, resp *kmsg.FetchResponse, fn func(loopPart, *kmsg.FetchResponseTopicPartition)) map[tp]loopPart {
	asked := make(map[tp]loopPart, len(parts))
	names := map[[16]byte]string{} // Fetch v13+ answers by topic id only
	for _, p := range parts {
		asked[p.m.f.k] = p
		names[p.m.topicID] = p.m.f.k.topic
	}
	for _, t := range resp.Topics {
		topic := t.Topic
		if topic == "" {
			topic = names[t.TopicID]
		}
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			k := tp{topic, rp.Partition}
			p, ok := asked[k]
			if !ok {
				continue
			}
			delete(asked, k)
			fn(p, rp)
		}
	}
	return asked
}

// advance moves each member that is still in the loop past the whole
// batches its fetch answered, so the next fetch can go out before they
// are appended, and answers the bytes fetched.
func (l *brokerLoop) advance(parts []loopPart, resp *kmsg.FetchResponse, changed map[string]error) (bytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	each(parts, resp, func(p loopPart, rp *kmsg.FetchResponseTopicPartition) {
		bytes += len(rp.RecordBatches)
		if rp.ErrorCode != 0 || changed[p.m.f.k.topic] != nil || l.members[p.m.f.k] != p.m || p.m.next != p.offset {
			return
		}
		if end := nextOffset(rp.RecordBatches, p.offset); end > p.offset {
			p.m.next = end
		}
	})
	return bytes
}

// nextOffset is the offset after the last whole batch of records that ends
// at or past from (a trailing partial batch is fetched again), or from.
func nextOffset(records []byte, from int64) int64 {
	next := from
	it := batch.NewIter(records)
	for _, h, ok := it.Next(); ok; _, h, ok = it.Next() {
		if last := h.LastOffset(); last >= next {
			next = last + 1
		}
	}
	return next
}

// dispatch appends each partition's batches and hands errors to the
// partitions' fetchers.
func (l *brokerLoop) dispatch(parts []loopPart, resp *kmsg.FetchResponse, changed map[string]error) {
	missing := each(parts, resp, func(p loopPart, rp *kmsg.FetchResponseTopicPartition) {
		if err := changed[p.m.f.k.topic]; err != nil {
			l.evict(p.m, err) // nothing of the recreated topic is appended
			return
		}
		if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
			l.evict(p.m, err)
			return
		}
		res := fetchResult{Records: rp.RecordBatches, HighWatermark: rp.HighWatermark,
			LastStable: rp.LastStableOffset, LogStart: rp.LogStartOffset}
		p.m.mu.Lock()
		if p.m.gone { // removed while fetching: drop
			p.m.mu.Unlock()
			return
		}
		if end := p.m.f.p.Offsets().LogEnd; end != p.offset {
			// The log does not end where this fetch started (an earlier
			// answer was not appended whole): drop it, and fetch again
			// from the log end.
			p.m.mu.Unlock()
			l.mu.Lock()
			if l.members[p.m.f.k] == p.m {
				p.m.next = end
			}
			l.mu.Unlock()
			return
		}
		err := p.m.f.apply(res)
		p.m.mu.Unlock()
		if err != nil {
			l.evict(p.m, err)
			return
		}
		p.m.f.appended()
	})
	for _, p := range missing {
		l.evict(p.m, fmt.Errorf("source fetch response lacks %s-%d", p.m.f.k.topic, p.m.f.k.partition))
	}
}

// evict removes a member and tells its fetcher why.
func (l *brokerLoop) evict(m *member, err error) {
	l.mu.Lock()
	isMember := l.members[m.f.k] == m
	if isMember {
		delete(l.members, m.f.k)
	}
	l.mu.Unlock()
	if isMember {
		m.leave()
		m.f.evicted(err)
	}
}

// loop returns the broker loop for a leader, starting it on first use.
func (s *source) loop(leader int32, maxBytes int32) *brokerLoop {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loops == nil {
		s.loops = map[int32]*brokerLoop{}
	}
	l := s.loops[leader]
	if l == nil {
		l = newBrokerLoop(s, leader, maxBytes)
		s.loops[leader] = l
	}
	return l
}

// applySettings brings the throttle to the mirror's current
// mirror.replication.throttled.rate and answers its
// mirror.fetch.wait.max.ms, for the next fetch.
func (s *source) applySettings() time.Duration {
	cfg := s.settings()
	s.throttle.setRate(cfg.ThrottledRate)
	return cfg.FetchWaitMax
}
