package broker

// ListPartitionReassignments, v0 (KIP-455).
//
// No reassignment is ever in progress on one node (AlterPartitionReassignments
// only accepts the current assignment), so the answer lists nothing,
// for named topics and for all alike, as Kafka's controller answers when
// none is ongoing. DESCRIBE on the cluster is checked before
// (authz_table.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleListPartitionReassignments(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
	return resp
}
