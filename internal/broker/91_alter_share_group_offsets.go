package broker

// AlterShareGroupOffsets, v0.
//
// Sets share partitions' start offsets of a share group with no members
// (NON_EMPTY_GROUP otherwise; a group that does not exist is created),
// each stored durably before the answer. READ on the group is the rule
// (authz_table.go); READ on each topic is checked here.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/share"
)

func (b *Broker) handleAlterShareGroupOffsets(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if b.nonShareGroupExists(req.GroupID) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	offsets := map[share.TP]int64{}
	codes := map[string]map[int32]int16{}
	ids := map[string][16]byte{}
	for _, t := range req.Topics {
		codes[t.Topic] = map[int32]int16{}
		tt, ok := b.Topic(t.Topic)
		for _, p := range t.Partitions {
			switch {
			case !b.authorizedTopic(r, t.Topic, aclRead):
				codes[t.Topic][p.Partition] = codeTopic
			case !ok || p.Partition < 0 || int(p.Partition) >= len(tt.Partitions):
				codes[t.Topic][p.Partition] = kerr.UnknownTopicOrPartition.Code
			case p.StartOffset < 0:
				codes[t.Topic][p.Partition] = kerr.InvalidRequest.Code
			default:
				ids[t.Topic] = tt.ID
				offsets[share.TP{Topic: tt.ID, Partition: p.Partition}] = p.StartOffset
			}
		}
	}
	res, e := b.shares.AlterOffsets(req.GroupID, offsets)
	if e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, ids[t.Topic]
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			if c, ok := codes[t.Topic][p.Partition]; ok {
				rp.ErrorCode = c
			} else if err := res[share.TP{Topic: ids[t.Topic], Partition: p.Partition}]; err != nil {
				rp.ErrorCode = err.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
