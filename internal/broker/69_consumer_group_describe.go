package broker

// ConsumerGroupDescribe, v0–v1 (KIP-848).
//
// Each group: its state (Empty, Assigning, Reconciling, Stable), group
// and assignment epochs, the assignor it uses, and per member its epoch,
// subscription, current and target assignment (topic ids and names),
// MemberType (v1: 1 for a consumer-protocol member, 0 for a classic
// member served by the consumer group). A group that does not exist or is classic is
// GROUP_ID_NOT_FOUND. DESCRIBE on each group is checked here
// (GROUP_AUTHORIZATION_FAILED per group); authorized operations (KIP-430)
// as DescribeGroups reports them.

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/acl"
	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleConsumerGroupDescribe(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	descs := b.groups.DescribeConsumerGroups(req.Groups)
	for i, id := range req.Groups {
		d := descs[i]
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group, rg.AuthorizedOperations = id, math.MinInt32
		if !b.authorizedGroup(r, id, kmsg.ACLOperationDescribe) {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if d.Err != nil {
			rg.ErrorCode, rg.ErrorMessage, rg.State = errorCode(d.Err), errorMessage(d.Err), d.State
			rg.Epoch, rg.AssignmentEpoch = d.Epoch, d.AssignmentEpoch
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = b.authorizedOps(r, kmsg.ACLResourceTypeGroup, id, acl.GroupOperations)
		}
		for _, m := range d.Members {
			rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			rm.MemberID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.MemberID, m.MemberEpoch, m.ClientID, m.ClientHost
			rm.InstanceID, rm.RackID = nullIfEmpty(m.InstanceID), nullIfEmpty(m.RackID)
			rm.SubscribedTopics = append([]string{}, m.SubscribedTopicNames...)
			rm.SubscribedTopicRegex = nullIfEmpty(m.SubscribedTopicRegex)
			rm.Assignment, rm.TargetAssignment = b.describeAssignment(m.Assignment), b.describeAssignment(m.TargetAssignment)
			rm.MemberType = 1 // a consumer-protocol member (Kafka: 0 classic, 1 consumer)
			if m.Classic {
				rm.MemberType = 0
			}
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// describeAssignment names each topic id; a topic deleted meanwhile keeps
// its id and an empty name.
func (b *Broker) describeAssignment(ts []coordinator.OwnedTopic) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range ts {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = t.ID, t.Partitions
		if topic, ok := b.topicByID(t.ID); ok {
			tp.Topic = topic.Name
		}
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}
