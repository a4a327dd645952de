package broker

// SyncGroup, v0–v5.
//
// Followers wait (only this request) until the leader's SyncGroup brings
// the assignment; the leader's is persisted before anyone is answered. v5
// checks the protocol type and name against the group's
// (INCONSISTENT_GROUP_PROTOCOL) and returns them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleSyncGroup(ctx context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if b.shares.Exists(req.Group) {
		resp.ErrorCode = kerr.UnknownMemberID.Code // a share group: Kafka's classicGroupSync
		resp.MemberAssignment = []byte{}
		return resp
	}
	sr := coordinator.SyncRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: strOrEmpty(req.InstanceID),
		Generation: req.Generation, ProtocolType: req.ProtocolType, Protocol: req.Protocol,
		Assignments: map[string][]byte{},
	}
	for _, a := range req.GroupAssignment {
		sr.Assignments[a.MemberID] = append([]byte{}, a.MemberAssignment...)
	}
	res := b.groups.Sync(ctx, sr)
	resp.ErrorCode = errorCode(res.Err)
	resp.MemberAssignment = res.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	if res.Err == nil {
		pt, p := res.ProtocolType, res.Protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
	}
	return resp
}
