package broker

// Heartbeat, v0–v4.
//
// Keeps a member's session alive. REBALANCE_IN_PROGRESS tells it to rejoin;
// UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION and FENCED_INSTANCE_ID (v3+) as
// Kafka answers them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleHeartbeat(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if b.shares.Exists(req.Group) {
		resp.ErrorCode = kerr.UnknownMemberID.Code // a share group: Kafka's classicGroupHeartbeat
		return resp
	}
	resp.ErrorCode = errorCode(b.groups.Heartbeat(req.Group, req.MemberID, strOrEmpty(req.InstanceID), req.Generation))
	return resp
}
