package broker

// ListOffsets, v1–v10 (v0 too with client.protocol.version=3.9).
//
// v0 (Kafka 3.9's handleListOffsetRequestV0, UnifiedLog
// .legacyFetchOffsetsBefore): an array of up to MaxNumOffsets offsets,
// newest first, from the segments' base offsets (at least the log start)
// and, when the active segment is not empty, the log end offset: -1
// starts from the newest, -2 is the oldest alone, a timestamp starts from
// the newest segment last modified at or before it. For a consumer
// (replica id -1) offsets above the high watermark are replaced by the
// high watermark. Timestamps below -2 are UNSUPPORTED_VERSION. A negative
// MaxNumOffsets answers no offsets (Kafka fails it as an unknown error).
//
// -1 latest (the high watermark, or the last stable offset for
// read_committed), -2 earliest (log start), -3 the offset of the largest
// timestamp (v7+), -4 earliest local (v8; no tiered storage, so the log
// start), -5 latest tiered (v9, KIP-1005: no tiered storage, so offset -1
// with epoch -1, as Kafka's UnifiedLog answers when remote storage is off),
// a timestamp ≥ 0 the first offset at or after it (-1/-1 when none). v10's
// TimeoutMs (KIP-1075) bounds remote-storage lookups; there are none. v11
// (-6, earliest pending upload) is not served. The leader epoch answered is the epoch of the batch holding the
// offset. CurrentLeaderEpoch (v4+) is checked as in Fetch
// (partition.CheckLeaderEpoch).

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleListOffsets(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		parts := b.partitionsOf(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			if p := parts.at(rp.Partition); p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if req.Version == 0 {
				legacyListOffsets(p, rp, req.ReplicaID == -1, &sp)
			} else {
				listOffset(p, rp, req.IsolationLevel == 1, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func listOffset(p *partition.Partition, rp kmsg.ListOffsetsRequestTopicPartition, committed bool, sp *kmsg.ListOffsetsResponseTopicPartition) {
	if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
		sp.ErrorCode = errorCode(err)
		return
	}
	cur := p.LeaderEpoch()
	o := p.Offsets()
	switch ts := rp.Timestamp; {
	case ts == -1:
		sp.Offset = o.HighWatermark
		if committed {
			sp.Offset = o.LastStable
		}
		sp.LeaderEpoch = cur
	case ts == -2 || ts == -4:
		sp.Offset = o.LogStart
		sp.LeaderEpoch = p.EpochAt(o.LogStart)
	case ts == -5:
		// Already -1/-1/-1: nothing is tiered.
	case ts == -3:
		off, maxTs := p.MaxTimestamp()
		if off >= 0 && off < o.HighWatermark {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, maxTs, p.EpochAt(off)
		}
	case ts >= 0:
		if off, found, ok := p.OffsetForTimestamp(ts); ok && off < o.HighWatermark {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, found, p.EpochAt(off)
		}
	default:
		sp.ErrorCode = kerr.InvalidRequest.Code
	}
}

// legacyListOffsets answers one partition of a ListOffsets v0 request.
func legacyListOffsets(p *partition.Partition, rp kmsg.ListOffsetsRequestTopicPartition, consumer bool, sp *kmsg.ListOffsetsResponseTopicPartition) {
	if rp.Timestamp < -2 {
		sp.ErrorCode = kerr.UnsupportedVersion.Code
		return
	}
	if err := p.Offline(); err != nil {
		sp.ErrorCode = errorCode(err)
		return
	}
	o := p.Offsets()
	segs := p.SegmentStats()
	type offsetTime struct {
		offset int64
		time   time.Time
	}
	var candidates []offsetTime
	for _, s := range segs {
		candidates = append(candidates, offsetTime{max(s.Base, o.LogStart), s.LastModified})
	}
	if n := len(segs); n > 0 && segs[n-1].Size > 0 {
		candidates = append(candidates, offsetTime{o.LogEnd, time.Now()})
	}
	start := len(candidates) - 1
	switch rp.Timestamp {
	case -1:
	case -2:
		start = min(0, len(candidates)-1) // no segment (a log being reset): none
	default:
		for start >= 0 && candidates[start].time.UnixMilli() > rp.Timestamp {
			start--
		}
	}
	n := max(min(int(rp.MaxNumOffsets), start+1), 0)
	offsets := make([]int64, 0, n+1)
	for j := 0; j < n; j++ {
		offsets = append(offsets, candidates[start-j].offset)
	}
	slices.SortFunc(offsets, func(a, b int64) int { return cmp.Compare(b, a) })
	if consumer && len(offsets) > 0 && offsets[0] > o.HighWatermark {
		i := 0
		for i < len(offsets) && offsets[i] > o.HighWatermark {
			i++
		}
		offsets = append([]int64{o.HighWatermark}, offsets[i:]...)
	}
	sp.OldStyleOffsets = offsets
}
