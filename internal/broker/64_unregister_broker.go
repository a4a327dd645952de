package broker

// UnregisterBroker v0 (KIP-631), AddRaftVoter v0 and RemoveRaftVoter v0
// (KIP-853): what a one-node combined KRaft Kafka's controller answers.
//
// UnregisterBroker: another broker id is BROKER_ID_NOT_REGISTERED (only
// this node is registered); this node's own id is NONE. Deviation: Kafka
// removes the registration and the live broker registers again at its
// next heartbeat; minibroker has no registrations and changes nothing.
//
// AddRaftVoter, RemoveRaftVoter: minibroker's quorum is static (this node
// the only voter, kraft.version 0: ApiVersions finalizes no feature), and
// Kafka's leader refuses reconfiguration at kraft.version 0 with
// UNSUPPORTED_VERSION; a cluster id that is not this cluster's is
// INCONSISTENT_CLUSTER_ID, checked first as Kafka does.
//
// ALTER on the cluster is checked before, for all three (authz_table.go).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleUnregisterBroker(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	if req.BrokerID != b.nodeID {
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("broker %d is not registered", req.BrokerID))
	}
	return resp
}

// raftReconfigCode is the answer to AddRaftVoter and RemoveRaftVoter.
func (b *Broker) raftReconfigCode(clusterID *string) (int16, string) {
	if clusterID != nil && *clusterID != b.clusterID {
		return kerr.InconsistentClusterID.Code, "the cluster id is not this cluster's"
	}
	return kerr.UnsupportedVersion.Code, "the quorum is static: kraft.version is 0, voters cannot be added or removed"
}

func (b *Broker) handleAddRaftVoter(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	code, msg := b.raftReconfigCode(req.ClusterID)
	resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
	return resp
}

func (b *Broker) handleRemoveRaftVoter(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	code, msg := b.raftReconfigCode(req.ClusterID)
	resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
	return resp
}
