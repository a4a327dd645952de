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
// Fetch sessions (KIP-227) are declined: every response carries session id
// 0, so clients send full fetches, which Kafka allows. A request naming a
// session id answers FETCH_SESSION_ID_NOT_FOUND. The CurrentLeaderEpoch of
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
	req := r.Body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.Version >= 7 && req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp
	}
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	for {
		resp.Topics = resp.Topics[:0]
		r.Release() // the buffers of a previous try
		total, waitOn, hadError := b.fetchOnce(r, req, resp)
		if total >= int(req.MinBytes) || hadError || req.MaxWaitMillis <= 0 || len(waitOn) == 0 {
			return resp
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return resp
		}
		if !waitForAny(ctx, waitOn, wait) {
			// Deadline or shutdown: answer with what there is now.
			resp.Topics = resp.Topics[:0]
			r.Release()
			b.fetchOnce(r, req, resp)
			return resp
		}
	}
}

// noRecords is the empty, non-null record set of a partition with
// nothing to return. It is never written to.
var noRecords = []byte{}

// fetchOnce fills resp from the logs, reading the record bytes into
// buffers from r.Buffer (released by the server once the response is
// encoded). It returns the record bytes gathered, the partitions' change
// channels (for a long poll), and whether any partition answered with an
// error.
func (b *Broker) fetchOnce(r *protocol.Request, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) (int, []<-chan struct{}, bool) {
	total := 0
	maxBytes := int(req.MaxBytes)
	if req.Version < 3 || maxBytes <= 0 {
		maxBytes = int(^uint32(0) >> 1)
	}
	// Kafka lowers MaxBytes to fetch.max.bytes; it also bounds what a
	// connection holds for a client that does not read its responses.
	maxBytes = min(maxBytes, int(b.cfg.Int32("fetch.max.bytes")))
	committed := req.IsolationLevel == 1
	var waitOn []<-chan struct{}
	hadError := false
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var (
			t  *Topic
			ok bool
		)
		if req.Version >= 13 {
			t, ok = b.topicByID(rt.TopicID)
		} else {
			t, ok = b.Topic(rt.Topic)
		}
		var parts []*partition.Partition
		if ok {
			parts = b.partitions(t)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			switch {
			case !ok && req.Version >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case !ok || rp.Partition < 0 || int(rp.Partition) >= len(parts):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				p := parts[rp.Partition]
				waitOn = append(waitOn, p.Changed())
				limit := min(int(rp.PartitionMaxBytes), maxBytes-total)
				at := [2]int{len(resp.Topics), len(st.Partitions)}
				n := b.fetchPartition(r, p, rp, &sp, at, limit, total == 0, committed)
				total += n
				if n > 0 {
					b.metrics.BytesOutTopic.WithLabelValues(t.Name).Add(float64(n))
				}
			}
			if sp.ErrorCode != 0 {
				hadError = true
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
		resp.Topics = append(resp.Topics, st)
	}
	return total, waitOn, hadError
}

// fetchPartition reads one partition's share into sp, at index at (topic,
// partition) in the response. When the server can send files, a record
// set of protocol.SendFileMin bytes or more that the log can leave in the
// segment file (log.ReadSpan) is sent from it with sendfile(2), Kafka's
// zero-copy fetch.
func (b *Broker) fetchPartition(r *protocol.Request, p *partition.Partition, rp kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition,
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
