package broker

// ShareGroupHeartbeat, v1 (KIP-932 share groups; Kafka 4.1's range: v0
// was the early-access version, removed).
//
// One request joins (member epoch 0, with the client's own member id and
// its subscribed topics), heartbeats, or leaves (-1) a share group. The
// share coordinator (internal/share) assigns the subscribed topics'
// partitions, several members to a partition when there are more members
// than partitions, and answers the member's epoch, the heartbeat interval
// and, on a full request or a change, its assignment. A group id held by
// a classic or consumer group answers GROUP_ID_NOT_FOUND.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/share"
)

func (b *Broker) handleShareGroupHeartbeat(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	if req.GroupID == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	if b.nonShareGroupExists(req.GroupID) {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	interval := b.shareGroupMs(req.GroupID, "share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms")
	res := b.shares.Heartbeat(share.HeartbeatRequest{
		Group: req.GroupID, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, Rack: req.RackID,
		Topics: req.SubscribedTopicNames, ClientID: r.ClientID, ClientHost: clientHost(r),
		SessionTimeout:      b.shareGroupMs(req.GroupID, "share.session.timeout.ms", "group.share.session.timeout.ms"),
		HeartbeatIntervalMs: int32(interval.Milliseconds()),
	})
	if res.Err != nil {
		resp.ErrorCode = res.Err.Code
		return resp
	}
	resp.MemberID = kmsg.StringPtr(req.MemberID)
	resp.MemberEpoch, resp.HeartbeatIntervalMillis = res.MemberEpoch, res.HeartbeatIntervalMs
	if res.HasAssign {
		a := new(kmsg.ShareGroupHeartbeatResponseAssignment)
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for id, ps := range res.Assignment {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = id, ps
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = a
	}
	return resp
}
