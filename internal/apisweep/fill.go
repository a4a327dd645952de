package apisweep

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fill gives req (its version set) what a client would send: the fields
// without which Kafka would refuse to parse it (timeouts, acks), and
// names in every list the authorization rules and the handlers walk, so
// that they read them: a topic, a group, a transactional id. Requests
// that would change ACLs or credentials stay empty; those that would
// create or change topics validate only; deletes name a topic that does
// not exist.
func Fill(req kmsg.Request, n Names) {
	v := req.GetVersion()
	topic := n.Topic
	group := fmt.Sprintf("%s-%s-v%d", n.Group, kmsg.NameForKey(req.Key()), v) // a group per API and version: no rebalance waits
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		r.Acks, r.TimeoutMillis = 1, 1000
		t := kmsg.NewProduceRequestTopic()
		t.Topic, t.TopicID = topic, n.TopicID
		t.Partitions = []kmsg.ProduceRequestTopicPartition{kmsg.NewProduceRequestTopicPartition()}
		r.Topics = append(r.Topics, t)
	case *kmsg.FetchRequest:
		r.ReplicaID, r.ReplicaState.ID, r.MaxWaitMillis, r.MaxBytes, r.SessionEpoch = -1, -1, 0, 1<<20, -1
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = topic, n.TopicID
		p := kmsg.NewFetchRequestTopicPartition()
		p.PartitionMaxBytes = 1 << 20
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
	case *kmsg.ListOffsetsRequest:
		r.ReplicaID = -1
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = topic
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Timestamp = -1
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
	case *kmsg.MetadataRequest:
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		r.Topics = append(r.Topics, t)
	case *kmsg.OffsetCommitRequest:
		r.Group, r.Generation = group, -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic, t.TopicID = topic, n.TopicID
		t.Partitions = append(t.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	case *kmsg.OffsetFetchRequest:
		r.Group = group
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0}
		r.Topics = append(r.Topics, t)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, []int32{0}
		g.Topics = append(g.Topics, gt)
		r.Groups = append(r.Groups, g)
	case *kmsg.FindCoordinatorRequest:
		r.CoordinatorKey, r.CoordinatorKeys = group, []string{group}
	case *kmsg.JoinGroupRequest:
		r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = group, 10000, 10000, "consumer"
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	case *kmsg.HeartbeatRequest:
		r.Group, r.MemberID = group, "member"
	case *kmsg.LeaveGroupRequest:
		r.Group, r.MemberID = group, "member"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "member"
		r.Members = append(r.Members, m)
	case *kmsg.SyncGroupRequest:
		r.Group, r.MemberID = group, "member"
	case *kmsg.DescribeGroupsRequest:
		r.Groups = []string{group}
	case *kmsg.ApiVersionsRequest:
		r.ClientSoftwareName, r.ClientSoftwareVersion = "apisweep", "1.0"
	case *kmsg.CreateTopicsRequest:
		r.TimeoutMillis, r.ValidateOnly = 1000, true
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n.Absent, 1, -1
		r.Topics = append(r.Topics, t)
	case *kmsg.DeleteTopicsRequest:
		r.TimeoutMillis = 1000
		r.TopicNames = []string{n.Absent}
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(n.Absent)
		r.Topics = append(r.Topics, t)
	case *kmsg.DeleteRecordsRequest:
		r.TimeoutMillis = 1000
		t := kmsg.NewDeleteRecordsRequestTopic()
		t.Topic = topic
		t.Partitions = append(t.Partitions, kmsg.NewDeleteRecordsRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	case *kmsg.InitProducerIDRequest:
		r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr(n.TxnID), 60000
		r.ProducerID, r.ProducerEpoch = -1, -1
	case *kmsg.OffsetForLeaderEpochRequest:
		r.ReplicaID = -1
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = topic
		p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		p.CurrentLeaderEpoch = -1
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
	case *kmsg.AddPartitionsToTxnRequest:
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = n.TxnID, 1, 0
		t := kmsg.NewAddPartitionsToTxnRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0}
		r.Topics = append(r.Topics, t)
	case *kmsg.AddOffsetsToTxnRequest:
		r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = n.TxnID, 1, 0, group
	case *kmsg.EndTxnRequest:
		r.TransactionalID, r.ProducerID, r.ProducerEpoch = n.TxnID, 1, 0
	case *kmsg.TxnOffsetCommitRequest:
		r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.Generation = n.TxnID, group, 1, 0, -1
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic, t.TopicID = topic, n.TopicID
		t.Partitions = append(t.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	case *kmsg.DescribeACLsRequest:
		r.ResourceType, r.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	case *kmsg.DescribeConfigsRequest:
		for _, rs := range []struct {
			t    kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, topic}, {kmsg.ConfigResourceTypeBroker, n.NodeID}} {
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName = rs.t, rs.name
			r.Resources = append(r.Resources, res)
		}
	case *kmsg.AlterConfigsRequest:
		r.ValidateOnly = true
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("3600000")
		res.Configs = append(res.Configs, c)
		r.Resources = append(r.Resources, res)
	case *kmsg.IncrementalAlterConfigsRequest:
		r.ValidateOnly = true
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("3600000")
		res.Configs = append(res.Configs, c)
		r.Resources = append(r.Resources, res)
	case *kmsg.DescribeLogDirsRequest:
		t := kmsg.NewDescribeLogDirsRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0}
		r.Topics = append(r.Topics, t)
	case *kmsg.CreatePartitionsRequest:
		r.TimeoutMillis, r.ValidateOnly = 1000, true
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = topic, 1
		r.Topics = append(r.Topics, t)
	case *kmsg.DeleteGroupsRequest:
		r.Groups = []string{group}
	case *kmsg.OffsetDeleteRequest:
		r.Group = group
		t := kmsg.NewOffsetDeleteRequestTopic()
		t.Topic = topic
		t.Partitions = append(t.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = "nobody"
		r.Users = append(r.Users, u)
	case *kmsg.DescribeClusterRequest:
		r.EndpointType = 1
	case *kmsg.DescribeProducersRequest:
		t := kmsg.NewDescribeProducersRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0}
		r.Topics = append(r.Topics, t)
	case *kmsg.DescribeTransactionsRequest:
		r.TransactionalIDs = []string{n.TxnID}
	}
}
