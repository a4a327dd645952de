package broker

// ListTransactions, v0–v1.
//
// Lists transactional ids with their producer id and state, filtered by
// state names (unknown names are echoed in UnknownStateFilters and match
// nothing, as in Kafka), producer ids, and from v1 a duration: only ids
// whose transaction started more than that many milliseconds ago (Kafka's
// rule, applied to the start time whatever the state).
//
// Deviation: v2's transactional-id pattern (KIP-1152) is not served.

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleListTransactions(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var states []coordinator.TxnState
	for _, name := range req.StateFilters {
		if s, ok := coordinator.ParseTxnState(name); ok {
			states = append(states, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if len(req.StateFilters) > 0 && len(states) == 0 {
		return resp
	}
	duration := int64(-1)
	if req.Version >= 1 {
		duration = req.DurationFilterMillis
	}
	now := time.Now().UnixMilli()
	for _, md := range b.txns.List() {
		switch {
		case len(states) > 0 && !slices.Contains(states, md.State),
			len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, md.ProducerID),
			duration >= 0 && now-md.StartMs <= duration:
			continue
		}
		ts := kmsg.NewListTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ProducerID, ts.TransactionState = md.TransactionalID, md.ProducerID, md.State.String()
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp
}
