package broker

// DescribeProducers, v0.
//
// Lists the producer state of each requested partition (its PSM entries):
// id, epoch, last sequence (-1 before any batch of the current epoch),
// last timestamp, coordinator epoch and the first offset of the open
// transaction (-1: none). Unknown partitions get
// UNKNOWN_TOPIC_OR_PARTITION. Mirrored partitions are described too: their
// entries come from the mirrored data.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDescribeProducers(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, idx := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = idx
			p, ok := b.partitionOf(rt.Topic, idx)
			if !ok {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, e := range p.Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID = e.ProducerID
				ap.ProducerEpoch = int32(e.Epoch)
				ap.LastSequence = -1
				if n := len(e.Batches); n > 0 {
					ap.LastSequence = e.Batches[n-1].LastSeq
				}
				ap.LastTimestamp = e.LastTimestamp
				ap.CoordinatorEpoch = e.CoordinatorEpoch
				ap.CurrentTxnStartOffset = e.CurrentTxnFirstOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
