package broker

// CreatePartitions, v0–v3.
//
// Grows a topic to Count partitions (never shrinks: INVALID_PARTITIONS). A
// manual assignment may name only this node.
//
// As Kafka's controller, a request that would add more than 10,000
// partitions in all is refused whole: every topic POLICY_VIOLATION,
// "Unable to perform excessively large batch operation." (Kafka's
// BoundedListTooLongException). max.broker.partitions applies as in
// CreateTopics.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleCreatePartitions(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	added := int64(0)
	for _, rt := range req.Topics {
		if ps := b.partitionsOf(rt.Topic); ps != nil && int(rt.Count) > len(ps) {
			added += int64(int(rt.Count) - len(ps))
		}
	}
	if added > maxPartitionsPerRequest {
		msg := msgTooManyAdded
		for _, rt := range req.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode, st.ErrorMessage = kerr.PolicyViolation.Code, &msg
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		for _, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != b.nodeID {
				err = fmt.Errorf("%w: assignment must name only broker %d", errReplication, b.nodeID)
			}
		}
		if err == nil {
			err = b.AddPartitions(rt.Topic, rt.Count, req.ValidateOnly)
		}
		st.ErrorCode = errorCode(err)
		st.ErrorMessage = errorMessage(err)
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
