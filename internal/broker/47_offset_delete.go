package broker

// OffsetDelete, v0.
//
// Deletes committed offsets of a group (durably, before the response). An
// Empty group loses any of them; a consumer group with members keeps those
// of topics a member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC); a
// non-consumer group with members answers NON_EMPTY_GROUP. Unknown topics
// or partitions answer UNKNOWN_TOPIC_OR_PARTITION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleOffsetDelete(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	var tps []coordinator.TopicPartition
	unknown := map[coordinator.TopicPartition]bool{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := coordinator.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if _, ok := b.Partition(t.Topic, p.Partition); !ok {
				unknown[tp] = true
				continue
			}
			tps = append(tps, tp)
		}
	}
	partErrs, top := b.groups.DeleteOffsets(req.Group, tps)
	if top != nil {
		resp.ErrorCode = errorCode(top)
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			tp := coordinator.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if unknown[tp] {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				rp.ErrorCode = errorCode(partErrs[tp])
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
