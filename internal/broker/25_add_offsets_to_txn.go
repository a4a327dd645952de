package broker

// AddOffsetsToTxn, v0–v4.
//
// Adds a consumer group to the producer's transaction (Kafka adds the
// group's __consumer_offsets partition), so TxnOffsetCommit may stage
// offsets for it and EndTxn completes them. Fsynced before the answer.
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2. Without a group
// coordinator the answer is COORDINATOR_NOT_AVAILABLE. v4 only lets the
// broker answer TRANSACTION_ABORTABLE (KIP-890), which minibroker never
// does: it is served as v3.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleAddOffsetsToTxn(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case req.TransactionalID == "" || req.Group == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
	case b.txnGroups() == nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	default:
		resp.ErrorCode = txnErrorCode(b.txns.AddOffsets(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group), req.Version, 2)
	}
	return resp
}
