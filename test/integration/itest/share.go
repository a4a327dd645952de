package itest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/broker"
	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/share"
	"github.com/minibroker/minibroker/minibrokertest"
)

// ShareRaw is a share group member speaking the share APIs by hand.
type ShareRaw struct {
	T      *testing.T
	Cl     *kgo.Client
	Group  string
	Member string
	Topic  [16]byte
	epoch  int32 // share session epoch
	// topicName is the subscription (default "sc").
	TopicName string
	mepoch    int32 // member epoch
}

func (s *ShareRaw) Join() {
	s.T.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	topic := s.TopicName
	if topic == "" {
		topic = "sc"
	}
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = s.Group, s.Member, 0, []string{topic}
	resp, err := req.RequestWith(context.Background(), s.Cl)
	if err != nil || resp.ErrorCode != 0 {
		s.T.Fatalf("join: %v %+v", err, resp)
	}
	s.mepoch = resp.MemberEpoch
}

func (s *ShareRaw) Leave() {
	s.T.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = s.Group, s.Member, -1
	resp, err := req.RequestWith(context.Background(), s.Cl)
	if err != nil || resp.ErrorCode != 0 {
		s.T.Fatalf("leave: %v %+v", err, resp)
	}
}

// Fetch acquires records: offset -> delivery count.
func (s *ShareRaw) Fetch(max int32) map[int64]int16 {
	s.T.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = &s.Group, &s.Member
	req.ShareSessionEpoch, req.MaxWaitMillis, req.MaxBytes, req.MaxRecords = s.epoch, 500, 1<<20, max
	if s.epoch == 0 {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = s.Topic
		rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(context.Background(), s.Cl)
	if err != nil || resp.ErrorCode != 0 {
		s.T.Fatalf("share fetch: %v %+v", err, resp)
	}
	s.epoch++
	out := map[int64]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				s.T.Fatalf("share fetch partition code %d", p.ErrorCode)
			}
			for _, ar := range p.AcquiredRecords {
				for o := ar.FirstOffset; o <= ar.LastOffset; o++ {
					out[o] = ar.DeliveryCount
				}
			}
		}
	}
	return out
}

func (s *ShareRaw) Ack(first, last int64, typ int8) {
	s.T.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &s.Group, &s.Member, s.epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = s.Topic
	rt.Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}}}}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), s.Cl)
	if err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		s.T.Fatalf("share acknowledge: %v %+v", err, resp)
	}
	s.epoch++
}

// ShareBroker starts an in-process broker (StartBroker) with FastShare's
// settings and topic, the share coordinator's test hooks h (its negative
// controls, which minibrokertest does not offer), and settings set after
// them; coordinator topics have one partition each, as minibrokertest's.
func ShareBroker(t *testing.T, topic string, h share.TestHooks, settings map[string]string) *RawCluster {
	t.Helper()
	r := StartBroker(t, BrokerOptions{
		Hooks: broker.TestHooks{Share: h},
		Config: func(c *config.Config) {
			for _, m := range []map[string]string{oneCoordinatorPartition, fastShareSettings, settings} {
				for k, v := range m {
					if err := c.Set(k, v); err != nil {
						t.Fatal(err)
					}
				}
			}
		},
	})
	if _, err := r.B.CreateTopic(topic, 1, nil, [16]byte{}, false); err != nil {
		t.Fatal(err)
	}
	return r
}

// FastShare are broker settings that make share groups react quickly in
// tests.
func FastShare(topic string) []minibrokertest.Option {
	opts := []minibrokertest.Option{minibrokertest.Topic(topic, 1)}
	for k, v := range fastShareSettings {
		opts = append(opts, minibrokertest.Set(k, v))
	}
	return opts
}

// fastShareSettings are FastShare's settings.
var fastShareSettings = map[string]string{
	"group.share.session.timeout.ms":    "10000",
	"group.share.heartbeat.interval.ms": "500",
}

// oneCoordinatorPartition gives each coordinator topic one partition, as
// minibrokertest does (Kafka's 50 make a start slower).
var oneCoordinatorPartition = map[string]string{
	"offsets.topic.num.partitions":                 "1",
	"transaction.state.log.num.partitions":         "1",
	"share.coordinator.state.topic.num.partitions": "1",
}

// SetShareEarliest sets the group's share.auto.offset.reset to earliest.
func SetShareEarliest(t *testing.T, addr, group string) {
	t.Helper()
	SetGroupConfigs(t, addr, group, map[string]string{"share.auto.offset.reset": "earliest"})
}

// SetGroupConfigs sets group configs (IncrementalAlterConfigs, GROUP).
func SetGroupConfigs(t *testing.T, addr, group string, configs map[string]string) {
	t.Helper()
	cl := NewClient(t, addr)
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("set group configs: %v %+v", err, resp)
	}
}

// DescribeShareStart is the share partition's start offset (partition 0).
func DescribeShareStart(t *testing.T, addr, group, topic string) int64 {
	t.Helper()
	return DescribeShareStartOr(t, addr, group, topic)
}

// DescribeShareStartOr is describeShareStart, -1 for a group with no
// state for the partition.
func DescribeShareStartOr(t *testing.T, addr, group, topic string) int64 {
	t.Helper()
	cl := NewClient(t, addr)
	defer cl.Close()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	g.Topics = append(g.Topics, rt)
	req.Groups = append(req.Groups, g)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("describe share offsets: %+v", resp)
	}
	p := resp.Groups[0].Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("describe share offsets: code %d", p.ErrorCode)
	}
	return p.StartOffset
}
