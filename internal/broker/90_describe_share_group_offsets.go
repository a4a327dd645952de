package broker

// DescribeShareGroupOffsets, v0–v1 (v1: the lag).
//
// Each share partition's start offset (SPSO) and, v1, its lag: the
// records below the high watermark not yet acknowledged or archived.
// Null topics: every partition the group has state for. DESCRIBE on the
// group (per group, GROUP_AUTHORIZATION_FAILED) and on each topic
// (per partition, TOPIC_AUTHORIZATION_FAILED) are checked here.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/protocol"
	"github.com/minibroker/minibroker/internal/share"
)

func (b *Broker) handleDescribeShareGroupOffsets(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	hwm := func(tp share.TP) (int64, bool) {
		t, ok := b.topicByID(tp.Topic)
		if !ok {
			return 0, false
		}
		p, ok := b.Partition(t.Name, tp.Partition)
		if !ok {
			return 0, false
		}
		return p.Offsets().HighWatermark, true
	}
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		if !b.authorizedGroup(r, g.GroupID, aclDescribe) {
			rg.ErrorCode = codeGroup
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		offs, found := b.shares.Offsets(g.GroupID, hwm)
		if !found && b.nonShareGroupExists(g.GroupID) {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		type want struct {
			name string
			id   [16]byte
			ps   []int32
		}
		var wants []want
		if g.Topics == nil {
			byTopic := map[[16]byte][]int32{}
			for tp := range offs {
				byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
			}
			for id, ps := range byTopic {
				t, ok := b.topicByID(id)
				if !ok {
					continue
				}
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				wants = append(wants, want{t.Name, id, ps})
			}
			sort.Slice(wants, func(i, j int) bool { return wants[i].name < wants[j].name })
		} else {
			for _, t := range g.Topics {
				w := want{name: t.Topic, ps: t.Partitions}
				if tt, ok := b.Topic(t.Topic); ok {
					w.id = tt.ID
				}
				wants = append(wants, w)
			}
		}
		for _, w := range wants {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic, rt.TopicID = w.name, w.id
			for _, p := range w.ps {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
				switch {
				case !b.authorizedTopic(r, w.name, aclDescribe):
					rp.ErrorCode = codeTopic
				case w.id == [16]byte{}:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					if o, ok := offs[share.TP{Topic: w.id, Partition: p}]; ok {
						rp.StartOffset, rp.Lag = o.Start, o.Lag
						if part, ok := b.Partition(w.name, p); ok {
							rp.LeaderEpoch = part.LeaderEpoch()
						}
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
