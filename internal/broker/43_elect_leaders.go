package broker

// ElectLeaders, v0–v2 (KIP-183, KIP-460), as a one-node KRaft cluster's
// controller answers it (ReplicationControlManager.electLeaders).
//
// This node is every partition's only replica, its preferred leader and
// its leader, so no election is ever needed: each named partition that
// exists answers ELECTION_NOT_NEEDED, for PREFERRED and UNCLEAN alike; an
// unknown topic or partition answers UNKNOWN_TOPIC_OR_PARTITION. A null
// topic list asks for every partition: as Kafka, every topic is listed,
// without the partitions that needed no election (so with none). An
// election type other than PREFERRED (0) or UNCLEAN (1) is
// INVALID_REQUEST for every partition and at the top (v1+). ALTER on the
// cluster is checked before (authz_table.go).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleElectLeaders(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.Topics == nil {
		for _, name := range b.TopicNames() {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = name
			rt.Partitions = []kmsg.ElectLeadersResponseTopicPartition{}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	invalid := req.Version >= 1 && req.ElectionType != 0 && req.ElectionType != 1
	if invalid {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, idx := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = idx
			switch _, ok := b.partitionOf(t.Topic, idx); {
			case invalid:
				rp.ErrorCode = kerr.InvalidRequest.Code
				rp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Unknown election type %d", req.ElectionType))
			case !ok:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("No such partition as %s-%d", t.Topic, idx))
			default:
				rp.ErrorCode = kerr.ElectionNotNeeded.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
