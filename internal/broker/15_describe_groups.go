package broker

// DescribeGroups, v0–v6.
//
// An unknown group is described as Dead with no members and error NONE,
// as Kafka's classic coordinator does before v6; from v6 (KIP-1043) it
// also carries GROUP_ID_NOT_FOUND and an error message, as Kafka 4.0's. Member metadata and
// assignments, and the protocol, are shown only for a Stable group (as
// Kafka). Authorized operations (v3+, KIP-430) are those of
// acl.GroupOperations the principal may perform (READ, DESCRIBE, DELETE:
// Kafka 3.x's; Kafka 4.0 adds DESCRIBE_CONFIGS and ALTER_CONFIGS with group
// configs, which minibroker does not have); a group answered with an error
// keeps the "not requested" value, as in Kafka. A KIP-848 consumer group
// is described as Kafka 4's classic DescribeGroups path answers it: Dead,
// with GROUP_ID_NOT_FOUND "Group <id> is not a classic group." from v6
// (ConsumerGroupDescribe describes it).

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/acl"
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDescribeGroups(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		d := b.groups.DescribeGroup(id)
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.State, rg.ProtocolType, rg.Protocol = id, d.State.String(), d.ProtocolType, d.Protocol
		rg.AuthorizedOperations = math.MinInt32
		if !b.authorizedGroup(r, id, kmsg.ACLOperationDescribe) {
			rg.ErrorCode, rg.State, rg.ProtocolType, rg.Protocol = kerr.GroupAuthorizationFailed.Code, "", "", ""
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if req.Version >= 6 && d.State == coordinator.StateDead {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			rg.ErrorMessage = kmsg.StringPtr("Group " + id + " not found.")
			if d.Err != nil {
				// A KIP-848 consumer group: not a classic group.
				rg.ErrorMessage = errorMessage(d.Err)
			}
		}
		// Only a group answered without an error reports its
		// operations (Kafka).
		if req.Version >= 3 && req.IncludeAuthorizedOperations && rg.ErrorCode == 0 {
			rg.AuthorizedOperations = b.authorizedOps(r, kmsg.ACLResourceTypeGroup, id, acl.GroupOperations)
		}
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.ClientID, rm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
			rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata, m.Assignment
			if rm.ProtocolMetadata == nil {
				rm.ProtocolMetadata = []byte{}
			}
			if rm.MemberAssignment == nil {
				rm.MemberAssignment = []byte{}
			}
			if m.InstanceID != "" {
				inst := m.InstanceID
				rm.InstanceID = &inst
			}
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
