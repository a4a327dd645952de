package broker

// OffsetForLeaderEpoch, v2–v4.
//
// For each partition: the largest epoch ≤ the requested one present in the
// leader-epoch cache and the end offset of that epoch (the start of the next
// epoch, or the log end for the latest), as Kafka's leader answers it.
// Consumers use it to detect truncation; mirrors use it to find where a
// local log diverges from its source (failback). CurrentLeaderEpoch is
// checked as in Fetch (partition.CheckLeaderEpoch).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		parts := b.partitionsOf(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p := parts.at(rp.Partition)
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if err := p.CheckLeaderEpoch(rp.CurrentLeaderEpoch); err != nil {
				sp.ErrorCode = errorCode(err)
			} else {
				cur := p.LeaderEpoch()
				sp.LeaderEpoch, sp.EndOffset = p.EndOffsetForEpoch(rp.LeaderEpoch)
				if rp.LeaderEpoch == cur && sp.LeaderEpoch < cur {
					// The current epoch has no batch yet: it ends at the log end.
					sp.LeaderEpoch, sp.EndOffset = cur, p.Offsets().LogEnd
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
