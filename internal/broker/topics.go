package broker

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync/atomic"

	"go.uber.org/zap"

	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/vfs"
)

// Topic is one topic with its partitions.
type Topic struct {
	Name string
	ID   [16]byte
	// Configs are the topic-level overrides (DYNAMIC_TOPIC_CONFIG),
	// guarded by the broker's mu (and written holding adminMu too):
	// replaced whole, never changed in place, so a reader may keep the
	// map it read under the lock.
	Configs    map[string]string
	Partitions []*partition.Partition
}

// topicsFile lists every topic: the registry's source of truth. It is
// JSON, rewritten atomically on every change:
//
//	{"version":1,"topics":[{"name":…,"id":"<32 hex>","partitions":N,"configs":{…}}]}
const topicsFile = "topics.json"

type topicsDoc struct {
	Version int         `json:"version"`
	Topics  []topicJSON `json:"topics"`
}

type topicJSON struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Partitions int               `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

var (
	errInvalidTopic  = errors.New("broker: invalid topic name")
	errTopicExists   = errors.New("broker: topic already exists")
	errUnknownTopic  = errors.New("broker: unknown topic")
	errInvalidConfig = errors.New("broker: invalid topic config")
	errInvalidParts  = errors.New("broker: invalid partition count")
)

var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// validTopicName applies Kafka's rules (Topic.validate).
func validTopicName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("%w: %q", errInvalidTopic, name)
	case len(name) > 249:
		return fmt.Errorf("%w: longer than 249 characters", errInvalidTopic)
	case !legalTopic.MatchString(name):
		return fmt.Errorf("%w: %q has characters other than [a-zA-Z0-9._-]", errInvalidTopic, name)
	}
	return nil
}

func partitionDir(dataDir, topic string, p int32) string {
	return filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, p))
}

func newTopicID() [16]byte {
	var id [16]byte
	for id == ([16]byte{}) {
		rand.Read(id[:])
	}
	return id
}

// loadTopics opens every topic listed in topics.json. The partitions,
// independent of one another, are opened (recovered, after a crash)
// num.recovery.threads.per.data.dir at a time, as Kafka's LogManager.loadLogs
// does; the topics are registered only once all are open, and New returns
// (the broker serves) only after that. On a failure no partition is opened
// after it, those opened are closed, and the errors are returned.
func (b *Broker) loadTopics() error {
	raw, err := vfs.ReadFile(b.fs, filepath.Join(b.dataDir, topicsFile))
	if errors.Is(err, os.ErrNotExist) {
		b.removeOrphanPartitions(nil, false)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", topicsFile, err)
	}
	var doc topicsDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("parse %s: %w", topicsFile, err)
	}
	type toOpen struct {
		topic *Topic
		cfg   partition.Config
		index int32
	}
	var topics []*Topic
	var jobs []toOpen
	seen := map[string]bool{}
	for _, tj := range doc.Topics {
		// Two entries would open the same directories at once.
		if seen[tj.Name] {
			return fmt.Errorf("%s: topic %s listed twice", topicsFile, tj.Name)
		}
		seen[tj.Name] = true
		t := &Topic{Name: tj.Name, Configs: tj.Configs}
		if _, err := fmt.Sscanf(tj.ID, "%x", &t.ID); err != nil {
			var id []byte
			if _, err := fmt.Sscanf(tj.ID, "%x", &id); err != nil || len(id) != 16 {
				return fmt.Errorf("%s: topic %s: bad id %q", topicsFile, tj.Name, tj.ID)
			}
			copy(t.ID[:], id)
		}
		if tj.Partitions < 0 {
			return fmt.Errorf("%s: topic %s: %d partitions", topicsFile, tj.Name, tj.Partitions)
		}
		t.Partitions = make([]*partition.Partition, tj.Partitions)
		pc := b.partitionConfig(t.Configs)
		for i := range int32(tj.Partitions) {
			jobs = append(jobs, toOpen{topic: t, cfg: pc, index: i})
		}
		topics = append(topics, t)
	}
	listed := map[string]int{}
	for _, tj := range doc.Topics {
		listed[tj.Name] = tj.Partitions
	}
	b.removeOrphanPartitions(listed, true)
	var failed atomic.Bool
	errs := forEachBounded(b.recoveryThreads(), len(jobs), func(k int) error {
		if failed.Load() {
			return nil
		}
		j := jobs[k]
		p, err := b.openPartition(j.topic, j.index, j.cfg)
		if err != nil {
			failed.Store(true)
			return err
		}
		j.topic.Partitions[j.index] = p // each job its own slot
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		var opened []*partition.Partition
		for _, t := range topics {
			for _, p := range t.Partitions {
				if p != nil {
					opened = append(opened, p)
				}
			}
		}
		forEachBounded(b.recoveryThreads(), len(opened), func(i int) error { return opened[i].Close() })
		return err
	}
	for _, t := range topics {
		b.topics[t.Name] = t
		b.topicsByID[t.ID] = t
	}
	return nil
}

func (b *Broker) openPartition(t *Topic, index int32, pc partition.Config) (*partition.Partition, error) {
	return partition.Open(partitionDir(b.dataDir, t.Name, index), t.Name, index, pc, partition.Options{
		FS: b.fs, Logger: b.logger, PSMMetrics: b.psmMetrics,
	})
}

// deletePartitions closes partitions and removes their files, logging
// failures (files left behind hold no data anyone can reach).
func (b *Broker) deletePartitions(parts []*partition.Partition) {
	for _, p := range parts {
		if err := p.Delete(); err != nil {
			b.logger.Warn("deleting partition files", zap.String("dir", p.Dir()), zap.Error(err))
		}
	}
}

// commitTopics makes a change to the registry durable, then visible;
// b.adminMu held. Every change to which topics exist, to their partition
// counts and to their configs goes through it, so every writer of
// topics.json holds adminMu and two writes never race.
//
// edit changes a listing of the registry (name → entry, a copy) to what
// the change leaves; topics.json is rewritten from it (atomically, the
// file and the directory fsynced) holding adminMu but not b.mu, so the
// Produce and Fetch of other topics, which take b.mu, do not wait for
// the fsyncs. Only then does apply make the change in memory, under b.mu.
// So, as when the write was made under b.mu, no client sees a topic, a
// partition or a config before topics.json lists it (its records would
// not survive a restart), and a crash during the write leaves the old
// listing or the new one (an atomic replace), never a mix. A crash after the write and before apply leaves the
// change made at the next start-up, as one just after apply would. A
// deletion stays visible (served) during its write: what is produced to
// the topic meanwhile is deleted with it, as if it had come just before.
// If the write fails, apply is not run and the error (mlog.ErrStorage)
// is returned.
func (b *Broker) commitTopics(edit func(listing map[string]topicJSON), apply func()) error {
	if b.knobs.legacyCreateUnderRegistryLock { // negative control: the write under b.mu
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	listing := b.topicsListing()
	edit(listing)
	if err := b.writeTopics(listing); err != nil {
		return err
	}
	if !b.knobs.legacyCreateUnderRegistryLock {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	apply()
	b.topicGen.Add(1) // under b.mu: topicImage sees the change with the new generation
	return nil
}

// topicsListing returns the registry as topics.json lists it. b.adminMu
// held: the registry changes only under it, so b.mu is not needed (nor
// taken: commitTopics may hold it, in the negative control).
func (b *Broker) topicsListing() map[string]topicJSON {
	listing := make(map[string]topicJSON, len(b.topics))
	for _, t := range b.topics {
		listing[t.Name] = topicEntry(t, len(t.Partitions), t.Configs)
	}
	return listing
}

// topicEntry is t's entry in topics.json with n partitions and configs.
func topicEntry(t *Topic, n int, configs map[string]string) topicJSON {
	return topicJSON{Name: t.Name, ID: fmt.Sprintf("%x", t.ID[:]), Partitions: n, Configs: configs}
}

// writeTopics rewrites topics.json with listing, in name order.
func (b *Broker) writeTopics(listing map[string]topicJSON) error {
	doc := topicsDoc{Version: 1}
	for _, tj := range listing {
		doc.Topics = append(doc.Topics, tj)
	}
	sort.Slice(doc.Topics, func(i, j int) bool { return doc.Topics[i].Name < doc.Topics[j].Name })
	raw, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := vfs.WriteFileAtomic(b.fs, b.dataDir, filepath.Join(b.dataDir, topicsFile), raw); err != nil {
		return fmt.Errorf("%w: write %s: %w", mlog.ErrStorage, topicsFile, err)
	}
	return nil
}

// Topic returns a topic by name.
func (b *Broker) Topic(name string) (*Topic, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	t, ok := b.topics[name]
	return t, ok
}

func (b *Broker) topicByID(id [16]byte) (*Topic, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	t, ok := b.topicsByID[id]
	return t, ok
}

// TopicNames lists topics in name order.
func (b *Broker) TopicNames() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	names := make([]string, 0, len(b.topics))
	for n := range b.topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DeleteTopic removes a topic and its files.
func (b *Broker) DeleteTopic(name string) error {
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	t, ok := b.Topic(name)
	if !ok {
		return fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	if coordinatorTopic(name) {
		return errInternalDelete(name)
	}
	// On a failed write topics.json still lists the topic (it is replaced
	// atomically): it stays, open and served, rather than be dropped from
	// memory with its files open until a restart brings it back.
	err := b.commitTopics(func(l map[string]topicJSON) { delete(l, name) }, func() {
		delete(b.topics, name)
		delete(b.topicsByID, t.ID)
	})
	if err != nil {
		return err
	}
	for _, p := range t.Partitions {
		if err := p.Delete(); err != nil {
			b.logger.Warn("deleting partition files", zap.String("dir", p.Dir()), zap.Error(err))
		}
	}
	// As Kafka does, a deleted topic's committed offsets go with it, so a
	// topic recreated under the same name does not resume from them.
	if b.groups != nil {
		if err := b.groups.DeleteTopicOffsets(name); err != nil {
			b.logger.Warn("deleting committed offsets of a deleted topic", zap.String("topic", name), zap.Error(err))
		}
	}
	b.metrics.Partitions.Sub(float64(len(t.Partitions)))
	b.logger.Info("deleted topic", zap.String("topic", name))
	return nil
}

// autoCreateEnabled is auto.create.topics.enable.
func (b *Broker) autoCreateEnabled() bool { return b.cfg.Bool("auto.create.topics.enable") }

// autoCreate creates name with defaults when auto.create.topics.enable;
// a reserved name (reserved_topics.go) is never created.
func (b *Broker) autoCreate(name string) (*Topic, error) {
	if reserved, _ := reservedTopic(name); reserved || !b.autoCreateEnabled() {
		return nil, fmt.Errorf("%w: %s", errUnknownTopic, name)
	}
	t, err := b.CreateTopic(name, -1, nil, [16]byte{}, false)
	if errors.Is(err, errTopicExists) {
		if t, ok := b.Topic(name); ok {
			return t, nil
		}
	}
	return t, err
}

// Partition returns one partition of a topic.
func (b *Broker) Partition(topic string, p int32) (*partition.Partition, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	t, ok := b.topics[topic]
	if !ok || p < 0 || int(p) >= len(t.Partitions) {
		return nil, false
	}
	return t.Partitions[p], true
}

// partitions returns a topic's partitions; the slice is never modified in
// place (AddPartitions replaces it under b.mu), so callers may keep it.
func (b *Broker) partitions(t *Topic) []*partition.Partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return t.Partitions
}

// partitionsOf returns a topic's partitions by name, nil when unknown.
func (b *Broker) partitionsOf(topic string) partitionList {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if t, ok := b.topics[topic]; ok {
		return t.Partitions
	}
	return nil
}

// partitionList is a topic's partitions, indexable safely by a client's
// partition number.
type partitionList []*partition.Partition

// at returns partition i, or nil when there is no such partition.
func (ps partitionList) at(i int32) *partition.Partition {
	if i < 0 || int(i) >= len(ps) {
		return nil
	}
	return ps[i]
}
