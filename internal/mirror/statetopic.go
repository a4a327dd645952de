package mirror

// The mirrors' state in __mirror_state.
//
// The state document (state.go) is kept as records of the broker's
// internal compacted topic __mirror_state, in the layout of package
// staterec: one record per mirror (its definition) and one per mirrored
// partition (its lifecycle record), a tombstone for one removed. A save
// diffs the document against what the topic holds (the view, read back at
// start-up and kept since) and appends the records that differ as one
// batch to the topic's partition 0, then waits for the batch's fsync
// (the partition's group commit) before it returns: every ordering the
// mirror relies on (STOPPING persisted before any log is touched, STOPPED
// only after the barrier is fsynced) holds as with the state log before.
// One batch is all or nothing at recovery (a batch a crash cut is cut off
// whole), so a save that changes many partitions is never half applied.
// A start-up replays the partition from its log start: the last record of
// each key is the state, as compaction keeps it.
//
// The topic has one partition: a save is one batch, and a batch is
// atomic only within a partition. (KIP-1279 spreads __mirror_state over
// partitions by mirror; minibroker's one node keeps one.)
//
// A save that fails on a storage error (a write or fsync) leaves what the
// topic holds unknown, and the partition's log refuses every later append
// (after a failed fsync the page cache may not be what the disk holds).
// The next save reopens the partition (its owner's reopen: the broker's
// replaces it in its registry), which recovers the log from what the disk
// holds, reads the records back and writes what differs from the state:
// one failed fsync does not stop the mirrors from persisting their state
// until a restart, as with the state file before.

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/internal/itopic"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/mirror/staterec"
	"github.com/minibroker/minibroker/internal/partition"
	"github.com/minibroker/minibroker/internal/vfs"
)

// StateTopicName is the internal topic the mirrors' state is kept in.
const StateTopicName = "__mirror_state"

// StateRecord is one record of the state topic; a nil Value is a
// tombstone.
type StateRecord struct{ Key, Value []byte }

// StateTopic is where the mirrors keep their state.
type StateTopic interface {
	// Append appends recs as one batch and returns once it is durable
	// (fsynced).
	Append(recs []StateRecord) error
	// Replay calls fn with every record from the log start, in order.
	Replay(fn func(key, value []byte)) error
}

// PartitionStateTopic is a StateTopic over the topic's partition p;
// reopen, called after a storage error took p's log offline, opens the
// partition's files anew in p's place (nil: the topic stays offline).
func PartitionStateTopic(p *partition.Partition, reopen func() (*partition.Partition, error)) StateTopic {
	return &partitionTopic{p: p, reopen: reopen}
}

type partitionTopic struct {
	p      *partition.Partition
	reopen func() (*partition.Partition, error)
	// broken: a storage error took p's log offline for writes.
	broken bool
	// knobs are the test seams (hooks.go): stateSkipSync.
	knobs knobs
}

// heal reopens the partition after a storage error.
func (t *partitionTopic) heal() error {
	if !t.broken {
		return nil
	}
	if t.reopen == nil {
		return fmt.Errorf("%s: offline after a storage error", StateTopicName)
	}
	p, err := t.reopen()
	if err != nil {
		return fmt.Errorf("%s: reopen after a storage error: %w", StateTopicName, err)
	}
	t.p, t.broken = p, false
	return nil
}

func (t *partitionTopic) Append(recs []StateRecord) error {
	if err := t.heal(); err != nil || len(recs) == 0 {
		return err
	}
	res, err := t.p.AppendAsLeader(stateBatch(recs, time.Now().UnixMilli()))
	if err != nil {
		t.broken = errors.Is(err, mlog.ErrStorage)
		return fmt.Errorf("%s: %w", StateTopicName, err)
	}
	if t.knobs.stateSkipSync {
		return nil
	}
	if err := t.p.FlushTo(res.LastOffset + 1); err != nil {
		t.broken = true
		return fmt.Errorf("%s: fsync: %w", StateTopicName, err)
	}
	return nil
}

// openOwnStateTopic opens dir's partition __mirror_state-0 as a
// StateTopic of its own, reopened in place after a storage error: for a
// Manager given no StateTopic (a broker always gives its topic's).
func openOwnStateTopic(fs vfs.FS, dir string) (*partitionTopic, error) {
	open := func() (*partition.Partition, error) {
		return partition.Open(filepath.Join(dir, StateTopicName+"-0"), StateTopicName, 0,
			partition.Config{Log: mlog.DefaultConfig(), Compacted: true}, partition.Options{FS: fs})
	}
	p, err := open()
	if err != nil {
		return nil, fmt.Errorf("mirror: open %s: %w", StateTopicName, err)
	}
	t := &partitionTopic{p: p}
	t.reopen = func() (*partition.Partition, error) {
		_ = t.p.Close()
		return open()
	}
	return t, nil
}

// stateBatch is recs as one batch (itopic.Log.Append would split a large
// save into several, which recovery does not keep or cut together).
func stateBatch(recs []StateRecord, ts int64) []byte {
	var body []byte
	for i, r := range recs {
		kr := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		body = kr.AppendTo(body)
	}
	return itopic.DataBatch(body, len(recs), ts)
}

func (t *partitionTopic) Replay(fn func(key, value []byte)) error {
	if err := t.heal(); err != nil {
		return err
	}
	return itopic.Log{Topic: StateTopicName, Parts: []*partition.Partition{t.p}}.Replay(0, fn)
}

// topicState is the state document kept in a StateTopic.
type topicState struct {
	t StateTopic
	// view is what the topic holds: each key's last value.
	view map[string]string
	// unknown is set when the last save failed: the view is read back
	// from the topic before the next save.
	unknown bool
}

// stateRecords is d as the topic's records, by key.
func stateRecords(d *doc) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range d.Mirrors {
		def := *m
		def.Topics = make(map[string]*topicSpec, len(m.Topics))
		for name, ts := range m.Topics {
			t := *ts
			t.Partitions = nil
			def.Topics[name] = &t
			for idx, rec := range ts.Partitions {
				raw, err := json.Marshal(rec)
				if err != nil {
					return nil, err
				}
				out[string(staterec.PartitionKey(m.Name, name, idx))] = string(staterec.Value(raw))
			}
		}
		raw, err := json.Marshal(&def)
		if err != nil {
			return nil, err
		}
		out[string(staterec.DefinitionKey(m.Name))] = string(staterec.Value(raw))
	}
	return out, nil
}

// loadTopicState reads the topic back: the view and the document it
// holds. A record whose key or value does not decode is not the mirrors'
// (a topic of this name an older minibroker made for a client) and is
// left out; a partition record without its mirror's definition or topic
// is too.
func loadTopicState(t StateTopic) (*topicState, *doc, error) {
	s := &topicState{t: t}
	if err := s.read(); err != nil {
		return nil, nil, err
	}
	d := &doc{Version: mirrorsVersion}
	parts := map[string][]staterec.Key{}
	for key := range s.view {
		k, _ := staterec.DecodeKey([]byte(key))
		doc, _ := staterec.DecodeValue([]byte(s.view[key]))
		switch k.Type {
		case staterec.TypeDefinition:
			var m mirrorSpec
			if err := json.Unmarshal(doc, &m); err != nil {
				return nil, nil, fmt.Errorf("mirror: %s: mirror %q: %w", StateTopicName, k.Mirror, err)
			}
			if m.Topics == nil {
				m.Topics = map[string]*topicSpec{}
			}
			for _, ts := range m.Topics {
				ts.Partitions = map[int32]*partitionRecord{}
			}
			migrateGroupLists(&m)
			d.Mirrors = append(d.Mirrors, &m)
		case staterec.TypePartition:
			parts[k.Mirror] = append(parts[k.Mirror], k)
		}
	}
	for _, m := range d.Mirrors {
		for _, k := range parts[m.Name] {
			ts := m.Topics[k.Topic]
			if ts == nil {
				continue
			}
			doc, _ := staterec.DecodeValue([]byte(s.view[string(staterec.PartitionKey(k.Mirror, k.Topic, k.Partition))]))
			var rec partitionRecord
			if err := json.Unmarshal(doc, &rec); err != nil {
				return nil, nil, fmt.Errorf("mirror: %s: %s %s-%d: %w", StateTopicName, k.Mirror, k.Topic, k.Partition, err)
			}
			ts.Partitions[k.Partition] = &rec
		}
	}
	sort.Slice(d.Mirrors, func(i, j int) bool { return d.Mirrors[i].Name < d.Mirrors[j].Name })
	return s, d, nil
}

// read reads the topic's records into the view.
func (s *topicState) read() error {
	view := map[string]string{}
	if err := s.t.Replay(func(key, value []byte) {
		if _, err := staterec.DecodeKey(key); err != nil {
			return
		}
		if value == nil {
			delete(view, string(key))
			return
		}
		if _, err := staterec.DecodeValue(value); err != nil {
			return
		}
		view[string(key)] = string(value)
	}); err != nil {
		return fmt.Errorf("mirror: read %s: %w", StateTopicName, err)
	}
	s.view = view
	return nil
}

// save makes d the topic's state, durably, before it returns: the records
// that differ from the view (read back from the topic after a failed
// save) and a tombstone for each key d no longer has, in one batch.
func (s *topicState) save(d *doc) error {
	want, err := stateRecords(d)
	if err != nil {
		return fmt.Errorf("mirror: save %s: %w", StateTopicName, err)
	}
	if s.unknown {
		if err := s.read(); err != nil {
			return fmt.Errorf("mirror: save %s: %w", StateTopicName, err)
		}
	}
	var puts, drops []string
	for k, v := range want {
		if have, ok := s.view[k]; !ok || have != v {
			puts = append(puts, k)
		}
	}
	for k := range s.view {
		if _, ok := want[k]; !ok {
			drops = append(drops, k)
		}
	}
	if len(puts)+len(drops) == 0 {
		return nil
	}
	sort.Strings(puts)
	sort.Strings(drops)
	recs := make([]StateRecord, 0, len(puts)+len(drops))
	for _, k := range drops {
		recs = append(recs, StateRecord{Key: []byte(k)})
	}
	for _, k := range puts {
		recs = append(recs, StateRecord{Key: []byte(k), Value: []byte(want[k])})
	}
	if err := s.t.Append(recs); err != nil {
		// The topic may or may not hold the batch.
		s.unknown = true
		return fmt.Errorf("mirror: save %s: %w", StateTopicName, err)
	}
	s.view, s.unknown = want, false
	return nil
}
