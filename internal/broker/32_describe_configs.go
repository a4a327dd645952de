package broker

// DescribeConfigs, v0–v4.
//
// Topics (resource type 2): every topic-level config minibroker knows, with
// its value and source (DYNAMIC_TOPIC_CONFIG for an override,
// DEFAULT_CONFIG otherwise) and, when asked (v1+), the broker setting it
// falls back to as a synonym. Broker (4), named by this node's id or "":
// the Kafka-named settings (STATIC_BROKER_CONFIG when set, DEFAULT_CONFIG
// otherwise). Other resource types answer INVALID_REQUEST.

import (
	"context"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/protocol"
)

func (b *Broker) handleDescribeConfigs(_ context.Context, r *protocol.Request) kmsg.Response {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		want := func(name string) bool { return rr.ConfigNames == nil || slices.Contains(rr.ConfigNames, name) }
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			t, ok := b.Topic(rr.ResourceName)
			if !ok {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			for _, name := range sortedTopicConfigNames() {
				if want(name) {
					sr.Configs = append(sr.Configs, b.topicConfigEntry(t, name, req.Version, req.IncludeSynonyms))
				}
			}
		case kmsg.ConfigResourceTypeBroker:
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(b.nodeID)) {
				sr.ErrorCode = kerr.InvalidRequest.Code
				break
			}
			for _, s := range config.Settings() {
				if want(s.Name) {
					sr.Configs = append(sr.Configs, b.brokerConfigEntry(s, req.Version))
				}
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func sortedTopicConfigNames() []string {
	names := make([]string, 0, len(topicConfigNames))
	for n := range topicConfigNames {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (b *Broker) topicConfigEntry(t *Topic, name string, version int16, synonyms bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	v, isDefault := b.topicValue(t, name)
	c.Name, c.Value = name, &v
	c.IsDefault = isDefault
	c.Source = kmsg.ConfigSourceDynamicTopicConfig
	if isDefault {
		c.Source = kmsg.ConfigSourceDefaultConfig
		if broker := topicConfigNames[name]; broker != "" {
			if _, set := b.cfg.Kafka[broker]; set {
				c.Source = kmsg.ConfigSourceStaticBrokerConfig
			}
		}
	}
	c.ConfigType = configType(name)
	if synonyms && version >= 1 {
		if !isDefault {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = name, &v, kmsg.ConfigSourceDynamicTopicConfig
			c.ConfigSynonyms = append(c.ConfigSynonyms, s)
		}
		if broker := topicConfigNames[name]; broker != "" {
			bv := b.cfg.String(broker)
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = broker, &bv, kmsg.ConfigSourceDefaultConfig
			c.ConfigSynonyms = append(c.ConfigSynonyms, s)
		}
	}
	return c
}

func (b *Broker) brokerConfigEntry(s config.Setting, version int16) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	v := b.cfg.String(s.Name)
	c.Name, c.Value, c.ReadOnly = s.Name, &v, true
	_, set := b.cfg.Kafka[s.Name]
	c.IsDefault = !set
	c.Source = kmsg.ConfigSourceDefaultConfig
	if set {
		c.Source = kmsg.ConfigSourceStaticBrokerConfig
	}
	switch s.Kind {
	case config.KindBool:
		c.ConfigType = kmsg.ConfigTypeBoolean
	case config.KindInt:
		c.ConfigType = kmsg.ConfigTypeLong
	default:
		c.ConfigType = kmsg.ConfigTypeString
	}
	if version >= 3 {
		doc := s.Doc
		c.Documentation = &doc
	}
	return c
}

func configType(topicConfig string) kmsg.ConfigType {
	switch topicConfig {
	case "cleanup.policy":
		return kmsg.ConfigTypeList
	case "message.timestamp.type", "compression.type":
		return kmsg.ConfigTypeString
	case "unclean.leader.election.enable", "message.downconversion.enable", "preallocate", "remote.storage.enable":
		return kmsg.ConfigTypeBoolean
	case "min.cleanable.dirty.ratio":
		return kmsg.ConfigTypeDouble
	case "min.insync.replicas", "max.message.bytes", "index.interval.bytes", "segment.index.bytes", "segment.bytes":
		return kmsg.ConfigTypeInt
	}
	return kmsg.ConfigTypeLong
}
