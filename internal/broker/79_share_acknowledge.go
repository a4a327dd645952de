package broker

// ShareAcknowledge, v1–v2 (KIP-932; v2 KIP-1222's IsRenewAck, with the
// RENEW acknowledgement type).
//
// Acknowledges records a member acquired, outside a ShareFetch: the
// share session's epoch must be current (0 is refused: a new session
// cannot acknowledge), -1 closes the session after the acknowledgements
// and releases what the member still holds there. Each partition's
// acknowledgements are applied all or none and stored durably before the
// answer (share.Coordinator.Ack). READ on the group is the rule; READ on
// each topic is checked here.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/share"
)

func (b *Broker) handleShareAcknowledge(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member := derefString(req.GroupID), derefString(req.MemberID)
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(b.sharePartitionConfig(group).LockDuration.Milliseconds())
	}
	if group == "" || member == "" || len(member) > 36 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	if e := b.shares.CheckSession(group, member, req.ShareSessionEpoch); e != nil {
		resp.ErrorCode = e.Code
		return resp
	}
	acks := map[share.TP][]share.AckBatch{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := share.TP{Topic: t.TopicID, Partition: p.Partition}
			for _, ab := range p.AcknowledgementBatches {
				acks[tp] = append(acks[tp], share.AckBatch{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
			}
			if len(p.AcknowledgementBatches) == 0 {
				acks[tp] = nil
			}
		}
	}
	renew := req.Version >= 2 && req.IsRenewAck
	b.shareAcks(r, group, member, acks, renew, func(tp share.TP, code int16) {
		ti := -1
		for i := range resp.Topics {
			if resp.Topics[i].TopicID == tp.Topic {
				ti = i
			}
		}
		if ti < 0 {
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = tp.Topic
			resp.Topics = append(resp.Topics, t)
			ti = len(resp.Topics) - 1
		}
		sp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		sp.Partition, sp.ErrorCode = tp.Partition, code
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, sp)
	})
	if req.ShareSessionEpoch == -1 {
		if e := b.shares.CloseSession(group, member); e != nil {
			resp.ErrorCode = e.Code
		}
	}
	return resp
}
