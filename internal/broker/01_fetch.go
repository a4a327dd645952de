package broker

// Fetch, v4–v18.
//
// Raw batches go from the log to the response without decoding records.
// The log checks a batch's CRC-32C only if this process has not verified
// it yet (first read after a clean open); damage found then answers
// KAFKA_STORAGE_ERROR. Kafka checks none when serving (internal/log,
// doc.go "Reads").
// Reads stop at the high watermark, or at the last stable offset for
// read_committed (IsolationLevel 1), which also gets the aborted
// transactions overlapping the returned range. MaxWaitMillis/MinBytes long
// polls wait for appends; MaxBytes (lowered to fetch.max.bytes) and
// PartitionMaxBytes bound the response, except that the first batch of the first non-empty partition is
// always returned whole (KIP-74). Topics are named by ID from v13.
//
// Fetch sessions (KIP-227, v7+) as Kafka serves them: full, incremental
// and sessionless fetches (fetch_plan.go) over a bounded session cache
// (fetch_session.go, max.incremental.fetch.session.cache.slots). READ on
// each topic is checked here, for the partitions a session holds as for
// the request's (fetchTopic), as Kafka checks it after building the
// fetch context. The CurrentLeaderEpoch of
// v9+ is checked (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH,
// partition.CheckLeaderEpoch). v17 and v18
// add only follower tagged fields (ReplicaDirectoryId, KIP-853; the
// replica's HighWatermark, KIP-1166) and leave the response as v16.

import (
	"context"
	"errors"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleFetch(ctx context.Context, r *protocol.Request) kmsg.Response {
	return b.fetch(ctx, r, nil)
}

// fetch serves a Fetch; faults, if set, answers a partition's injected
// error code (faults.go), 0 for none.
func (b *Broker) fetch(ctx context.Context, r *protocol.Request, faults func(topic string, partition int32) int16) kmsg.Response {
	req := r.Body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	plan := b.newFetchPlan(req, time.Now())
	plan.faults = faults
	if plan.errorCode != 0 {
		resp.ErrorCode = plan.errorCode
		return resp
	}
	b.readFetch(ctx, r, req, plan, resp)
	b.finishFetchPlan(plan, resp, r.Release, time.Now())
	return resp
}

// readFetch fills resp with the plan's partitions, waiting up to
// MaxWaitMillis for MinBytes.
func (b *Broker) readFetch(ctx context.Context, r *protocol.Request, req *kmsg.FetchRequest, plan *fetchPlan, resp *kmsg.FetchResponse) {
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	var waitOn []<-chan struct{}
	for {
		resp.Topics = resp.Topics[:0]
		r.Release() // the buffers of a previous try
		var total int
		var hadError bool
		total, waitOn, hadError = b.fetchOnce(r, req, plan, resp, waitOn[:0])
		if total >= int(req.MinBytes) || hadError || req.MaxWaitMillis <= 0 || len(waitOn) == 0 {
			return
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return
		}
		if !waitForAny(ctx, waitOn, wait) {
			// Deadline or shutdown: answer with what there is now.
			resp.Topics = resp.Topics[:0]
			r.Release()
			b.fetchOnce(r, req, plan, resp, waitOn[:0])
			return
		}
	}
}

// noRecords is the empty, non-null record set of a partition with
// nothing to return. It is never written to.
var noRecords = []byte{}

// fetchOnce fills resp from the logs, reading the record bytes into
// buffers from r.Buffer (released by the server once the response is
// encoded). It returns the record bytes gathered, the partitions' change
// channels (for a long poll, appended to waitOn), and whether a
// partition's read failed (answered at once, as Kafka's
// ReplicaManager.fetchMessages; an unknown or unauthorized topic is not a
// read and does not end the wait). An incremental fetch leaves out the
// partitions with nothing new (planPartition.mustRespond).
func (b *Broker) fetchOnce(r *protocol.Request, req *kmsg.FetchRequest, plan *fetchPlan, resp *kmsg.FetchResponse,
	waitOn []<-chan struct{}) (int, []<-chan struct{}, bool) {
	total := 0
	maxBytes := int(req.MaxBytes)
	if req.Version < 3 || maxBytes <= 0 {
		maxBytes = int(^uint32(0) >> 1)
	}
	// Kafka lowers MaxBytes to fetch.max.bytes; it also bounds what a
	// connection holds for a client that does not read its responses.
	maxBytes = min(maxBytes, int(b.cfg.Int32("fetch.max.bytes")))
	committed := req.IsolationLevel == 1
	hadError := false
	for ti := range plan.topics {
		pt := &plan.topics[ti]
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = pt.name, pt.id
		t, topicCode := b.fetchTopic(r, plan, pt)
		var parts []*partition.Partition
		if topicCode == 0 {
			parts = b.partitions(t)
		}
		var topicBytes int
		for pi := range pt.parts {
			pp := &pt.parts[pi]
			rp := &pp.req
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			n := 0
			var faultCode int16
			if plan.faults != nil && topicCode == 0 {
				faultCode = plan.faults(pt.name, rp.Partition)
			}
			switch {
			case topicCode != 0:
				sp.ErrorCode = topicCode
			case faultCode != 0:
				sp.ErrorCode = faultCode
				hadError = true
			case rp.Partition < 0 || int(rp.Partition) >= len(parts):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				p := parts[rp.Partition]
				waitOn = append(waitOn, p.Changed())
				limit := min(int(rp.PartitionMaxBytes), maxBytes-total)
				at := [2]int{len(resp.Topics), len(st.Partitions)}
				n = b.fetchPartition(r, p, rp, &sp, at, limit, total == 0, committed)
				total += n
				topicBytes += n
				if sp.ErrorCode != 0 {
					hadError = true
				}
			}
			pp.hw, pp.logStart, pp.code, pp.records = sp.HighWatermark, sp.LogStartOffset, sp.ErrorCode, n > 0
			pp.included = pp.mustRespond(plan.mode)
			if !pp.included {
				// Nothing read (a partition with records is always
				// included), so no record set refers to its index.
				continue
			}
			if sp.RecordBatches == nil {
				// Records is a nullable field and kmsg writes nil as
				// null (size -1). Kafka always sends an empty set (size
				// 0) when it has nothing; librdkafka rejects -1 ("invalid
				// MessageSetSize -1") and so never saw end of partition.
				sp.RecordBatches = noRecords
			}
			st.Partitions = append(st.Partitions, sp)
		}
		if topicBytes > 0 {
			b.metrics.BytesOutTopic.WithLabelValues(t.Name).Add(float64(topicBytes))
		}
		if len(st.Partitions) > 0 || plan.mode != planIncremental {
			resp.Topics = append(resp.Topics, st)
		}
	}
	return total, waitOn, hadError
}

// fetchTopic resolves a plan's topic and checks READ on it, in Kafka's
// order (KafkaApis.handleFetchRequest): an ID not known when the
// partition entered the plan answers UNKNOWN_TOPIC_ID; a denied topic
// TOPIC_AUTHORIZATION_FAILED (a follower's fetch was authorized as a
// whole, CLUSTER_ACTION, authz_apply.go); a topic that no longer exists
// UNKNOWN_TOPIC_OR_PARTITION; in a session that uses topic IDs, a name
// now held by another topic (deleted and re-created) INCONSISTENT_TOPIC_ID.
func (b *Broker) fetchTopic(r *protocol.Request, plan *fetchPlan, pt *planTopic) (*Topic, int16) {
	var (
		t  *Topic
		ok bool
	)
	if plan.usesTopicIDs {
		t, ok = b.topicByID(pt.id)
		if ok {
			pt.name = t.Name
		}
	} else {
		t, ok = b.Topic(pt.name)
	}
	switch {
	case pt.name == "":
		if plan.usesTopicIDs {
			return nil, kerr.UnknownTopicID.Code
		}
		return nil, kerr.UnknownTopicOrPartition.Code
	case !plan.privileged && !b.authorizedTopic(r, pt.name, aclRead):
		return nil, codeTopic
	case ok:
		return t, 0
	}
	if _, exists := b.Topic(pt.name); exists && plan.usesTopicIDs {
		return nil, kerr.InconsistentTopicID.Code
	}
	return nil, kerr.UnknownTopicOrPartition.Code
}

// fetchPartition reads one partition's share into sp, at index at (topic,
// partition) in the response. When the server can send files, a record
// set of protocol.SendFileMin bytes or more that the log can leave in the
// segment file (log.ReadSpan) is sent from it with sendfile(2), Kafka's
// zero-copy fetch.
func (b *Broker) fetchPartition(r *protocol.Request, p *partition.Partition, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition,
	at [2]int, limit int, first, committed bool) int {
	if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
		sp.ErrorCode = errorCode(err)
		return 0
	}
	var res partition.ReadResult
	var err error
	if r.SendsFiles() {
		res, err = p.ReadSpan(r.Buffer, rp.FetchOffset, max(limit, 0), first, committed, protocol.SendFileMin)
	} else {
		res, err = p.ReadInto(r.Buffer, rp.FetchOffset, max(limit, 0), first, committed)
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.LastStable, res.LogStart
	if err != nil {
		sp.ErrorCode = errorCode(err)
		if !errors.Is(err, mlog.ErrOffsetOutOfRange) {
			b.logger.Sugar().Warnw("fetch read failed", "topic", p.Topic, "partition", p.Index, "error", err)
		}
		return 0
	}
	n := len(res.Records)
	sp.RecordBatches = res.Records
	if s := res.Span; s.File != nil {
		r.AddFileRecords(at[0], at[1], s.File, s.Pos, s.Len, s)
		n = s.Len
	}
	if committed {
		sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, 0, len(res.Aborted))
		for _, a := range res.Aborted {
			sp.AbortedTransactions = append(sp.AbortedTransactions,
				kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
		}
	}
	return n
}

// waitForAny blocks until one channel is closed (true), or the timeout or
// ctx ends (false).
func waitForAny(ctx context.Context, chans []<-chan struct{}, timeout time.Duration) bool {
	defer noteFetchWait(ctx, time.Now()) // not request time (quotas.go)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return true
		case <-timer.C:
		case <-ctx.Done():
		}
		return false
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, c := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen >= 2
}
