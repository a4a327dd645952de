package broker

// DescribeTransactions, v0.
//
// Describes each transactional id: state (Kafka's names), producer id and
// epoch, timeout, start time (-1 without a transaction) and the
// partitions of the open transaction. Unknown or expired ids get
// TRANSACTIONAL_ID_NOT_FOUND.
//
// Deviation: the groups of a transaction are not listed as
// __consumer_offsets partitions (there is no such topic here).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDescribeTransactions(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		ts := kmsg.NewDescribeTransactionsResponseTransactionState()
		ts.TransactionalID = id
		ts.ProducerID, ts.ProducerEpoch, ts.StartTimestamp = -1, -1, -1
		md, err := b.txns.Describe(id)
		if err != nil {
			ts.ErrorCode = errorCode(err)
			resp.TransactionStates = append(resp.TransactionStates, ts)
			continue
		}
		ts.State = md.State.String()
		ts.TimeoutMillis = md.TimeoutMs
		ts.StartTimestamp = md.StartMs
		ts.ProducerID, ts.ProducerEpoch = md.ProducerID, md.ProducerEpoch
		for _, tp := range md.Partitions {
			if n := len(ts.Topics); n > 0 && ts.Topics[n-1].Topic == tp.Topic {
				ts.Topics[n-1].Partitions = append(ts.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
			ts.Topics = append(ts.Topics, t)
		}
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp
}
