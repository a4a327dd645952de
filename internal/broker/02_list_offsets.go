package broker

// ListOffsets, v1–v10.
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
	"context"

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
