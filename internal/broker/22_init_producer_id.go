package broker

// InitProducerId, v0–v5.
//
// Idempotent producers (no transactional id) get a fresh producer id at
// epoch 0 every time, including a KIP-360 re-init naming their current id
// and epoch: that is what Kafka answers for a null transactional id. Ids
// come from the durable allocator and start at 0 on a new cluster, as in
// Kafka, so two fresh clusters hand out the same ids.
//
// A transactional id is served by the transaction coordinator: it keeps
// its producer id across sessions and each InitProducerId bumps the epoch,
// fencing the previous session; an open transaction of the previous
// session is aborted first (its markers written at a bumped epoch) and the
// answer is CONCURRENT_TRANSACTIONS, which clients retry; a new producer id
// replaces one whose epoch is exhausted; v3+ may name the current id and
// epoch (KIP-360) and a retry of a bump that succeeded gets the same
// answer. transaction.timeout.ms above transaction.max.timeout.ms is
// INVALID_TRANSACTION_TIMEOUT; an empty transactional id INVALID_REQUEST.
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v4, as in Kafka.
//
// v5 only lets the broker answer TRANSACTION_ABORTABLE (KIP-890, per
// Kafka's InitProducerIdRequest.json); minibroker never does, so v5 is
// served as v4. Deviation: v6 (KIP-939, two-phase commit) is not served.

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
	if req.TransactionalID == nil {
		id, err := b.txns.NextProducerID()
		if err != nil {
			b.logger.Sugar().Errorw("producer id allocation failed", "error", err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp
	}
	pid, epoch := int64(-1), int16(-1)
	if req.Version >= 3 {
		pid, epoch = req.ProducerID, req.ProducerEpoch
	}
	res, err := b.txns.InitProducerID(*req.TransactionalID, req.TransactionTimeoutMillis, pid, epoch)
	if err != nil {
		resp.ErrorCode = txnErrorCode(err, req.Version, 4)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.ProducerEpoch
	return resp
}
