package broker

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/partition"
)

// maxPartitionsPerRequest is Kafka's controller limit on the records one
// user operation may produce (QuorumController.MAX_RECORDS_PER_USER_OP,
// ReplicationControlManager.MAX_PARTITIONS_PER_BATCH): a CreateTopics
// asking for more partitions in all, or a CreatePartitions adding more,
// is refused whole with POLICY_VIOLATION.
const maxPartitionsPerRequest = 10000

// Kafka's messages for the two refusals.
const (
	msgTooManyCreated = "Excessively large number of partitions per request."
	msgTooManyAdded   = "Unable to perform excessively large batch operation."
)

var (
	// errPolicy is POLICY_VIOLATION.
	errPolicy = errors.New("broker: policy violation")
	// errCreationStopped: the broker began shutting down while partitions
	// were being created; those created are left for the next start-up's
	// orphan sweep.
	errCreationStopped = errors.New("broker: shutting down")
)

// checkBrokerPartitions refuses adding n partitions past
// max.broker.partitions; b.adminMu held (no other creation runs).
func (b *Broker) checkBrokerPartitions(n int32) error {
	limit := b.cfg.Int64("max.broker.partitions")
	// The internal topics' partitions are the broker's own, not counted.
	have := int64(b.partitionCount())
	for _, spec := range b.internalTopicSpecs() {
		have -= int64(len(b.partitionsOf(spec.name)))
	}
	if have+int64(n) > limit {
		return fmt.Errorf("%w: %d partitions would exceed max.broker.partitions=%d (the broker has %d)", errPolicy, n, limit, have)
	}
	return nil
}

// CreateTopic creates a topic. partitions -1 means num.partitions. id may be
// zero (a new random id) or a source topic's id (mirroring).
//
// The partitions are created, and topics.json written, under b.adminMu,
// not the registry lock that Produce and Fetch take: other topics' traffic
// flows while thousands of partitions, or hundreds of topics, are created.
// The topic is listed in topics.json only once all its partitions exist,
// and registered (visible) only once topics.json lists it (commitTopics);
// until then its directories are orphans that a start-up after a crash
// removes (removeOrphanPartitions).
func (b *Broker) CreateTopic(name string, partitions int32, configs map[string]string, id [16]byte, validateOnly bool) (*Topic, error) {
	if err := validTopicName(name); err != nil {
		return nil, err
	}
	if reserved, _ := reservedTopic(name); reserved {
		if _, ok := b.Topic(name); ok && coordinatorTopic(name) {
			// Kafka's controller, once the coordinator made it.
			return nil, fmt.Errorf("%w: %s", errTopicExists, name)
		}
		return nil, reservedTopicError{name}
	}
	return b.createTopic(name, partitions, configs, id, validateOnly, true)
}

// createTopic is CreateTopic past the name checks; limit applies
// max.broker.partitions (not to the internal topics the broker makes at
// start-up, internal_topics.go).
func (b *Broker) createTopic(name string, partitions int32, configs map[string]string, id [16]byte, validateOnly, limit bool) (*Topic, error) {
	if partitions == -1 {
		partitions = b.cfg.Int32("num.partitions")
	}
	if partitions <= 0 {
		return nil, fmt.Errorf("%w: %d", errInvalidParts, partitions)
	}
	if partitions > maxPartitionsPerRequest {
		return nil, fmt.Errorf("%w: %s", errPolicy, msgTooManyCreated)
	}
	if err := checkTopicConfigs(configs); err != nil {
		return nil, err
	}
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	b.mu.RLock()
	_, exists := b.topics[name]
	_, idUsed := b.topicsByID[id]
	b.mu.RUnlock()
	if exists {
		return nil, fmt.Errorf("%w: %s", errTopicExists, name)
	}
	if id == ([16]byte{}) {
		id = newTopicID()
	} else if idUsed {
		return nil, fmt.Errorf("%w: topic id already used", errTopicExists)
	}
	if limit {
		if err := b.checkBrokerPartitions(partitions); err != nil {
			return nil, err
		}
	}
	t := &Topic{Name: name, ID: id, Configs: configs}
	if validateOnly {
		return t, nil
	}
	created, err := b.createPartitions(t, 0, partitions)
	if err != nil {
		return nil, err
	}
	err = b.commitTopics(func(l map[string]topicJSON) { l[name] = topicEntry(t, len(created), configs) }, func() {
		t.Partitions = created
		b.topics[name] = t
		b.topicsByID[id] = t
	})
	if err != nil {
		b.deletePartitions(created)
		return nil, err
	}
	b.metrics.Partitions.Add(float64(partitions))
	b.logger.Info("created topic", zap.String("topic", name), zap.Int32("partitions", partitions))
	return t, nil
}

// AddPartitions grows a topic to count partitions (see CreateTopic for the
// locks and crash safety).
func (b *Broker) AddPartitions(name string, count int32, validateOnly bool) error {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	t, ok := b.Topic(name)
	if !ok {
		return fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	old := b.partitions(t)
	have := int32(len(old))
	if count <= have {
		return fmt.Errorf("%w: topic has %d partitions, asked for %d", errInvalidParts, have, count)
	}
	if coordinatorTopic(name) {
		return internalTopicError{fmt.Sprintf("The partition count of internal topic %s is fixed: its coordinator places each key by it.", name), errInvalidParts}
	}
	if count-have > maxPartitionsPerRequest {
		return fmt.Errorf("%w: %s", errPolicy, msgTooManyAdded)
	}
	if err := b.checkBrokerPartitions(count - have); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	added, err := b.createPartitions(t, have, count)
	if err != nil {
		return err
	}
	// Until topics.json lists them, the new partitions would not survive
	// a restart (their records would be lost): no one sees them before it
	// does (commitTopics).
	grow := func(l map[string]topicJSON) {
		e := l[name]
		e.Partitions = int(count)
		l[name] = e
	}
	err = b.commitTopics(grow, func() {
		t.Partitions = append(old[:have:have], added...)
	})
	if err != nil {
		b.deletePartitions(added)
		return err
	}
	b.metrics.Partitions.Add(float64(count - have))
	return nil
}

// createPartitions creates partitions [from, to) of t, registered
// nowhere; b.adminMu held, b.mu not. On a failure (typically EMFILE: too
// many partitions for the process's file limit) it deletes what it
// created, the directory of the partition that failed included, so
// nothing is left on disk for a later topic or CreatePartitions of the
// same name to pick up. If the broker starts shutting down, it stops
// at once and abandons (closes without a flush) what it created: the
// directories are orphans, removed at the next start-up, and shutdown is
// not held up deleting thousands of them.
func (b *Broker) createPartitions(t *Topic, from, to int32) ([]*partition.Partition, error) {
	if b.knobs.legacyCreateUnderRegistryLock {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	pc := b.partitionConfig(t.Configs)
	created := make([]*partition.Partition, 0, to-from)
	for i := from; i < to; i++ {
		select {
		case <-b.stop:
			for _, p := range created {
				p.Abandon()
			}
			b.logger.Warn("creating partitions stopped by shutdown: the next start-up removes those created",
				zap.String("topic", t.Name), zap.Int32("from", from), zap.Int32("to", to), zap.Int32("created", i-from))
			return nil, errCreationStopped
		default:
		}
		p, err := b.openPartition(t, i, pc)
		if err != nil {
			b.logger.Warn("creating partitions failed: removing those created", zap.String("topic", t.Name),
				zap.Int32("from", from), zap.Int32("to", to), zap.Int32("failed", i), zap.Error(err))
			b.deletePartitions(created)
			if err := b.fs.RemoveAll(partitionDir(b.dataDir, t.Name, i)); err != nil {
				b.logger.Warn("removing partition files", zap.String("dir", partitionDir(b.dataDir, t.Name, i)), zap.Error(err))
			}
			return nil, err
		}
		created = append(created, p)
	}
	return created, nil
}
