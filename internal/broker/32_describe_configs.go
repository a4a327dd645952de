package broker

// DescribeConfigs, v0–v4.
//
// Topics (resource type 2): every topic-level config of the settings table
// (internal/config), with its value and source: DYNAMIC_TOPIC_CONFIG for
// the topic's override (CreateTopics, AlterConfigs,
// IncrementalAlterConfigs), STATIC_BROKER_CONFIG when the broker setting
// it falls back to was set at start-up, DEFAULT_CONFIG otherwise; and,
// when asked (v1+), the synonyms in Kafka's order (the override, the
// static broker setting, the default). Broker (4), named by this node's
// id: every broker setting, with its source (DYNAMIC_BROKER_CONFIG,
// DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG;
// broker_configs.go), read-only unless Kafka changes it at run time, and
// its synonyms when asked; named "": the cluster default's dynamic
// settings only, as Kafka; a PASSWORD's value is null and marked
// sensitive, as Kafka.
// GROUP (32) and CLIENT_METRICS (16): every config of Kafka 4's group
// configs or of a client-metrics subscription, GROUP_CONFIG or
// CLIENT_METRICS_CONFIG when set, DEFAULT_CONFIG otherwise
// (resource_configs.go); an empty name is INVALID_REQUEST.
// Other resource types answer INVALID_REQUEST.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/mirror"
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
			overrides := b.configsOf(t)
			for _, s := range config.TopicSettings() {
				if want(s.Topic) {
					sr.Configs = append(sr.Configs, b.topicConfigEntry(overrides, s, req.Version, req.IncludeSynonyms))
				}
			}
			sr.Configs = append(sr.Configs, b.mirrorConfigEntries(rr.ResourceName, want, req.Version)...)
			slices.SortFunc(sr.Configs, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int {
				return compareStrings(a.Name, b.Name)
			})
		case kmsg.ConfigResourceTypeBroker:
			perBroker, err := b.brokerResource(rr.ResourceName)
			if err != nil {
				sr.ErrorCode = kerr.InvalidRequest.Code
				break
			}
			defaults := b.cfg.Dynamic().Default
			for _, s := range config.Settings() {
				// The cluster default ("") is only what was set as the
				// cluster default at run time, as Kafka answers.
				if _, set := defaults[s.Name]; want(s.Name) && (perBroker || set) {
					sr.Configs = append(sr.Configs, b.brokerConfigEntry(s, perBroker, req.Version, req.IncludeSynonyms))
				}
			}
		case kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics:
			cfgs, err := b.describeResource(rr, req.Version)
			if err != nil {
				sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
				break
			}
			sr.Configs = cfgs
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// kafkaSource maps a topic config's source to Kafka's.
func kafkaSource(src configSource) kmsg.ConfigSource {
	switch src {
	case sourceTopic:
		return kmsg.ConfigSourceDynamicTopicConfig
	case sourceStatic:
		return kmsg.ConfigSourceStaticBrokerConfig
	case sourceDynamicBroker:
		return kmsg.ConfigSourceDynamicBrokerConfig
	case sourceDynamicDefault:
		return kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	return kmsg.ConfigSourceDefaultConfig
}

func (b *Broker) topicConfigEntry(overrides map[string]string, s config.Setting, version int16, synonyms bool) kmsg.DescribeConfigsResponseResourceConfig {
	name := s.Topic
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	v, src := b.topicValue(overrides, name)
	c.Name, c.Value = name, &v
	c.Source = kafkaSource(src)
	c.IsDefault = src == sourceDefault
	c.ConfigType = configType(s.Kind)
	if version >= 3 {
		doc := s.Doc
		c.Documentation = &doc
	}
	if synonyms && version >= 1 {
		if src == sourceTopic {
			sv := v
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = name, &sv, kmsg.ConfigSourceDynamicTopicConfig
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
		if s.Name != "" {
			l := b.cfg.Dynamic()
			for _, layer := range []struct {
				values map[string]string
				src    kmsg.ConfigSource
			}{{l.Broker, kmsg.ConfigSourceDynamicBrokerConfig}, {l.Default, kmsg.ConfigSourceDynamicDefaultBrokerConfig}} {
				if dv, ok := layer.values[s.Name]; ok {
					syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					syn.Name, syn.Value, syn.Source = s.Name, &dv, layer.src
					c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
				}
			}
			if _, set := b.cfg.Kafka[s.Name]; set {
				bv := b.cfg.String(s.Name)
				syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				syn.Name, syn.Value, syn.Source = s.Name, &bv, kmsg.ConfigSourceStaticBrokerConfig
				c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
			}
			dv := s.Default
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = s.Name, &dv, kmsg.ConfigSourceDefaultConfig
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
	}
	return c
}

func (b *Broker) brokerConfigEntry(s config.Setting, perBroker bool, version int16, synonyms bool) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.ReadOnly = s.Name, s.Dynamic == config.ReadOnly
	v, src := b.cfg.ValueSource(s.Name)
	if !perBroker {
		v, src = b.cfg.Dynamic().Default[s.Name], config.SourceDynamicDefault
	}
	if s.Sensitive() {
		c.IsSensitive = true
	} else {
		c.Value = &v
	}
	c.Source = brokerConfigSource(src)
	c.IsDefault = src == config.SourceDefault
	c.ConfigType = configType(s.Kind)
	if version >= 3 {
		doc := s.Doc
		c.Documentation = &doc
	}
	if synonyms && version >= 1 {
		// Kafka's order: this broker's, the cluster default, the static
		// setting, the default (the cluster default's answer starts at
		// its own layer).
		l := b.cfg.Dynamic()
		add := func(val string, src kmsg.ConfigSource) {
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Source = s.Name, src
			if !s.Sensitive() {
				syn.Value = &val
			}
			c.ConfigSynonyms = append(c.ConfigSynonyms, syn)
		}
		if v, ok := l.Broker[s.Name]; ok && perBroker {
			add(v, kmsg.ConfigSourceDynamicBrokerConfig)
		}
		if v, ok := l.Default[s.Name]; ok {
			add(v, kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		}
		if v, ok := b.cfg.Kafka[s.Name]; ok {
			add(v, kmsg.ConfigSourceStaticBrokerConfig)
		}
		add(s.Default, kmsg.ConfigSourceDefaultConfig)
	}
	return c
}

// configType is Kafka's DescribeConfigs type of a setting's kind.
func configType(k config.Kind) kmsg.ConfigType {
	switch k {
	case config.KindBool:
		return kmsg.ConfigTypeBoolean
	case config.KindInt:
		return kmsg.ConfigTypeInt
	case config.KindLong:
		return kmsg.ConfigTypeLong
	case config.KindList:
		return kmsg.ConfigTypeList
	case config.KindDouble:
		return kmsg.ConfigTypeDouble
	case config.KindPassword:
		return kmsg.ConfigTypePassword
	case config.KindShort:
		return kmsg.ConfigTypeShort
	case config.KindClass:
		return kmsg.ConfigTypeClass
	}
	return kmsg.ConfigTypeString
}

// mirrorConfigEntries describes how this broker mirrors a topic, while it
// does (a partition not yet STOPPED): mirror.name (KIP-1279's topic
// config) and mirror.source.cluster.id (a minibroker extension), read-only,
// as DYNAMIC_TOPIC_CONFIG. Another minibroker asked to mirror the topic
// from here reads them to refuse a mirror loop (internal/mirror/cycle.go).
// They are not settings: AlterConfigs refuses them as unknown names, and a
// mirror copying this topic's overrides drops them.
func (b *Broker) mirrorConfigEntries(topic string, want func(string) bool, version int16) []kmsg.DescribeConfigsResponseResourceConfig {
	if b.mirrors == nil {
		return nil
	}
	name, cluster, ok := b.mirrors.TopicMirror(topic)
	if !ok {
		return nil
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, kv := range [][2]string{{mirror.ConfigMirrorName, name}, {mirror.ConfigMirrorSourceClusterID, cluster}} {
		if !want(kv[0]) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		v := kv[1]
		c.Name, c.Value, c.ReadOnly = kv[0], &v, true
		c.Source = kmsg.ConfigSourceDynamicTopicConfig
		c.ConfigType = kmsg.ConfigTypeString
		if version >= 3 {
			doc := "minibroker: the mirror that copies this topic into this cluster, and its source cluster's id (read-only)"
			c.Documentation = &doc
		}
		out = append(out, c)
	}
	return out
}
