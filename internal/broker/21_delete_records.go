package broker

// DeleteRecords, v0–v2.
//
// Advances a partition's log start offset to Offset (-1: the high
// watermark), deleting whole segments below it. An offset past the high
// watermark answers OFFSET_OUT_OF_RANGE; a mirrored partition refuses (it
// is read-only).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDeleteRecords(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		parts := b.partitionsOf(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			if p := parts.at(rp.Partition); p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if coordinatorTopic(rt.Topic) {
				// Kafka's ReplicaManager.deleteRecordsOnLocalLog.
				sp.ErrorCode = errorCode(errInternalDeleteRecords(rt.Topic))
			} else {
				low, err := p.DeleteRecordsBefore(rp.Offset)
				sp.LowWatermark, sp.ErrorCode = low, errorCode(err)
				if err != nil {
					sp.LowWatermark = -1
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
