package broker

// Dynamic broker configs (Kafka's DynamicBrokerConfig): AlterConfigs and
// IncrementalAlterConfigs on a BROKER resource change, at run time, the
// settings Kafka marks per-broker or cluster-wide, for this broker
// (resource name its node id: DYNAMIC_BROKER_CONFIG) or as the cluster
// default (resource name "": DYNAMIC_DEFAULT_BROKER_CONFIG). Checks and
// messages are Kafka's (config.CheckDynamic): a read-only setting is
// INVALID_REQUEST "Cannot update these configs dynamically: Set(…)", a
// per-broker one at the cluster level INVALID_REQUEST "Cannot update these
// configs at default cluster level, broker id must be specified: Set(…)",
// a bad value INVALID_REQUEST with the rule (Kafka wraps its
// ConfigException so, KAFKA-13609).
//
// A change is stored durably before the answer, in one file of the data
// dir rewritten atomically (vfs.WriteFileAtomicPrivate: a temporary file
// fsynced, renamed, the directory fsynced; mode 0600, as it may hold a
// password):
//
//	{"version":1,"broker":{"<name>":"<value>",…},"cluster_default":{…}}
//
// and applied at once: every read of a broker setting sees the new layers
// (config.DynamicLayers), and every partition takes its topic's
// configuration again, so a new log.retention.ms, log.segment.bytes,
// message.max.bytes, log.cleanup.policy, log.message.timestamp.*,
// log.flush.* or producer.id.expiration.ms default reaches the topics
// that do not override it, as Kafka's DynamicLogConfig does.
//
// Deviations: max.connections, max.connections.per.ip(.overrides) and
// max.connection.creation.rate are stored and described but take effect
// at the next start (minibroker sizes its listeners once); the listener
// and security settings minibroker acts on are refused (it opens its
// listeners at start-up only); a name no table knows is refused.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"go.uber.org/zap"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/vfs"
)

const brokerConfigsFile = "broker-configs.json"

type brokerConfigsDoc struct {
	Version        int               `json:"version"`
	Broker         map[string]string `json:"broker"`
	ClusterDefault map[string]string `json:"cluster_default"`
}

// openBrokerConfigs reads the stored dynamic configs (absent: none) and
// gives b.cfg its run-time layers; before any partition opens.
func (b *Broker) openBrokerConfigs() error {
	var doc brokerConfigsDoc
	raw, err := vfs.ReadFile(b.fs, filepath.Join(b.dataDir, brokerConfigsFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", brokerConfigsFile, err)
	default:
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("parse %s: %w", brokerConfigsFile, err)
		}
		if doc.Version != 1 {
			return fmt.Errorf("%s: unknown version %d", brokerConfigsFile, doc.Version)
		}
		// A value stored by an older minibroker that a newer rule refuses
		// stops the start, as a bad static setting does.
		if err := config.CheckDynamic(doc.Broker, true); err != nil {
			return fmt.Errorf("%s: %w", brokerConfigsFile, err)
		}
		if err := config.CheckDynamic(doc.ClusterDefault, false); err != nil {
			return fmt.Errorf("%s: %w", brokerConfigsFile, err)
		}
	}
	b.cfg.EnableDynamic(config.DynamicLayers{Broker: doc.Broker, Default: doc.ClusterDefault})
	return nil
}

// brokerResource checks a BROKER resource's name: "" (the cluster
// default) or this node's id.
func (b *Broker) brokerResource(name string) (perBroker bool, err error) {
	if name == "" {
		return false, nil
	}
	if name != strconv.Itoa(int(b.nodeID)) {
		return false, fmt.Errorf("%w: unexpected broker id %q (this node is %d)", errInvalidRequest, name, b.nodeID)
	}
	return true, nil
}

// alterBrokerConfigs changes one layer: edit gets a copy of its settings
// and changes it; the result is checked whole, then (unless validateOnly)
// stored, installed and applied.
func (b *Broker) alterBrokerConfigs(name string, edit func(map[string]string) error, validateOnly bool) error {
	perBroker, err := b.brokerResource(name)
	if err != nil {
		return err
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	cur := b.cfg.Dynamic()
	next := maps.Clone(cur.Default)
	if perBroker {
		next = maps.Clone(cur.Broker)
	}
	if next == nil {
		next = map[string]string{}
	}
	if err := edit(next); err != nil {
		return err
	}
	if err := config.CheckDynamic(next, perBroker); err != nil {
		return fmt.Errorf("%w: %s", errInvalidRequest, err.Error())
	}
	if validateOnly {
		return nil
	}
	layers := config.DynamicLayers{Broker: cur.Broker, Default: cur.Default}
	if perBroker {
		layers.Broker = next
	} else {
		layers.Default = next
	}
	raw, err := json.Marshal(brokerConfigsDoc{Version: 1, Broker: layers.Broker, ClusterDefault: layers.Default})
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomicPrivate(b.fs, b.dataDir, filepath.Join(b.dataDir, brokerConfigsFile), raw); err != nil {
		return fmt.Errorf("storing %s: %w", brokerConfigsFile, err)
	}
	b.cfg.SetDynamic(layers)
	b.reapplyPartitionConfigsLocked()
	names := slices.Sorted(maps.Keys(next))
	b.logger.Info("altered dynamic broker configs", zap.String("resource", name), zap.Strings("now set", names))
	return nil
}

// reapplyPartitionConfigsLocked gives every partition its topic's
// configuration again, after a broker default changed; b.adminMu held
// (t.Partitions changes only under it).
func (b *Broker) reapplyPartitionConfigsLocked() {
	if b.knobs.skipApplyConfigs {
		return
	}
	for _, name := range b.TopicNames() {
		t, ok := b.Topic(name)
		if !ok {
			continue
		}
		pc := b.partitionConfig(b.configsOf(t))
		for _, p := range t.Partitions {
			p.SetConfig(pc)
		}
	}
}

// applyBrokerConfigOp applies one IncrementalAlterConfigs op to a layer,
// as Kafka's ConfigAdminManager.prepareIncrementalConfigs does: APPEND
// and SUBTRACT start from the stored value, else the setting's default.
func applyBrokerConfigOp(cfgs map[string]string, c kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	switch c.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		cfgs[c.Name] = *c.Value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(cfgs, c.Name)
	default: // APPEND, SUBTRACT
		s, known := config.Lookup(c.Name)
		if !known {
			return fmt.Errorf("%w: unknown broker config: %s", errInvalidRequest, c.Name)
		}
		if s.Kind != config.KindList {
			return fmt.Errorf("%w: Config value append is not allowed for config key: %s", errInvalidRequest, c.Name)
		}
		cur, ok := cfgs[c.Name]
		if !ok {
			cur = s.Default
		}
		cfgs[c.Name] = applyListOp(cur, c.Op, *c.Value)
	}
	return nil
}

// brokerConfigSource is Kafka's source of a broker setting's value.
func brokerConfigSource(src config.Source) kmsg.ConfigSource {
	switch src {
	case config.SourceDynamicBroker:
		return kmsg.ConfigSourceDynamicBrokerConfig
	case config.SourceDynamicDefault:
		return kmsg.ConfigSourceDynamicDefaultBrokerConfig
	case config.SourceStatic:
		return kmsg.ConfigSourceStaticBrokerConfig
	}
	return kmsg.ConfigSourceDefaultConfig
}
