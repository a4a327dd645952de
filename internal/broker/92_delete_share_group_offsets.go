package broker

// DeleteShareGroupOffsets, v0.
//
// Forgets a share group's state for whole topics (the group must have no
// members: NON_EMPTY_GROUP; GROUP_ID_NOT_FOUND for no share group).
// DELETE on the group is the rule (authz_table.go); READ on each topic is
// checked here.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/share"
)

func (b *Broker) handleDeleteShareGroupOffsets(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	codes := map[string]int16{}
	var tps []share.TP
	byTopic := map[string][]share.TP{}
	for _, t := range req.Topics {
		tt, ok := b.Topic(t.Topic)
		switch {
		case !b.authorizedTopic(r, t.Topic, aclRead):
			codes[t.Topic] = codeTopic
		case !ok:
			codes[t.Topic] = kerr.UnknownTopicOrPartition.Code
		default:
			for p := range tt.Partitions {
				tp := share.TP{Topic: tt.ID, Partition: int32(p)}
				tps = append(tps, tp)
				byTopic[t.Topic] = append(byTopic[t.Topic], tp)
			}
		}
	}
	res, e := b.shares.DeleteOffsets(req.GroupID, tps)
	if e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		if tt, ok := b.Topic(t.Topic); ok {
			rt.TopicID = tt.ID
		}
		if c, ok := codes[t.Topic]; ok {
			rt.ErrorCode = c
		}
		for _, tp := range byTopic[t.Topic] {
			if err := res[tp]; err != nil && rt.ErrorCode == 0 {
				rt.ErrorCode = err.Code
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
