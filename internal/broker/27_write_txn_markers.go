package broker

// WriteTxnMarkers, v0–v1.
//
// Appends COMMIT or ABORT markers (origin COORDINATOR) as a transaction
// coordinator would. In Kafka it is the coordinator-to-broker request; here
// the coordinator is in-process, and the API serves operators: it is what
// `kafka-transactions.sh abort` (and kadm's WriteTxnMarkers) uses to end a
// hanging transaction found with DescribeProducers. The producer-state
// checks apply: a producer epoch or coordinator epoch older than the
// partition's answers INVALID_PRODUCER_EPOCH or
// TRANSACTION_COORDINATOR_FENCED. Unknown partitions get
// UNKNOWN_TOPIC_OR_PARTITION; mirrored ones, which are read-only, the code
// Produce gives them (POLICY_VIOLATION).
//
// With the authorizer on it needs ALTER or CLUSTER_ACTION on the cluster,
// as in Kafka (authz_table.go). Deviation: a marker does not complete
// group offsets (Kafka's markers to __consumer_offsets partitions do); the
// transaction coordinator does that.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleWriteTxnMarkers(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		sm := kmsg.NewWriteTxnMarkersResponseMarker()
		sm.ProducerID = m.ProducerID
		for _, rt := range m.Topics {
			st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			for _, idx := range rt.Partitions {
				sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = idx
				p, ok := b.partitionOf(rt.Topic, idx)
				switch {
				case !ok:
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					if mode, mirror := p.Mode(); mode == partition.Mirrored {
						sp.ErrorCode = errorCode(&partition.MirroredError{Mirror: mirror})
						break
					}
					_, err := p.WriteMarker(m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch)
					sp.ErrorCode = errorCode(err)
				}
				st.Partitions = append(st.Partitions, sp)
			}
			sm.Topics = append(sm.Topics, st)
		}
		resp.Markers = append(resp.Markers, sm)
	}
	return resp
}
