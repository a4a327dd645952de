package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A ShareFetch waiting on a full window (group.share.partition.max.record.locks
// records acquired by another member) gets records as soon as that
// member's acknowledgement moves the SPSO, not an empty answer at the
// end of its MaxWait. Negative control: without the wake-up in
// share.Coordinator.Ack, member B's fetch returns empty after its 20 s.
func TestShareFetchWokenByAck(t *testing.T) {
	b, cl := startServing(t, t.TempDir(), nil, "group.share.partition.max.record.locks=100")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, 150)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "wake", Value: []byte("v")}
	}
	if _, err := b.CreateTopic("wake", 1, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	topic, _ := b.Topic("wake")
	const group = "wake-group"
	setShareResetEarliest(t, ctx, cl, group)
	fetch := func(member string, wait int32) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(member)
		req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = wait, 1<<20, 500, 500
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = topic.ID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Errorf("share fetch %s: %v %+v", member, err, resp)
			return nil
		}
		return resp
	}
	acquired := func(resp *kmsg.ShareFetchResponse) (first, last int64) {
		first, last = -1, -1
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				for _, ar := range p.AcquiredRecords {
					if first < 0 {
						first = ar.FirstOffset
					}
					last = ar.LastOffset
				}
			}
		}
		return first, last
	}
	a := fetch("member-a", 0)
	if f, l := acquired(a); f != 0 || l != 99 {
		t.Fatalf("member A acquired %d-%d, want 0-99 (the window's 100)", f, l)
	}
	got := make(chan *kmsg.ShareFetchResponse, 1)
	go func() { got <- fetch("member-b", 20_000) }()
	time.Sleep(300 * time.Millisecond) // B's fetch is most likely waiting; if not, it finds the room made below
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr("member-a"), 1
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = topic.ID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	ab := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 0, 99, []int8{1}
	ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, ab)
	at.Partitions = append(at.Partitions, ap)
	ack.Topics = append(ack.Topics, at)
	if resp, err := ack.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %v %+v", err, resp)
	}
	resp := <-got
	if resp == nil {
		return
	}
	if f, l := acquired(resp); f != 100 || l != 149 {
		t.Fatalf("member B's waiting fetch acquired %d-%d, want 100-149 once A's acknowledgement made room", f, l)
	}
}

// setShareResetEarliest sets the share group's share.auto.offset.reset to
// earliest, so it starts at the log's first record.
func setShareResetEarliest(tb testing.TB, ctx context.Context, cl *kgo.Client, group string) {
	tb.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		tb.Fatalf("group config: %v %+v", err, resp)
	}
}
