package mirror

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerLoop fetches every mirrored partition led by one source broker
// with one multi-partition Fetch at a time, and appends what comes back
// before asking again — Kafka's replica fetcher thread. One long poll per
// broker, not one per partition: fetches share a connection, and per-
// partition long polls would queue behind each other.
//
// Partition fetchers join (add) when they are ready to mirror and leave
// (remove) to pause, stop, or re-resolve their leader; a partition's error
// removes it and is handed to its fetcher.
type brokerLoop struct {
	src      *source
	leader   int32
	maxWait  time.Duration
	maxBytes int32
	partMax  int32

	mu      sync.Mutex // guards members; held while appending for a member
	members map[tp]*fetcher
	wake    chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func newBrokerLoop(src *source, leader int32, maxWait time.Duration, maxBytes int32) *brokerLoop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &brokerLoop{src: src, leader: leader, maxWait: maxWait, maxBytes: maxBytes,
		partMax: min(maxBytes, 4<<20), members: map[tp]*fetcher{}, wake: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go l.run()
	return l
}

// waitMax is the long poll: the source's mirror.fetch.wait.max.ms as it is
// now (it may change while the mirror runs), else the loop's own.
func (l *brokerLoop) waitMax() time.Duration {
	if l.src.fetchWait != nil {
		return l.src.fetchWait()
	}
	return l.maxWait
}

func (l *brokerLoop) add(f *fetcher) {
	l.mu.Lock()
	l.members[f.k] = f
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// remove takes f out of the loop; when it returns, the loop is not
// appending for f and never will again (STOPPING relies on this).
func (l *brokerLoop) remove(f *fetcher) {
	l.mu.Lock()
	if l.members[f.k] == f {
		delete(l.members, f.k)
	}
	l.mu.Unlock()
}

func (l *brokerLoop) close() {
	l.cancel()
	<-l.done
}

type loopPart struct {
	f      *fetcher
	offset int64
}

func (l *brokerLoop) snapshot() []loopPart {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]loopPart, 0, len(l.members))
	for _, f := range l.members {
		out = append(out, loopPart{f: f, offset: f.p.Offsets().LogEnd})
	}
	return out
}

func (l *brokerLoop) run() {
	defer close(l.done)
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
		resp, err := l.fetch(parts)
		if l.ctx.Err() != nil {
			return
		}
		if err != nil {
			// The broker is unreachable or answered badly: every member
			// re-resolves its leader with backoff.
			for _, p := range parts {
				l.evict(p.f, err)
			}
			continue
		}
		changed, err := l.checkByName(parts, resp)
		if err != nil {
			for _, p := range parts {
				l.evict(p.f, err)
			}
			continue
		}
		l.dispatch(parts, resp, changed)
	}
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
		if p.f.topicID != ([16]byte{}) {
			withID[p.f.k.topic] = true
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
	f := parts[0].f
	return l.src.verifyTopicIDs(l.ctx, f.m, f.rt, topics)
}

func (l *brokerLoop) fetch(parts []loopPart) (*kmsg.FetchResponse, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(l.waitMax() / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = l.maxBytes
	req.IsolationLevel = 1 // read_committed: nothing past the source's LSO
	req.SessionEpoch = -1
	byTopic := map[string]int{}
	for _, p := range parts {
		i, ok := byTopic[p.f.k.topic]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.f.k.topic, p.f.topicID
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[p.f.k.topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.f.k.partition, p.offset, l.partMax
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
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

// dispatch appends each partition's batches (inline, like Kafka's fetcher
// thread, so the next fetch asks from the new end) and hands errors to the
// partitions' fetchers.
func (l *brokerLoop) dispatch(parts []loopPart, resp *kmsg.FetchResponse, changed map[string]error) {
	asked := make(map[tp]loopPart, len(parts))
	names := map[[16]byte]string{} // Fetch v13+ answers by topic id only
	for _, p := range parts {
		asked[p.f.k] = p
		names[p.f.topicID] = p.f.k.topic
	}
	for _, t := range resp.Topics {
		topic := t.Topic
		if topic == "" {
			topic = names[t.TopicID]
		}
		for _, rp := range t.Partitions {
			k := tp{topic, rp.Partition}
			p, ok := asked[k]
			if !ok {
				continue
			}
			delete(asked, k)
			if err := changed[topic]; err != nil {
				l.evict(p.f, err) // nothing of the recreated topic is appended
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				l.evict(p.f, err)
				continue
			}
			res := fetchResult{Records: rp.RecordBatches, HighWatermark: rp.HighWatermark,
				LastStable: rp.LastStableOffset, LogStart: rp.LogStartOffset}
			l.mu.Lock()
			if l.members[k] != p.f { // removed while fetching: drop
				l.mu.Unlock()
				continue
			}
			err := p.f.apply(res)
			l.mu.Unlock()
			if err != nil {
				l.evict(p.f, err)
			}
		}
	}
	for _, p := range asked {
		l.evict(p.f, fmt.Errorf("source fetch response lacks %s-%d", p.f.k.topic, p.f.k.partition))
	}
}

// evict removes f and tells it why.
func (l *brokerLoop) evict(f *fetcher, err error) {
	l.mu.Lock()
	member := l.members[f.k] == f
	if member {
		delete(l.members, f.k)
	}
	l.mu.Unlock()
	if member {
		f.evicted(err)
	}
}

// loop returns the broker loop for a leader, starting it on first use.
func (s *source) loop(leader int32, maxWait time.Duration, maxBytes int32) *brokerLoop {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loops == nil {
		s.loops = map[int32]*brokerLoop{}
	}
	l := s.loops[leader]
	if l == nil {
		l = newBrokerLoop(s, leader, maxWait, maxBytes)
		s.loops[leader] = l
	}
	return l
}
