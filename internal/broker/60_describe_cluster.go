package broker

// DescribeCluster, v0–v2.
//
// One broker, which is also the controller. v1 asks for an endpoint type:
// brokers (1) is served; controllers (2) answer UNSUPPORTED_ENDPOINT_TYPE,
// as a Kafka broker does. v2 (KIP-1073) may ask for fenced brokers too and
// marks each broker IsFenced: the one broker is never fenced.

import (
	"math"

	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDescribeCluster(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp
	}
	resp.EndpointType = 1
	resp.ClusterID = b.clusterID
	resp.ControllerID = b.nodeID
	host, port := b.advertised(r)
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{{NodeID: b.nodeID, Host: host, Port: port}}
	resp.ClusterAuthorizedOperations = math.MinInt32
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.clusterOps(r)
	}
	return resp
}
