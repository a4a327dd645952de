package broker

// AlterPartitionReassignments, v0–v1 (KIP-455; v1: KIP-860), as a
// one-node KRaft cluster's controller answers it
// (ReplicationControlManager.alterPartitionReassignments).
//
// Per partition: an unknown topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION; a target replica list that is empty,
// names a node other than this one (Kafka: "no such broker is
// registered") or names this node twice is INVALID_REPLICA_ASSIGNMENT;
// the list [this node] is the current assignment, so NONE and nothing
// changes; a cancellation (null replicas) is NO_REASSIGNMENT_IN_PROGRESS,
// since none ever is. v1's AllowReplicationFactorChange changes nothing
// here: the only valid target keeps the factor at 1. ALTER on the
// cluster is checked before (authz_table.go).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleAlterPartitionReassignments(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			code, msg := b.reassign(t.Topic, p.Partition, p.Replicas)
			rp.ErrorCode = code
			if msg != "" {
				rp.ErrorMessage = kmsg.StringPtr(msg)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// reassign is one partition's answer, with Kafka's messages.
func (b *Broker) reassign(topic string, idx int32, replicas []int32) (int16, string) {
	if _, ok := b.Topic(topic); !ok {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Unable to find a topic named %s.", topic)
	}
	if _, ok := b.partitionOf(topic, idx); !ok {
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Unable to find partition %s:%d.", topic, idx)
	}
	if replicas == nil {
		return kerr.NoReassignmentInProgress.Code, kerr.NoReassignmentInProgress.Description
	}
	if len(replicas) == 0 {
		return kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list."
	}
	seen := false
	for _, id := range replicas {
		if id != b.nodeID {
			return kerr.InvalidReplicaAssignment.Code,
				fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if seen {
			return kerr.InvalidReplicaAssignment.Code,
				fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
		}
		seen = true
	}
	return 0, ""
}
