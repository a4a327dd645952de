package broker

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCurrentLeaderEpochCheck: Fetch, ListOffsets and OffsetForLeaderEpoch
// answer FENCED_LEADER_EPOCH for a CurrentLeaderEpoch below the
// partition's, UNKNOWN_LEADER_EPOCH for one above it, and serve -1 or the
// current epoch, over TCP with kgo (the one check, partition.CheckLeaderEpoch).
func TestCurrentLeaderEpochCheck(t *testing.T) {
	b, cl := startServing(t, t.TempDir(), nil)
	createTopics(t, cl, false, map[string]int32{"t": 1})
	p := b.partitionsOf("t").at(0)
	if _, err := p.WriteBarrier("source"); err != nil { // leader epoch 0 → 1
		t.Fatal(err)
	}
	if e := p.LeaderEpoch(); e != 1 {
		t.Fatalf("leader epoch %d after the barrier, want 1", e)
	}
	ctx := context.Background()
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	topic := "t"
	mt.Topic = &topic
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	topicID := mresp.Topics[0].TopicID
	apis := map[string]func(current int32) (int16, error){
		"Fetch": func(current int32) (int16, error) {
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "t", topicID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes, rp.LogStartOffset = 0, current, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].Partitions[0].ErrorCode, nil
		},
		"ListOffsets": func(current int32) (int16, error) {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = 0, current, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].Partitions[0].ErrorCode, nil
		},
		"OffsetForLeaderEpoch": func(current int32) (int16, error) {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, current, 1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return 0, err
			}
			return resp.Topics[0].Partitions[0].ErrorCode, nil
		},
	}
	for name, call := range apis {
		for _, c := range []struct {
			current int32
			want    *kerr.Error
		}{{0, kerr.FencedLeaderEpoch}, {2, kerr.UnknownLeaderEpoch}, {1, nil}, {-1, nil}} {
			t.Run(fmt.Sprintf("%s/current=%d", name, c.current), func(t *testing.T) {
				code, err := call(c.current)
				if err != nil {
					t.Fatal(err)
				}
				want := int16(0)
				if c.want != nil {
					want = c.want.Code
				}
				if code != want {
					t.Fatalf("error code %d (%v), want %d (%v)", code, kerr.ErrorForCode(code), want, c.want)
				}
			})
		}
	}
}
