package broker

// OffsetFetch, v0–v9.
//
// v0–v7 fetch one group; v8+ several (Groups). A nil topic list (v2+)
// fetches every committed partition of the group. A partition without a
// committed offset answers offset -1, as does an unknown group. With
// RequireStable (v7+) a partition that has staged transactional offsets
// answers UNSTABLE_OFFSET_COMMIT, so the consumer retries until the
// transaction ends. v9 (KIP-848): a member of a consumer group fetches
// with its member id and epoch (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH at
// the group level, as Kafka); a classic group's fetch is not checked.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/coordinator"
	"github.com/minibroker/minibroker/internal/protocol"
)

type fetchTopic struct {
	topic      string
	partitions []int32
}

// fetchGroupOffsets answers one group, grouped by topic in request order
// (or sorted, for "all").
func (b *Broker) fetchGroupOffsets(group string, topics []fetchTopic, all, requireStable bool) ([]string, map[string][]coordinator.FetchedOffset) {
	var tps []coordinator.TopicPartition
	if !all {
		tps = []coordinator.TopicPartition{}
		for _, t := range topics {
			for _, p := range t.partitions {
				tps = append(tps, coordinator.TopicPartition{Topic: t.topic, Partition: p})
			}
		}
	}
	res := b.groups.FetchOffsets(group, tps, requireStable)
	var order []string
	byTopic := map[string][]coordinator.FetchedOffset{}
	for _, f := range res {
		if _, ok := byTopic[f.Topic]; !ok {
			order = append(order, f.Topic)
		}
		byTopic[f.Topic] = append(byTopic[f.Topic], f)
	}
	if !all { // keep topics asked for with no partitions
		for _, t := range topics {
			if _, ok := byTopic[t.topic]; !ok {
				order = append(order, t.topic)
				byTopic[t.topic] = nil
			}
		}
	}
	return order, byTopic
}

func (b *Broker) handleOffsetFetch(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if r.Version < 8 {
		var topics []fetchTopic
		for _, t := range req.Topics {
			topics = append(topics, fetchTopic{t.Topic, t.Partitions})
		}
		order, byTopic := b.fetchGroupOffsets(req.Group, topics, req.Topics == nil && r.Version >= 2, req.RequireStable)
		for _, topic := range order {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = topic
			for _, f := range byTopic[topic] {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = f.Partition, f.Offset, f.LeaderEpoch, errorCode(f.Err)
				md := f.Metadata
				rp.Metadata = &md
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, g := range req.Groups {
		if r.Version >= 9 {
			if err := b.groups.ValidateFetchMember(g.Group, g.MemberID, g.MemberEpoch); err != nil {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, errorCode(err)
				resp.Groups = append(resp.Groups, rg)
				continue
			}
		}
		var topics []fetchTopic
		for _, t := range g.Topics {
			topics = append(topics, fetchTopic{t.Topic, t.Partitions})
		}
		order, byTopic := b.fetchGroupOffsets(g.Group, topics, g.Topics == nil, req.RequireStable)
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		for _, topic := range order {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = topic
			for _, f := range byTopic[topic] {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = f.Partition, f.Offset, f.LeaderEpoch, errorCode(f.Err)
				md := f.Metadata
				rp.Metadata = &md
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
