package broker

// Topic-level configs: checked against the one settings table
// (internal/config), stored in topics.json beside the topic, and applied
// to the topic's running partitions when altered (AlterConfigs,
// IncrementalAlterConfigs): no restart, as Kafka.

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/config"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/psm"
)

// checkTopicConfigs validates topic-level configs against the settings
// table: an unknown name or a value outside its rule is INVALID_CONFIG,
// the message naming the key, the value and the rule.
func checkTopicConfigs(cfgs map[string]string) error {
	names := make([]string, 0, len(cfgs))
	for k := range cfgs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := config.ValidateTopicConfig(k, cfgs[k]); err != nil {
			return fmt.Errorf("%w: %w", errInvalidConfig, err)
		}
	}
	return nil
}

// sortedTopicConfigNames lists the topic-level configs, by name.
func sortedTopicConfigNames() []string {
	var names []string
	for _, s := range config.TopicSettings() {
		names = append(names, s.Topic)
	}
	sort.Strings(names)
	return names
}

// configsOf returns a topic's overrides (never to be modified).
func (b *Broker) configsOf(t *Topic) map[string]string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return t.Configs
}

// configSource says where a topic config's value comes from.
type configSource int

const (
	sourceDefault configSource = 1 // Kafka's (or minibroker's) default
	sourceStatic  configSource = 2 // the broker setting, set at start-up
	sourceTopic   configSource = 3 // the topic's override
	// the broker setting, changed at run time for this broker or as the
	// cluster default (broker_configs.go)
	sourceDynamicBroker  configSource = 4
	sourceDynamicDefault configSource = 5
)

// topicValue is a topic config's effective value given the topic's
// overrides, and where it comes from.
func (b *Broker) topicValue(overrides map[string]string, name string) (string, configSource) {
	if v, ok := overrides[name]; ok {
		return v, sourceTopic
	}
	s, ok := config.LookupTopic(name)
	if !ok {
		return "", sourceDefault
	}
	if s.Name != "" {
		switch v, src := b.cfg.ValueSource(s.Name); src {
		case config.SourceDynamicBroker:
			return v, sourceDynamicBroker
		case config.SourceDynamicDefault:
			return v, sourceDynamicDefault
		case config.SourceStatic:
			return v, sourceStatic
		}
	}
	return s.Default, sourceDefault
}

// partitionConfig is what the partitions of a topic with these overrides
// run with.
func (b *Broker) partitionConfig(overrides map[string]string) partition.Config {
	num := func(name string) int64 {
		v, _ := b.topicValue(overrides, name)
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n
	}
	str := func(name string) string {
		v, _ := b.topicValue(overrides, name)
		return strings.TrimSpace(v)
	}
	lc := mlog.DefaultConfig()
	lc.SegmentBytes = num("segment.bytes")
	lc.SegmentMs = num("segment.ms")
	lc.RetentionMs = num("retention.ms")
	lc.RetentionBytes = num("retention.bytes")
	lc.IndexIntervalBytes = int(num("index.interval.bytes"))
	lc.SegmentIndexBytes = int(num("segment.index.bytes"))
	lc.FlushIntervalMessages = num("flush.messages")
	lc.FlushIntervalMs = num("flush.ms")
	compacted, deleted := false, false
	for _, p := range config.SplitList(str("cleanup.policy")) {
		compacted = compacted || p == "compact"
		deleted = deleted || p == "delete"
	}
	lc.Compact, lc.NoDelete = compacted, !deleted
	lc.MinCleanableDirtyRatio, _ = strconv.ParseFloat(str("min.cleanable.dirty.ratio"), 64)
	lc.MinCompactionLagMs = num("min.compaction.lag.ms")
	lc.MaxCompactionLagMs = num("max.compaction.lag.ms")
	lc.DeleteRetentionMs = num("delete.retention.ms")
	lc.WritebackBytes = b.cfg.Int64("log.writeback.bytes")
	lc.DropBehindBytes = dropBehindBytes(b.cfg.Int64("log.writeback.drop.behind.bytes"))
	lc.Preallocate = str("preallocate") == "true"
	return partition.Config{
		Compacted:       compacted,
		Log:             lc,
		PSM:             psm.Config{MaxBatchesPerProducer: 5, ProducerIDExpirationMs: b.cfg.Int64("producer.id.expiration.ms")},
		MessageMaxBytes: int32(num("max.message.bytes")),
		LogAppendTime:   str("message.timestamp.type") == "LogAppendTime",
		BoundTimestamps: true,
		// message.timestamp.difference.max.ms, which Kafka 3.6
		// deprecated for these two, is accepted and not acted on.
		TimestampBeforeMaxMs: num("message.timestamp.before.max.ms"),
		TimestampAfterMaxMs:  num("message.timestamp.after.max.ms"),
	}
}

// SetTopicConfigs replaces a topic's overrides with configs (nil: none):
// AlterConfigs' semantics.
func (b *Broker) SetTopicConfigs(name string, configs map[string]string, validateOnly bool) error {
	return b.updateTopicConfigs(name, func(map[string]string) (map[string]string, error) {
		return maps.Clone(configs), nil
	}, validateOnly)
}

// updateTopicConfigs computes a topic's new overrides from its current
// ones (update may modify the copy it is given) and checks every one: on
// any error nothing changes. Unless validateOnly, the new set is written
// to topics.json (atomically and fsynced, before anyone sees it: a crash
// keeps the old set or the new one), then made visible (DescribeConfigs)
// under b.mu (commitTopics), then applied to the topic's running
// partitions, all before the request is answered. b.adminMu is held
// throughout, as for every change to topics.json, so concurrent updates
// of one topic each see the other's result; b.mu only to publish the new
// set: Produce and Fetch do not wait for the fsyncs.
func (b *Broker) updateTopicConfigs(name string, update func(map[string]string) (map[string]string, error), validateOnly bool) error {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	t, ok := b.Topic(name)
	if !ok {
		return fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	next, err := update(maps.Clone(b.configsOf(t)))
	if err != nil {
		return err
	}
	if !b.knobs.skipValidation {
		if err := checkTopicConfigs(next); err != nil {
			return err
		}
	}
	if validateOnly {
		return nil
	}
	if len(next) == 0 {
		next = nil
	}
	set := func(l map[string]topicJSON) {
		e := l[name]
		e.Configs = next
		l[name] = e
	}
	if err := b.commitTopics(set, func() { t.Configs = next }); err != nil {
		return err
	}
	// Outside b.mu (SetConfig waits for an append in progress): the
	// partitions stay open, Close and Kill taking adminMu, and
	// t.Partitions, which changes only under adminMu, is stable.
	if !b.knobs.skipApplyConfigs {
		pc := b.partitionConfig(next)
		for _, p := range t.Partitions {
			p.SetConfig(pc)
		}
		b.cleaner.poke() // a compaction setting is followed at once
	}
	b.logger.Info("altered topic configs", zap.String("topic", name), zap.Any("configs", next))
	return nil
}

// dropBehindBytes is log.writeback.drop.behind.bytes with its default, -1,
// resolved for this machine (mlog.AutoDropBehind).
func dropBehindBytes(setting int64) int64 {
	if setting < 0 {
		return mlog.AutoDropBehind()
	}
	return setting
}

// logDropBehind says at start what drop-behind the partitions get and why.
func (b *Broker) logDropBehind() {
	setting := b.cfg.Int64("log.writeback.drop.behind.bytes")
	b.logger.Info("page cache drop-behind (log.writeback.drop.behind.bytes; -1: on only where the host takes back the memory the machine frees)",
		zap.Int64("setting", setting), zap.Int64("bytes", dropBehindBytes(setting)),
		zap.Bool("free_page_reporting", mlog.FreePageReporting("/sys")))
}
