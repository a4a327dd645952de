package broker

// DescribeQuorum, v0–v2 (KIP-595, KIP-836; v2: KIP-853).
//
// minibroker is a one-node combined broker and controller: this node is
// the metadata quorum's only voter and its leader, with no observers.
// Kafka's KafkaRaftClient answers for exactly one partition,
// __cluster_metadata-0; any other request is UNKNOWN_TOPIC_OR_PARTITION
// on each partition named. The leader's last fetch and caught-up times
// are now, as Kafka reports its own.
//
// Deviation: minibroker keeps no metadata log (topics.json and the other
// data-dir files are its metadata), so the leader epoch is 1 and the high
// watermark and the voter's log end offset are 0; v2's directory id is
// zero and the node's listeners are its Kafka listeners, advertised.
// DESCRIBE on the cluster is checked before (authz_table.go).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

const clusterMetadataTopic = "__cluster_metadata"

func (b *Broker) handleDescribeQuorum(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if len(req.Topics) != 1 || req.Topics[0].Topic != clusterMetadataTopic ||
		len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeQuorumResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeQuorumResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rp.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	now := time.Now().UnixMilli()
	voter := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	voter.ReplicaID = b.nodeID
	voter.LogEndOffset = 0
	voter.LastFetchTimestamp, voter.LastCaughtUpTimestamp = now, now
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	rp.Partition = 0
	rp.LeaderID = b.nodeID
	rp.LeaderEpoch = 1
	rp.HighWatermark = 0
	rp.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{voter}
	rp.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	rt := kmsg.NewDescribeQuorumResponseTopic()
	rt.Topic = clusterMetadataTopic
	rt.Partitions = []kmsg.DescribeQuorumResponseTopicPartition{rp}
	resp.Topics = []kmsg.DescribeQuorumResponseTopic{rt}
	if req.Version >= 2 {
		node := kmsg.NewDescribeQuorumResponseNode()
		node.NodeID = b.nodeID
		for _, l := range b.listeners {
			nl := kmsg.NewDescribeQuorumResponseNodeListener()
			nl.Name, nl.Host, nl.Port = l.spec.Name, l.advHost, uint16(l.advPort)
			node.Listeners = append(node.Listeners, nl)
		}
		if len(b.listeners) == 0 {
			host, port := b.advertised(r)
			nl := kmsg.NewDescribeQuorumResponseNodeListener()
			nl.Name, nl.Host, nl.Port = "PLAINTEXT", host, uint16(port)
			node.Listeners = append(node.Listeners, nl)
		}
		resp.Nodes = []kmsg.DescribeQuorumResponseNode{node}
	}
	return resp
}
