package broker

// LeaveGroup, v0–v5.
//
// v0–v2 name one member (its error is the top-level error); v3+ batch
// members by member id and/or group instance id with an error each
// (top-level NONE), as Kafka does. The Reason (v5) is ignored.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleLeaveGroup(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if r.Version < 3 {
		errs := b.groups.Leave(req.Group, []coordinator.LeaveMember{{MemberID: req.MemberID}})
		resp.ErrorCode = errorCode(errs[0])
		return resp
	}
	leaving := make([]coordinator.LeaveMember, len(req.Members))
	for i, m := range req.Members {
		leaving[i] = coordinator.LeaveMember{MemberID: m.MemberID, InstanceID: strOrEmpty(m.InstanceID)}
	}
	errs := b.groups.Leave(req.Group, leaving)
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, errorCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
