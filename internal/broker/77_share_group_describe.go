package broker

// ShareGroupDescribe, v1.
//
// Each group's state (Empty or Stable), epochs, assignor ("simple") and
// members with their subscriptions and assignments. DESCRIBE on each
// group is checked here (GROUP_AUTHORIZATION_FAILED per group); a group
// that is not a share group answers GROUP_ID_NOT_FOUND; KIP-430
// authorized operations on request.

import (
	"context"
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/acl"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleShareGroupDescribe(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID, rg.AuthorizedOperations = id, math.MinInt32
		if !b.authorizedGroup(r, id, kmsg.ACLOperationDescribe) {
			rg.ErrorCode = codeGroup
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d := b.shares.Describe(id)
		if !d.Found {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.GroupState, rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor = d.State, d.Epoch, d.AssignmentEpoch, "simple"
		for _, m := range d.Members {
			rm := kmsg.NewShareGroupDescribeResponseGroupMember()
			rm.MemberID, rm.RackID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.ID, m.Rack, m.Epoch, m.ClientID, m.ClientHost
			rm.SubscribedTopicNames = m.Topics
			for id, ps := range m.Assigned {
				tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				tp.TopicID, tp.Partitions = id, ps
				if t, ok := b.topicByID(id); ok {
					tp.Topic = t.Name
				}
				rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, tp)
			}
			sort.Slice(rm.Assignment.TopicPartitions, func(i, j int) bool {
				return rm.Assignment.TopicPartitions[i].Topic < rm.Assignment.TopicPartitions[j].Topic
			})
			rg.Members = append(rg.Members, rm)
		}
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = b.authorizedOps(r, kmsg.ACLResourceTypeGroup, id, acl.GroupOperations)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
