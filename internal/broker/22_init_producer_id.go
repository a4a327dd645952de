package broker

// InitProducerId, v0–v4.
//
// Idempotent producers (no transactional id) get a fresh producer id at
// epoch 0 every time, including a KIP-360 re-init naming their current id
// and epoch: that is what Kafka answers for a null transactional id. Ids
// come from the durable allocator and start at 0 on a new cluster, as in
// Kafka, so two fresh clusters hand out the same ids. Transactional ids are
// served by the transaction coordinator (not yet: INVALID_REQUEST).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleInitProducerID(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	id, err := b.pids.Next()
	if err != nil {
		b.logger.Sugar().Errorw("producer id allocation failed", "error", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp
}
