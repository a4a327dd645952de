package broker

// ConsumerGroupHeartbeat, v0–v1 (KIP-848 consumer groups; Kafka 4's
// ranges).
//
// One request joins (member epoch 0), heartbeats, or leaves (-1; -2 for a
// static member coming back) a consumer group; the coordinator assigns the
// partitions (group.consumer.assignors, "uniform" and "range") and answers
// the member's epoch, the heartbeat interval and, on a full request or a
// change, its assignment. v1 (KIP-1082) requires the client's own member
// id; v0 gets one from the coordinator on its first join. The member's
// records are fsynced to the group log before the answer. Session timeout
// and heartbeat interval are the group's configs
// (consumer.session.timeout.ms, consumer.heartbeat.interval.ms) or the
// broker's group.consumer.* settings. docs/CONSUMER_GROUPS.md lists the
// deviations from Kafka.

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleConsumerGroupHeartbeat(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if req.Group != "" && b.shares.Exists(req.Group) {
		// Group ids are one namespace: Kafka's
		// getOrMaybeCreateConsumerGroup refuses a share group's.
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		resp.ErrorMessage = kmsg.StringPtr("Group " + req.Group + " is not a consumer group.")
		return resp
	}
	hr := coordinator.ConsumerHeartbeatRequest{
		Version: r.Version, Group: req.Group, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch,
		InstanceID: req.InstanceID, RackID: req.RackID, RebalanceTimeoutMs: req.RebalanceTimeoutMillis,
		SubscribedTopicNames: req.SubscribedTopicNames, SubscribedTopicRegex: req.SubscribedTopicRegex,
		ServerAssignor: req.ServerAssignor, ClientID: r.ClientID, ClientHost: clientHost(r),
	}
	if r.Version < 1 {
		hr.SubscribedTopicRegex = nil
	}
	if req.Topics != nil {
		hr.Owned = make([]coordinator.OwnedTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			hr.Owned = append(hr.Owned, coordinator.OwnedTopic{ID: t.TopicID, Partitions: t.Partitions})
		}
	}
	if req.Group != "" {
		// The group's overrides only: without one, the broker's setting.
		gc := b.resourceConfigs.overrides(kmsg.ConfigResourceTypeGroupConfig, req.Group)
		ms := func(name string) time.Duration {
			n, _ := strconv.ParseInt(gc[name], 10, 64)
			return time.Duration(n) * time.Millisecond
		}
		hr.SessionTimeout, hr.HeartbeatInterval = ms("consumer.session.timeout.ms"), ms("consumer.heartbeat.interval.ms")
	}
	res := b.groups.ConsumerHeartbeat(hr)
	resp.ErrorCode = errorCode(res.Err)
	if res.Err != nil {
		resp.ErrorMessage = errorMessage(res.Err)
		resp.MemberEpoch = res.MemberEpoch
		return resp
	}
	resp.MemberID = kmsg.StringPtr(res.MemberID)
	resp.MemberEpoch, resp.HeartbeatIntervalMillis = res.MemberEpoch, res.HeartbeatIntervalMs
	if res.HasAssignment {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, t := range res.Assignment {
			rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			rt.TopicID, rt.Partitions = t.ID, t.Partitions
			a.Topics = append(a.Topics, rt)
		}
		resp.Assignment = &a
	}
	return resp
}
