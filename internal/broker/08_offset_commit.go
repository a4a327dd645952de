package broker

// OffsetCommit, v0–v9.
//
// Commits are fsynced to the group log before the response (concurrent
// commits share an fsync). Members commit with their generation and member
// id (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID v7+,
// REBALANCE_IN_PROGRESS while the group completes a rebalance); a simple
// commit (generation -1, v0 always) is accepted for a group without
// members; a generation for a group that does not exist is
// GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before. Unknown topics or partitions get UNKNOWN_TOPIC_OR_PARTITION;
// metadata over 4096 bytes OFFSET_METADATA_TOO_LARGE. Deviation: the v2–v4
// retention time is ignored; offsets.retention.ms applies to every group.
// A KIP-848 consumer group's member commits with v9+ and its member epoch
// as the generation: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH on any other
// epoch, UNSUPPORTED_VERSION below v9 (Kafka's ConsumerGroup.
// validateOffsetCommit); epoch -1 commits only to a group without members.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleOffsetCommit(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	cr := coordinator.CommitRequest{
		Group: req.Group, MemberID: req.MemberID, InstanceID: strOrEmpty(req.InstanceID),
		Generation: req.Generation, Offsets: map[coordinator.TopicPartition]coordinator.OffsetAndMetadata{},
		Version: r.Version,
	}
	if r.Version == 0 {
		cr.Generation, cr.MemberID = -1, ""
	}
	unknown := map[coordinator.TopicPartition]bool{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := coordinator.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if _, ok := b.Partition(t.Topic, p.Partition); !ok {
				unknown[tp] = true
				continue
			}
			epoch := p.LeaderEpoch
			if r.Version < 6 {
				epoch = -1
			}
			cr.Offsets[tp] = coordinator.OffsetAndMetadata{Offset: p.Offset, LeaderEpoch: epoch, Metadata: strOrEmpty(p.Metadata)}
		}
	}
	partErrs, top := b.groups.CommitOffsets(cr)
	if errors.Is(top, coordinator.ErrGroupIDNotFound) && r.Version < 9 {
		top = coordinator.ErrIllegalGeneration // as Kafka, before v9
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			tp := coordinator.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case unknown[tp]:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case top != nil:
				rp.ErrorCode = errorCode(top)
			default:
				rp.ErrorCode = errorCode(partErrs[tp])
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
