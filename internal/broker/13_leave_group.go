package broker

// LeaveGroup, v0–v5.
//
// v0–v2 name one member (its error is the top-level error); v3+ batch
// members by member id and/or group instance id with an error each
// (top-level NONE), as Kafka does. An unknown group is a top-level
// UNKNOWN_MEMBER_ID (Kafka's current coordinator; the old one answered
// per member). The Reason (v5) is ignored.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleLeaveGroup(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if b.shares.Exists(req.Group) {
		resp.ErrorCode = kerr.UnknownMemberID.Code // a share group: Kafka's classicGroupLeave
		return resp
	}
	if r.Version < 3 {
		errs, top := b.groups.Leave(req.Group, []coordinator.LeaveMember{{MemberID: req.MemberID}})
		if top == nil {
			top = errs[0]
		}
		resp.ErrorCode = errorCode(top)
		return resp
	}
	leaving := make([]coordinator.LeaveMember, len(req.Members))
	for i, m := range req.Members {
		leaving[i] = coordinator.LeaveMember{MemberID: m.MemberID, InstanceID: strOrEmpty(m.InstanceID)}
	}
	errs, top := b.groups.Leave(req.Group, leaving)
	if top != nil {
		resp.ErrorCode = errorCode(top)
		return resp
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, errorCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
