package broker

// ShareFetch, v1–v2 (KIP-932; v1 KIP-1206's MaxRecords and BatchSize,
// v2 KIP-1222's IsRenewAck).
//
// A member fetches its share session's partitions (epoch 0 opens the
// session, a positive epoch adds Topics and drops ForgottenTopicsData,
// -1 closes it and releases what the member holds there; so does the
// close of the connection that opened it). Piggybacked
// acknowledgements are applied first, and stored durably before the
// answer (share.Coordinator.Ack). Then, per partition, the records from
// the share partition's fetch offset are read from the log (up to the
// high watermark, or the last stable offset when the group's
// share.isolation.level is read_committed), and the AVAILABLE ones are
// acquired for the member under an acquisition lock, at most MaxRecords
// over the request; control batches and, under read_committed, aborted
// transactions' records are archived, never delivered. With nothing
// acquired the request waits up to MaxWait for records to arrive or be
// released. READ on the group is the rule (authz_table.go); READ on each
// topic is checked here (TOPIC_AUTHORIZATION_FAILED per partition).

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/share"
)

// defShareMaxRecords is the MaxRecords a request without one gets
// (KIP-1206's default).
const defShareMaxRecords = 500

func (b *Broker) handleShareFetch(ctx context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	group, member := derefString(req.GroupID), derefString(req.MemberID)
	resp.AcquisitionLockTimeoutMillis = int32(b.sharePartitionConfig(group).LockDuration.Milliseconds())
	if group == "" || member == "" || len(member) > 36 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	renew := req.Version >= 2 && req.IsRenewAck
	if renew && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	out := newShareFetchOut(resp)
	var add []share.TP
	acks := map[share.TP][]share.AckBatch{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := share.TP{Topic: t.TopicID, Partition: p.Partition}
			if len(p.AcknowledgementBatches) > 0 {
				for _, ab := range p.AcknowledgementBatches {
					acks[tp] = append(acks[tp], share.AckBatch{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
				}
			} else if renew {
				resp.ErrorCode = kerr.InvalidRequest.Code
				return resp
			}
			add = append(add, tp)
		}
	}
	var forget []share.TP
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, share.TP{Topic: t.TopicID, Partition: p})
		}
	}
	if req.ShareSessionEpoch == -1 {
		b.shareAcks(r, group, member, acks, renew, func(tp share.TP, code int16) { out.part(tp).AcknowledgeErrorCode = code })
		if e := b.shares.CloseSession(group, member); e != nil {
			resp.ErrorCode = e.Code
		}
		return resp
	}
	if req.ShareSessionEpoch == 0 && b.nonShareGroupExists(group) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	parts, e := b.shares.UpdateSession(group, member, req.ShareSessionEpoch, add, forget, len(acks) > 0)
	if e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	if req.ShareSessionEpoch == 0 && r.Session != nil && b.shares.BindSession(group, member, r.Session) {
		// The connection's end ends its share sessions and releases
		// their records (ctx ends with the connection).
		conn := r.Session
		context.AfterFunc(ctx, func() { b.shares.ConnClosed(conn) })
	}
	b.shareAcks(r, group, member, acks, renew, func(tp share.TP, code int16) { out.part(tp).AcknowledgeErrorCode = code })
	if renew {
		return resp
	}
	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defShareMaxRecords
	}
	wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	deadline := time.Now().Add(wait)
	for {
		changed := b.shares.Changed()
		var chans []<-chan struct{}
		got := 0
		for _, tp := range parts {
			sp := out.part(tp)
			p, code := b.sharePartition(r, tp)
			if code != 0 {
				sp.ErrorCode = code
				continue
			}
			chans = append(chans, p.Changed())
			n := b.shareAcquire(group, member, tp, p, maxRecords-got, int(req.MaxBytes), sp)
			got += n
			if got >= maxRecords {
				break
			}
		}
		if got > 0 || wait <= 0 || len(chans) == 0 {
			break
		}
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		chans = append(chans, changed)
		if !waitForAny(ctx, chans, left) {
			break
		}
	}
	return resp
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// shareFetchOut builds a ShareFetch response, one entry per partition.
type shareFetchOut struct {
	resp  *kmsg.ShareFetchResponse
	index map[share.TP][2]int
}

func newShareFetchOut(resp *kmsg.ShareFetchResponse) *shareFetchOut {
	return &shareFetchOut{resp: resp, index: map[share.TP][2]int{}}
}

func (o *shareFetchOut) part(tp share.TP) *kmsg.ShareFetchResponseTopicPartition {
	if at, ok := o.index[tp]; ok {
		return &o.resp.Topics[at[0]].Partitions[at[1]]
	}
	ti := -1
	for i := range o.resp.Topics {
		if o.resp.Topics[i].TopicID == tp.Topic {
			ti = i
			break
		}
	}
	if ti < 0 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = tp.Topic
		o.resp.Topics = append(o.resp.Topics, t)
		ti = len(o.resp.Topics) - 1
	}
	sp := kmsg.NewShareFetchResponseTopicPartition()
	sp.Partition = tp.Partition
	sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
	o.resp.Topics[ti].Partitions = append(o.resp.Topics[ti].Partitions, sp)
	o.index[tp] = [2]int{ti, len(o.resp.Topics[ti].Partitions) - 1}
	return &o.resp.Topics[ti].Partitions[len(o.resp.Topics[ti].Partitions)-1]
}

// sharePartition finds tp's partition, checking READ on its topic.
func (b *Broker) sharePartition(r *protocol.Request, tp share.TP) (*partition.Partition, int16) {
	t, ok := b.topicByID(tp.Topic)
	switch {
	case !ok:
		return nil, kerr.UnknownTopicID.Code
	case !b.authorizedTopic(r, t.Name, aclRead):
		return nil, codeTopic
	}
	p, ok := b.Partition(t.Name, tp.Partition)
	if !ok {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	return p, 0
}

// shareAcks applies acknowledgements per partition, reporting each
// partition's code (0: applied and stored).
func (b *Broker) shareAcks(r *protocol.Request, group, member string, acks map[share.TP][]share.AckBatch, renew bool, report func(share.TP, int16)) {
	tps := make([]share.TP, 0, len(acks))
	for tp := range acks {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].Partition < tps[j].Partition })
	for _, tp := range tps {
		if _, code := b.sharePartition(r, tp); code != 0 {
			report(tp, code)
			continue
		}
		code := int16(0)
		if e := b.shares.Ack(group, tp, member, acks[tp], renew); e != nil {
			code = e.Code
		}
		report(tp, code)
	}
}

// shareAcquire acquires up to max records of p for member into sp and
// returns how many.
func (b *Broker) shareAcquire(group, member string, tp share.TP, p *partition.Partition, max, maxBytes int, sp *kmsg.ShareFetchResponseTopicPartition) int {
	if max <= 0 {
		return 0
	}
	committed := b.shareGroupSetting(group, "share.isolation.level", "") == "read_committed"
	o := p.Offsets()
	lv := share.LogView{LogStart: o.LogStart, Limit: o.HighWatermark,
		InitialFn: func() int64 {
			return shareResetOffset(b.shareGroupSetting(group, "share.auto.offset.reset", ""), p, o, time.Now())
		}}
	if committed {
		lv.Limit = o.LastStable
	}
	from, ok := b.shares.Prepare(group, tp, b.sharePartitionConfig(group), lv)
	if !ok {
		return 0
	}
	if maxBytes <= 0 {
		maxBytes = 1 << 20
	}
	// The log is read in chunks, growing from shareReadChunk, until max
	// records are acquired, the window is full, the limit or maxBytes is
	// reached: a client's MaxBytes (kgo: 50 MiB) would otherwise read and
	// walk the whole backlog for each request of MaxRecords (500).
	n := 0
	open := map[int64]bool{} // producers whose aborted transaction is under way
	for chunk := shareReadChunk; n < max && maxBytes > 0; chunk *= 2 {
		res, err := p.Read(from, min(chunk, maxBytes), true, committed)
		if err != nil {
			sp.ErrorCode = errorCode(err)
			return n
		}
		if len(res.Records) == 0 {
			break
		}
		maxBytes -= len(res.Records)
		got, next, more := b.shareAcquireRead(group, member, tp, max-n, from, lv.Limit, committed, res, open, sp)
		n += got
		if !more || next >= lv.Limit || next <= from {
			break
		}
		from = next
	}
	return n
}

// shareReadChunk is the first read of a share fetch's partition; each
// further read of the same fetch doubles it.
const shareReadChunk = 64 << 10

// shareAcquireRead acquires up to max records for member among the
// batches of one read (which began at from), adding the acquired ranges
// and the batches holding them to sp. It returns how many were
// acquired, the offset after the read's last batch, and whether the
// share partition could acquire more past it (window room, max not
// reached).
func (b *Broker) shareAcquireRead(group, member string, tp share.TP, max int, from, limit int64, committed bool, res partition.ReadResult, open map[int64]bool, sp *kmsg.ShareFetchResponseTopicPartition) (int, int64, bool) {
	type raw struct {
		first, last int64
		bytes       []byte
	}
	var raws []raw
	var batches []share.Batch
	aborted := res.Aborted
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	next := from
	it := batch.NewIter(res.Records)
	for {
		rb, h, ok := it.Next()
		if !ok {
			break
		}
		for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
			open[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		control := h.Attributes&0x20 != 0
		txn := h.Attributes&0x10 != 0
		skip := control || (committed && txn && open[h.ProducerID])
		if control {
			delete(open, h.ProducerID)
		}
		batches = append(batches, share.Batch{First: h.BaseOffset, Last: h.LastOffset(), Skip: skip})
		raws = append(raws, raw{h.BaseOffset, h.LastOffset(), rb})
		next = h.LastOffset() + 1
	}
	ranges, more := b.shares.Acquire(group, tp, member, max, from, limit, batches)
	n := 0
	for _, rg := range ranges {
		ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
		ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = rg.First, rg.Last, rg.DeliveryCount
		sp.AcquiredRecords = append(sp.AcquiredRecords, ar)
		n += int(rg.Last - rg.First + 1)
	}
	// Only the batches holding acquired records are sent.
	for _, rw := range raws {
		for _, rg := range ranges {
			if rw.first <= rg.Last && rw.last >= rg.First {
				sp.Records = append(sp.Records, rw.bytes...)
				break
			}
		}
	}
	return n, next, more && n < max
}
