package broker

// EndTxn, v0–v5.
//
// Commits or aborts the producer's open transaction: once the
// transactional appends already verified are done (so no data of the
// transaction can follow its marker), the decision is fsynced to the
// transaction log (PrepareCommit/PrepareAbort), a COMMIT or
// ABORT marker is appended to every partition of the transaction (origin
// COORDINATOR, this incarnation's coordinator epoch), the groups' staged
// offsets are completed, and the transaction is recorded complete — all
// before the answer, so a read_committed consumer sees a commit as soon as
// the producer does (Kafka answers after the decision and writes markers
// asynchronously). If a marker cannot be written the decision stands and
// the coordinator's goroutine retries it; until then the id answers
// CONCURRENT_TRANSACTIONS, and a crash leaves it to be completed at the
// next start. A retried EndTxn for a completed transaction succeeds.
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
//
// A commit whose transaction has a partition that became mirrored
// (read-only: a mirror started on it, e.g. a failback) cannot take its
// COMMIT marker, and the mirror cut the records this node wrote there. The
// commit is refused before anything is decided and the transaction stays
// open: TRANSACTION_ABORTABLE from v4 on (KIP-890: the client aborts and
// can go on with a new transaction), INVALID_TXN_STATE before v4 (a client
// that predates TRANSACTION_ABORTABLE gets an error, never a success).
// The abort then completes; the mirrored partition gets no marker.
// Deviation: Kafka's coordinator answers once the decision is logged and
// retries a marker it cannot deliver until some leader takes it; here no
// one ever would.
//
// v5 is transaction version 2 (KIP-890 part 2, TxnMachine.EndTxnV2 in
// internal/coordinator/txn_tv2.go): every commit and abort bumps the
// producer epoch, the markers are written with the bumped epoch, and the
// answer carries the producer id and epoch the client goes on with (a new
// producer id at epoch 0 when the epoch was exhausted). A retry at the
// previous epoch is answered as Kafka 4 answers it (NONE with the current
// id and epoch for the same decision), an abort with nothing open bumps
// the epoch (an empty abort), and a late EndTxn at an epoch the
// coordinator moved past is PRODUCER_FENCED. Errors answer id and epoch
// -1. Deviation: when the epoch is exhausted minibroker answers the new
// producer id at epoch 0 (what the client uses next); Kafka 4.0 answers
// from the PrepareCommit/PrepareAbort state. The broker's noTV2EpochBump
// knob removes the bump (the negative control of its fencing).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleEndTxn(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if req.TransactionalID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if req.Version >= 5 {
		res, err := b.txns.EndTxnV2(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, b.knobs.noTV2EpochBump)
		resp.ErrorCode = txnErrorCode(err, req.Version, 2)
		resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.ProducerEpoch
		return resp
	}
	resp.ErrorCode = txnErrorCode(b.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit), req.Version, 2)
	if resp.ErrorCode == kerr.TransactionAbortable.Code && req.Version < 4 {
		resp.ErrorCode = kerr.InvalidTxnState.Code
	}
	return resp
}
