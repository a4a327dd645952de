package mirror

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// source is a mirror's connection to its source cluster: kgo handles
// connections, version negotiation and broker discovery; requests are raw
// kmsg so bytes come back exactly as the source stores them.
type source struct {
	cl *kgo.Client
	// settings is the mirror's settings now (they may change
	// while it runs): its broker loops read mirror.fetch.wait.max.ms and
	// mirror.replication.throttled.rate before each fetch.
	settings func() *Settings
	// throttle is the mirror's token bucket (mirror.replication.throttled.rate),
	// shared by its broker loops.
	throttle *throttle
	// noFetchEpoch is the knob of the same name (hooks.go).
	noFetchEpoch bool

	mu    sync.Mutex // guards loops
	loops map[int32]*brokerLoop
}

// sourceConfig is everything a mirror's source client is made from
// (Manager.sourceConfig builds it from the mirror's spec): the bootstrap
// addresses, the client id and the security settings (Kafka's client
// names, checked by parseSourceConfig). newSourceClient is the one place
// that turns it into a client, so every connection to a source (fetchers,
// metadata, group sync, the check at create) is made the same way.
type sourceConfig struct {
	Addrs    []string
	ClientID string
	Settings map[string]string
	// Dial, when set, dials the source's connections (the broker's fault
	// injection); nil dials directly.
	Dial func(ctx context.Context, network, host string) (net.Conn, error)
}

// newSourceClient makes the kgo client for a source.
func newSourceClient(cfg sourceConfig) (*kgo.Client, error) {
	clientID := cfg.ClientID
	if clientID == "" {
		clientID = "minibroker-mirror"
	}
	sec, err := parseSourceConfig(cfg.Settings)
	if err != nil {
		return nil, fmt.Errorf("mirror: source client: %w", err)
	}
	secOpts, err := sec.kgoOpts(cfg.Dial, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("mirror: source client: %w", err)
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(cfg.Addrs...),
		kgo.ClientID(clientID),
		kgo.RequestRetries(2),
		kgo.RetryTimeout(5 * time.Second),
		kgo.DialTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(5 * time.Second),
	}, secOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("mirror: source client: %w", err)
	}
	return cl, nil
}

func newSource(cfg sourceConfig) (*source, error) {
	cl, err := newSourceClient(cfg)
	if err != nil {
		return nil, err
	}
	return &source{cl: cl}, nil
}

// checkSource connects to a source as a mirror would and asks it for its
// API versions and its cluster id (Metadata with no topics). It answers the
// cluster id, or why the source cannot be mirrored.
func checkSource(ctx context.Context, cfg sourceConfig) (string, error) {
	cl, err := newSourceClient(cfg)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	where := strings.Join(cfg.Addrs, ",")
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("mirror: source %s unreachable: %w", where, err)
	}
	if err := kerr.ErrorForCode(versions.ErrorCode); err != nil {
		return "", fmt.Errorf("mirror: source %s ApiVersions: %w", where, err)
	}
	for _, need := range []int16{kmsg.Fetch.Int16(), kmsg.Metadata.Int16(), kmsg.ListOffsets.Int16(), kmsg.OffsetForLeaderEpoch.Int16()} {
		found := false
		for _, k := range versions.ApiKeys {
			found = found || k.ApiKey == need
		}
		if !found {
			return "", fmt.Errorf("mirror: source %s does not serve %s", where, kmsg.NameForKey(need))
		}
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{} // none: only brokers and the cluster id
	resp, err := md.RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("mirror: source %s metadata: %w", where, err)
	}
	if resp.ClusterID == nil {
		return "", nil // Metadata before v2 has no cluster id
	}
	return *resp.ClusterID, nil
}

// close stops the broker loops (after every fetcher left them) and the
// client.
func (s *source) close() {
	s.mu.Lock()
	loops := s.loops
	s.loops = nil
	s.mu.Unlock()
	for _, l := range loops {
		l.close()
	}
	s.cl.Close()
}

// topicInfo is what the source says of a topic.
type topicInfo struct {
	ID         [16]byte
	Partitions map[int32]int32 // partition → leader
	Epochs     map[int32]int32 // partition → leader epoch (-1: not said)
	ClusterID  string
}

func (s *source) describeTopic(ctx context.Context, topic string) (topicInfo, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return topicInfo{}, fmt.Errorf("source metadata: %w", err)
	}
	info := topicInfo{Partitions: map[int32]int32{}, Epochs: map[int32]int32{}}
	if resp.ClusterID != nil {
		info.ClusterID = *resp.ClusterID
	}
	if len(resp.Topics) != 1 {
		return info, fmt.Errorf("source metadata: %d topics for %q", len(resp.Topics), topic)
	}
	t := resp.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		return info, fmt.Errorf("source topic %q: %w", topic, err)
	}
	info.ID = t.TopicID
	for _, p := range t.Partitions {
		info.Partitions[p.Partition] = p.Leader
		info.Epochs[p.Partition] = p.LeaderEpoch
	}
	return info, nil
}

// topicConfigs returns the topic's overrides at the source (configs whose
// source is the topic itself), to copy onto the local topic.
func (s *source) topicConfigs(ctx context.Context, topic string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType = kmsg.ConfigResourceTypeTopic
	rr.ResourceName = topic
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return nil, fmt.Errorf("source describe configs: %w", err)
	}
	out := map[string]string{}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return nil, fmt.Errorf("source configs of %q: %w", topic, err)
		}
		for _, c := range r.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig && c.Value != nil {
				out[c.Name] = *c.Value
			}
		}
	}
	return out, nil
}

// listOffset asks the partition's leader for an offset (-2 earliest, -1
// latest).
func (s *source) listOffset(ctx context.Context, topic string, partition int32, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, errors.New("source list offsets: malformed response")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, err
	}
	return p.Offset, nil
}

// endOffsetForEpoch asks the source where a leader epoch ends
// (OffsetForLeaderEpoch): the largest epoch ≤ epoch it has, and the start
// of the epoch after it.
func (s *source) endOffsetForEpoch(ctx context.Context, topic string, partition, epoch int32) (int32, int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = partition, -1, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return -1, -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, -1, errors.New("source offset for leader epoch: malformed response")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, -1, err
	}
	return p.LeaderEpoch, p.EndOffset, nil
}

// fetchResult is one partition's answer to a fetch.
type fetchResult struct {
	Records       []byte
	HighWatermark int64
	LastStable    int64
	LogStart      int64
}
