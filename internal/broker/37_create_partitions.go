package broker

// CreatePartitions, v0–v3.
//
// Grows a topic to Count partitions (never shrinks: INVALID_PARTITIONS). A
// manual assignment may name only this node.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleCreatePartitions(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
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
