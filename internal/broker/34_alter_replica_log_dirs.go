package broker

// AlterReplicaLogDirs, v1–v2 (v0 too with client.protocol.version=3.9)
// (KIP-113), as Kafka's ReplicaManager.alterReplicaLogDirs answers it.
//
// minibroker has one log directory, the data dir. Per partition: a
// destination other than the data dir's absolute path is
// LOG_DIR_NOT_FOUND; a partition this node does not have is
// REPLICA_NOT_AVAILABLE (Kafka keeps that code here for compatibility);
// a partition whose log is offline is KAFKA_STORAGE_ERROR; otherwise the
// replica already is in that directory, so NONE and nothing moves.
// Without ALTER on the cluster every partition is
// CLUSTER_AUTHORIZATION_FAILED (Kafka's error response), checked here.

import (
	"context"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleAlterReplicaLogDirs(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	dataDir, err := filepath.Abs(b.dataDir)
	if err != nil {
		dataDir = b.dataDir
	}
	denied := !b.authorizedCluster(r, kmsg.ACLOperationAlter)
	byTopic := map[string]int{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			i, ok := byTopic[t.Topic]
			if !ok {
				i = len(resp.Topics)
				byTopic[t.Topic] = i
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			for _, idx := range t.Partitions {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition = idx
				p, ok := b.partitionOf(t.Topic, idx)
				switch {
				case denied:
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				case d.Dir != dataDir:
					rp.ErrorCode = kerr.LogDirNotFound.Code
				case !ok:
					rp.ErrorCode = kerr.ReplicaNotAvailable.Code
				case p.Offline() != nil:
					rp.ErrorCode = kerr.KafkaStorageError.Code
				}
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
			}
		}
	}
	return resp
}
