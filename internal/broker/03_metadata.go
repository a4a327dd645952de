package broker

// Metadata, v0–v13.
//
// One broker (this node) leads every partition, with itself as the only
// replica and ISR member. Topic IDs are returned from v10. Unknown topics
// are created when the request allows it (v4+, always for v0–v3) and
// auto.create.topics.enable is on, as Kafka does; as KRaft Kafka
// (AutoTopicCreationManager), the answer names such a topic
// UNKNOWN_TOPIC_OR_PARTITION without partitions, and the next Metadata
// finds it (kgo, sarama, librdkafka and kafka-go retry). Names Kafka
// reserves (__share_group_state, …; reserved_topics.go) are never
// created: UNKNOWN_TOPIC_OR_PARTITION, is_internal as in Kafka;
// __consumer_offsets and __transaction_state exist from start-up and are
// answered with is_internal set (internal_topics.go). A request by topic ID
// for an unknown ID answers UNKNOWN_TOPIC_ID. v13's top-level ErrorCode
// (KIP-1102: REBOOTSTRAP_REQUIRED) is always NONE: one broker never asks
// a client to rebootstrap.
//
// A partition whose log is offline for writes after a storage failure
// (internal/log/retry.go) is answered with KAFKA_STORAGE_ERROR, this node
// in its offline replicas and an empty ISR; its leader stays this node, so
// producers are answered KAFKA_STORAGE_ERROR by Produce rather than left
// without a leader (Kafka would move leadership to another replica; one
// node has none).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/acl"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleMetadata(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, port := b.advertised(r)
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: b.nodeID, Host: host, Port: port}}
	cid := b.clusterID
	resp.ClusterID = &cid
	resp.ControllerID = b.nodeID

	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, name := range b.TopicNames() {
			// Topics the principal may not DESCRIBE are left out (Kafka).
			if t, ok := b.Topic(name); ok && b.authorizedTopic(r, name, kmsg.ACLOperationDescribe) {
				resp.Topics = append(resp.Topics, b.metadataTopicOps(r, req, b.topicMetadata(t)))
			}
		}
		b.metadataClusterOps(r, req, resp)
		return resp
	}
	for _, rt := range req.Topics {
		var (
			t  *Topic
			ok bool
		)
		switch {
		case rt.Topic != nil && *rt.Topic != "":
			if !b.authorizedTopic(r, *rt.Topic, kmsg.ACLOperationDescribe) {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic, mt.ErrorCode = rt.Topic, kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			t, ok = b.Topic(*rt.Topic)
			if !ok {
				// Auto-creation needs CREATE on the cluster or the
				// topic; without it the topic is TOPIC_AUTHORIZATION_FAILED
				// (Kafka: checked before the name is).
				if allowCreate && b.autoCreateEnabled() && !b.mayCreateTopic(r, *rt.Topic) {
					mt := kmsg.NewMetadataResponseTopic()
					mt.Topic, mt.ErrorCode = rt.Topic, kerr.TopicAuthorizationFailed.Code
					resp.Topics = append(resp.Topics, mt)
					continue
				}
				// A created topic is not in this answer: as KRaft Kafka's
				// AutoTopicCreationManager, the name is answered
				// UNKNOWN_TOPIC_OR_PARTITION and the client's next
				// Metadata (clients retry it) finds the topic.
				err := validTopicName(*rt.Topic)
				if err == nil && allowCreate {
					_, err = b.autoCreate(*rt.Topic)
				}
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic = rt.Topic
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
				_, mt.IsInternal = reservedTopic(*rt.Topic)
				if errCode := errorCode(err); err != nil && errCode == kerr.InvalidTopicException.Code {
					mt.ErrorCode = errCode
				}
				// Kafka reports a missing topic's operations too.
				resp.Topics = append(resp.Topics, b.metadataTopicOps(r, req, mt))
				continue
			}
		case rt.TopicID != [16]byte{}:
			t, ok = b.topicByID(rt.TopicID)
			if ok && !b.authorizedTopic(r, t.Name, kmsg.ACLOperationDescribe) {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID, mt.ErrorCode = rt.TopicID, kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			if !ok {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		default:
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			mt.ErrorCode = kerr.InvalidTopicException.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, b.metadataTopicOps(r, req, b.topicMetadata(t)))
	}
	b.metadataClusterOps(r, req, resp)
	return resp
}

// metadataTopicOps sets a topic's KIP-430 authorized_operations when the
// request asks for them (v8+).
func (b *Broker) metadataTopicOps(r *protocol.Request, req *kmsg.MetadataRequest, mt kmsg.MetadataResponseTopic) kmsg.MetadataResponseTopic {
	if req.Version >= 8 && req.IncludeTopicAuthorizedOperations && mt.Topic != nil {
		mt.AuthorizedOperations = b.authorizedOps(r, kmsg.ACLResourceTypeTopic, *mt.Topic, acl.TopicOperations)
	}
	return mt
}

// metadataClusterOps sets the cluster's authorized_operations (v8–v10).
func (b *Broker) metadataClusterOps(r *protocol.Request, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = b.clusterOps(r)
	}
}

// clusterOps is the cluster's KIP-430 authorized_operations: 0 for a
// principal without DESCRIBE on the cluster, whatever else it may do
// (Kafka's Metadata and DescribeCluster).
func (b *Broker) clusterOps(r *protocol.Request) int32 {
	if !b.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		return 0
	}
	return b.authorizedOps(r, kmsg.ACLResourceTypeCluster, acl.ClusterName, acl.ClusterOperations)
}

func (b *Broker) topicMetadata(t *Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	_, mt.IsInternal = reservedTopic(name) // the coordinators' topics, or a leftover of an older minibroker
	for _, p := range b.partitions(t) {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index
		mp.Leader = b.nodeID
		mp.LeaderEpoch = p.LeaderEpoch()
		mp.Replicas = []int32{b.nodeID}
		mp.ISR = []int32{b.nodeID}
		if p.Offline() != nil {
			mp.ErrorCode = kerr.KafkaStorageError.Code
			mp.ISR = []int32{}
			mp.OfflineReplicas = []int32{b.nodeID}
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
