package broker

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/config"
	"github.com/minibroker/minibroker/internal/mirror"
	"github.com/minibroker/minibroker/internal/partition"
)

// openMirrors starts the mirror manager after topics are loaded: it makes
// mirrored partitions read-only again before anything is served, resumes
// fetchers and finishes interrupted failovers.
func (b *Broker) openMirrors(opts mirror.Options) error {
	opts.FS = b.fs
	opts.Logger = b.logger
	opts.Registry = b.registry
	if b.groups != nil {
		opts.Groups = b.groups
	}
	if b.shares != nil {
		opts.ShareGroups = mirrorShares{b}
	}
	if b.authz != nil {
		opts.ACLs = b.authz
	}
	parts := b.partitionsOf(mirrorStateTopic)
	if len(parts) == 0 {
		return fmt.Errorf("internal topic %s has no partition", mirrorStateTopic)
	}
	opts.StateTopic = mirror.PartitionStateTopic(parts[0], func() (*partition.Partition, error) {
		return b.reopenPartition(mirrorStateTopic, 0)
	})
	m, err := mirror.Open(mirrorLocal{b}, b.dataDir, opts)
	if err != nil {
		return err
	}
	b.mirrors = m
	m.Routes(b.HandleAdmin)
	return nil
}

// reopenPartition closes partition i of topic name and opens its files
// anew in its place: after a storage error took its log offline for
// writes, the open recovers it from what the disk holds (as a restart
// does). The mirrors' state topic calls it, under the mirror manager's
// lock; it takes only the registry lock, to swap the partition in.
func (b *Broker) reopenPartition(name string, i int32) (*partition.Partition, error) {
	t, ok := b.Topic(name)
	if !ok {
		return nil, fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	old := partitionList(b.partitions(t)).at(i)
	if old == nil {
		return nil, fmt.Errorf("%s has no partition %d", name, i)
	}
	if err := old.Close(); err != nil {
		b.logger.Warn("closing a failed partition to reopen it", zap.String("dir", old.Dir()), zap.Error(err))
	}
	p, err := b.openPartition(t, i, b.partitionConfig(b.configsOf(t)))
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	parts := slices.Clone(t.Partitions)
	parts[i] = p
	t.Partitions = parts
	b.mu.Unlock()
	b.logger.Warn("reopened a partition after a storage error", zap.String("topic", name), zap.Int32("partition", i))
	return p, nil
}

// Mirrors is the broker's mirror manager.
func (b *Broker) Mirrors() *mirror.Manager { return b.mirrors }

// mirrorLocal adapts the broker to what mirrors need.
type mirrorLocal struct{ b *Broker }

func (l mirrorLocal) ClusterID() string { return l.b.clusterID }

func (l mirrorLocal) Partitions(topic string) []*partition.Partition {
	t, ok := l.b.Topic(topic)
	if !ok {
		return nil
	}
	return l.b.partitions(t)
}

// EnsureTopic creates a mirrored topic with the source's partition count,
// configs and id, or grows an existing one to the source's count. An
// existing topic keeps its id (a failback target has the id it gave the
// other side).
func (l mirrorLocal) EnsureTopic(name string, partitions int32, configs map[string]string, id [16]byte) ([]*partition.Partition, error) {
	if reserved, _ := reservedTopic(name); reserved {
		// A coordinator's internal topic is never a mirror's target
		// (internal_topics.go), whatever the mirror's filters.
		return nil, reservedTopicError{name}
	}
	if t, ok := l.b.Topic(name); ok {
		if have := int32(len(l.b.partitions(t))); have < partitions {
			if err := l.b.AddPartitions(name, partitions, false); err != nil {
				return nil, err
			}
		}
		return l.b.partitions(t), nil
	}
	var known map[string]string
	if len(configs) > 0 {
		known = map[string]string{}
		for k, v := range configs {
			if _, ok := config.LookupTopic(k); ok {
				known[k] = v
			}
		}
	}
	if _, taken := l.b.topicByID(id); taken {
		id = [16]byte{}
	}
	t, err := l.b.CreateTopic(name, partitions, known, id, false)
	if err != nil {
		return nil, err
	}
	return l.b.partitions(t), nil
}

func (l mirrorLocal) TopicConfigs(name string) (map[string]string, bool) {
	t, ok := l.b.Topic(name)
	if !ok {
		return nil, false
	}
	return maps.Clone(l.b.configsOf(t)), true
}

// UpdateTopicConfigs applies a mirror's config sync: each override is
// set (or removed) on its own, so that a value minibroker refuses (or a
// name it does not know) does not hold back the others; the errors are
// answered together.
func (l mirrorLocal) UpdateTopicConfigs(name string, set map[string]string, remove []string) error {
	var errs []error
	for k, v := range set {
		if _, ok := config.LookupTopic(k); !ok {
			continue
		}
		err := l.b.updateTopicConfigs(name, func(c map[string]string) (map[string]string, error) {
			if c == nil {
				c = map[string]string{}
			}
			c[k] = v
			return c, nil
		}, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	for _, k := range remove {
		err := l.b.updateTopicConfigs(name, func(c map[string]string) (map[string]string, error) {
			delete(c, k)
			return c, nil
		}, false)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}
