package broker

// DescribeTopicPartitions, v0 (KIP-966), as Kafka's
// DescribeTopicPartitionsRequestHandler and KRaftMetadataCache answer it.
//
// An empty topic list asks for every topic. Topics are answered in name
// order from the cursor's topic (names before it are skipped), and the
// cursor's topic from the cursor's partition. At most
// min(ResponsePartitionLimit, 2000) partitions are answered (at least
// one; 2000 is Kafka's max.request.partition.size.limit default); when
// more remain, NextCursor names the next topic and partition. A cursor
// whose topic is not among the named topics, or with a negative
// partition, is INVALID_REQUEST on each topic (Kafka's error response).
// A named topic the principal may not DESCRIBE is
// TOPIC_AUTHORIZATION_FAILED with a zero id, after the others; in a
// list-all it is left out. A named unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an invalid
// name); unknown topics are never created. Each partition: this node
// the leader, only replica and ISR; no eligible leader replicas (ELR);
// a log offline after a storage failure has this node offline and an
// empty ISR (as Metadata). Each topic carries its KIP-430 authorized
// operations.

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/acl"
	"github.com/minibroker/minibroker/internal/protocol"
)

// maxDescribeTopicPartitions is Kafka's max.request.partition.size.limit
// default: the most partitions one DescribeTopicPartitions answers.
const maxDescribeTopicPartitions = 2000

func (b *Broker) handleDescribeTopicPartitions(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	all := len(req.Topics) == 0
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	names := map[string]bool{}
	if all {
		for _, n := range b.TopicNames() {
			if n >= cursorTopic {
				names[n] = true
			}
		}
	} else {
		for _, t := range req.Topics {
			if t.Topic >= cursorTopic {
				names[t.Topic] = true
			}
		}
	}
	invalid := ""
	switch {
	case req.Cursor != nil && !all && !names[req.Cursor.Topic]:
		invalid = "DescribeTopicPartitionsRequest topic list should contain the cursor topic: " + req.Cursor.Topic
	case req.Cursor != nil && req.Cursor.Partition < 0:
		invalid = fmt.Sprintf("DescribeTopicPartitionsRequest cursor partition must be valid: %d", req.Cursor.Partition)
	}
	if invalid != "" {
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic = kmsg.StringPtr(t.Topic)
			rt.ErrorCode = kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var denied []kmsg.DescribeTopicPartitionsResponseTopic
	remaining := max(min(int(req.ResponsePartitionLimit), maxDescribeTopicPartitions), 1)
	for _, name := range sorted {
		if !b.authorizedTopic(r, name, kmsg.ACLOperationDescribe) {
			if !all {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic = kmsg.StringPtr(name)
				rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				denied = append(denied, rt)
			}
			continue
		}
		if resp.NextCursor != nil {
			continue // the limit is reached; only denials are still added
		}
		if remaining == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			continue
		}
		t, ok := b.Topic(name)
		if !ok {
			if !all {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic = kmsg.StringPtr(name)
				rt.IsInternal = isInternalTopic(name)
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if validTopicName(name) != nil {
					rt.ErrorCode = kerr.InvalidTopicException.Code
				}
				rt.AuthorizedOperations = b.authorizedOps(r, kmsg.ACLResourceTypeTopic, name, acl.TopicOperations)
				resp.Topics = append(resp.Topics, rt)
			}
			continue
		}
		start := 0
		if name == cursorTopic && req.Cursor != nil {
			start = int(req.Cursor.Partition)
		}
		parts := b.partitions(t)
		end := min(len(parts), start+remaining)
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		rt.TopicID = t.ID
		rt.IsInternal = isInternalTopic(name)
		rt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		for i := start; i < end; i++ {
			p := parts[i]
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition = p.Index
			rp.LeaderID = b.nodeID
			rp.LeaderEpoch = p.LeaderEpoch()
			rp.Replicas = []int32{b.nodeID}
			rp.ISR = []int32{b.nodeID}
			rp.EligibleLeaderReplicas, rp.LastKnownELR, rp.OfflineReplicas = []int32{}, []int32{}, []int32{}
			if p.Offline() != nil {
				rp.ISR = []int32{}
				rp.OfflineReplicas = []int32{b.nodeID}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		rt.AuthorizedOperations = b.authorizedOps(r, kmsg.ACLResourceTypeTopic, name, acl.TopicOperations)
		resp.Topics = append(resp.Topics, rt)
		if end < len(parts) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(end)}
			continue
		}
		if n := end - start; n > 0 {
			remaining -= n
		}
	}
	resp.Topics = append(resp.Topics, denied...)
	return resp
}

// isInternalTopic: the names Kafka's Topic.isInternal reports internal.
func isInternalTopic(name string) bool {
	switch name {
	case "__consumer_offsets", "__transaction_state", "__share_group_state":
		return true
	}
	return false
}
