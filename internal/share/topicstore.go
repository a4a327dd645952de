package share

// TopicStore keeps share partitions' state in __share_group_state, as
// Kafka's share coordinator does (ShareCoordinatorShard): a share
// partition's first write is a ShareSnapshot (its whole state), the
// following ones ShareUpdates (only the offsets whose state or delivery
// count changed, and the start offset), and after PerSnapshot updates
// the next write is a snapshot again, its snapshot epoch one higher
// (share.coordinator.snapshot.update.records.per.snapshot). Replaying a
// partition of the topic from its log start applies each snapshot whole
// and merges each update over the state so far (Kafka's
// PersisterStateBatchCombiner): offsets below the new start offset are
// dropped, the update's batches replace what they cover. Each share
// partition's records go to the topic partition Kafka's
// ShareCoordinatorService.partitionFor gives its key
// "groupId:topicId:partition". A write returns once its record is
// fsynced (the partition's group commit). After a snapshot or a
// deletion the store moves the topic partition's log start up to the
// oldest snapshot a share partition there still needs (Kafka's share
// coordinator prunes its topic with DeleteRecords the same way): what
// lies below is replaced by later snapshots.
//
// Deviation: an update is written as a snapshot when the delta cannot
// say it (the window lost offsets at its end, or its start moved back:
// AlterShareGroupOffsets); Kafka's SharePartition never sends such a
// write, its offsets reset goes through a new state epoch.

import (
	"fmt"
	"sync"

	"github.com/minibroker/minibroker/internal/coordinator"
)

// TopicLog is __share_group_state as the store writes it (the broker's
// itopic.Log): Append does not sync, Sync makes the records below end
// durable, DeleteBefore moves the log start up to off.
type TopicLog interface {
	Partitions() int32
	Append(p int32, n int, rec func(i int) (key, value []byte)) (int64, error)
	Sync(p int32, end int64) error
	ReplayAt(p int32, fn func(offset int64, key, value []byte)) error
	DeleteBefore(p int32, off int64) error
}

// maxStateSpan bounds the offsets one stored window spans: a record
// that claims more is damaged.
const maxStateSpan = 1 << 24

type stateKey struct {
	group string
	tp    TP
}

type storedState struct {
	part    int32 // its topic partition
	snapAt  int64 // the offset of its last snapshot record
	snap    Snapshot
	epoch   uint16 // the last snapshot's epoch
	updates int    // updates written since it
	stale   bool   // a write failed: the next one is a snapshot
}

// TopicStore is a Store over __share_group_state.
type TopicStore struct {
	Log TopicLog
	// PerSnapshot is share.coordinator.snapshot.update.records.per.snapshot.
	PerSnapshot int

	mu     sync.Mutex
	state  map[stateKey]*storedState
	pruned map[int32]int64 // the log start each partition was moved to
	// Written counts the records written by type (tests, metrics).
	written [2]int
}

// Written is how many snapshots and updates the store has written.
func (s *TopicStore) Written() (snapshots, updates int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written[RecordSnapshot], s.written[RecordUpdate]
}

func (s *TopicStore) partition(k stateKey) int32 {
	return coordinator.PartitionFor(StateKey(k.group, k.tp), s.Log.Partitions())
}

// Load implements Store: the state of every share partition, replayed
// from the topic. A record that does not decode is an error (the
// broker does not start rather than redeliver acknowledged records);
// records of other types are skipped, as Kafka's loader skips them.
func (s *TopicStore) Load() (map[string]map[TP]Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = map[stateKey]*storedState{}
	for p := range s.Log.Partitions() {
		var bad error
		err := s.Log.ReplayAt(p, func(off int64, key, value []byte) {
			if bad != nil {
				return
			}
			r, err := DecodeStateRecord(key, value)
			if err != nil {
				if r.Type != RecordSnapshot && r.Type != RecordUpdate && len(key) >= 2 {
					return
				}
				bad = err
				return
			}
			bad = s.applyLocked(p, off, r)
		})
		if err == nil {
			err = bad
		}
		if err != nil {
			return nil, fmt.Errorf("__share_group_state-%d: %w", p, err)
		}
	}
	out := map[string]map[TP]Snapshot{}
	for k, st := range s.state {
		if out[k.group] == nil {
			out[k.group] = map[TP]Snapshot{}
		}
		out[k.group][k.tp] = st.snap
	}
	return out, nil
}

// applyLocked replays one record.
func (s *TopicStore) applyLocked(p int32, off int64, r StateRecord) error {
	k := stateKey{r.Group, r.TP}
	old := s.state[k]
	switch {
	case r.Tombstone:
		delete(s.state, k)
	case r.Type == RecordSnapshot:
		snap, err := normalize(Snapshot{Start: r.Start, Batches: r.Batches})
		if err != nil {
			return err
		}
		s.state[k] = &storedState{part: p, snapAt: off, snap: snap, epoch: r.SnapshotEpoch}
	case old == nil: // its snapshot was pruned with a deletion (see Delete)
		snap, err := normalize(Snapshot{Start: r.Start, Batches: r.Batches})
		if err != nil {
			return err
		}
		s.state[k] = &storedState{part: p, snapAt: off, snap: snap, epoch: r.SnapshotEpoch}
	default:
		snap, err := merge(old.snap, r.Start, r.Batches)
		if err != nil {
			return err
		}
		old.snap = snap
		old.updates++
	}
	return nil
}

// Save implements Store: a snapshot or an update record, fsynced.
func (s *TopicStore) Save(group string, tp TP, snap Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		s.state = map[stateKey]*storedState{}
	}
	k := stateKey{group, tp}
	old := s.state[k]
	r := StateRecord{Type: RecordSnapshot, Group: group, TP: tp, Start: snap.Start, Batches: snap.Batches}
	switch {
	case old == nil:
	case old.stale || old.updates >= s.PerSnapshot || !deltaFits(old.snap, snap):
		r.SnapshotEpoch = old.epoch + 1
	default:
		r.Type, r.SnapshotEpoch = RecordUpdate, old.epoch
		r.Batches = diff(old.snap, snap)
		if len(r.Batches) == 0 && snap.Start == old.snap.Start {
			return nil // nothing the store holds changed
		}
	}
	p, end, err := s.writeLocked(k, r)
	if err != nil {
		if old != nil {
			old.stale = true
		}
		return err
	}
	s.written[r.Type]++
	if r.Type == RecordSnapshot {
		s.state[k] = &storedState{part: p, snapAt: end - 1, snap: snap, epoch: r.SnapshotEpoch}
		s.pruneLocked(p, end)
		return nil
	}
	old.snap = snap
	old.updates++
	return nil
}

func (s *TopicStore) writeLocked(k stateKey, recs ...StateRecord) (p int32, end int64, err error) {
	p = s.partition(k)
	end, err = s.Log.Append(p, len(recs), func(i int) ([]byte, []byte) { return recs[i].Key(), recs[i].Value() })
	if err == nil {
		err = s.Log.Sync(p, end)
	}
	return p, end, err
}

// pruneLocked moves partition p's log start up to the oldest snapshot a
// share partition stored there still needs (end, the log end, when none
// is left). A failure is left for the next snapshot to retry: the
// records below are only replayed for nothing.
func (s *TopicStore) pruneLocked(p int32, end int64) {
	low := end
	for _, st := range s.state {
		if st.part == p && st.snapAt < low {
			low = st.snapAt
		}
	}
	if s.pruned == nil {
		s.pruned = map[int32]int64{}
	}
	if low <= s.pruned[p] {
		return
	}
	if s.Log.DeleteBefore(p, low) == nil {
		s.pruned[p] = low
	}
}

// Delete implements Store: tombstones for the share partition's
// snapshot and update keys, fsynced (Kafka's deleteState).
func (s *TopicStore) Delete(group string, tp TP) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := stateKey{group, tp}
	if s.state[k] == nil {
		return nil
	}
	p, end, err := s.writeLocked(k, StateRecord{Type: RecordSnapshot, Group: group, TP: tp, Tombstone: true},
		StateRecord{Type: RecordUpdate, Group: group, TP: tp, Tombstone: true})
	if err != nil {
		s.state[k].stale = true
		return err
	}
	delete(s.state, k)
	s.pruneLocked(p, end)
	return nil
}

// State is the state the store holds for a share partition (tests).
func (s *TopicStore) State(group string, tp TP) (Snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state[stateKey{group, tp}]
	if st == nil {
		return Snapshot{}, false
	}
	return st.snap, true
}

// end is one past the last offset a snapshot holds.
func end(s Snapshot) int64 {
	e := s.Start
	for _, b := range s.Batches {
		if b.Last >= e {
			e = b.Last + 1
		}
	}
	return e
}

// deltaFits reports whether an update can take the stored state to
// next: the start does not move back and the window does not shrink at
// its end.
func deltaFits(old, next Snapshot) bool {
	return next.Start >= old.Start && end(next) >= end(old)
}

type cell struct {
	state State
	count int16
	set   bool
}

// cells expands a snapshot's window from its start to its end; offsets
// no batch covers are AVAILABLE, never delivered (as Restore reads them).
func cells(s Snapshot) ([]cell, error) {
	span := end(s) - s.Start
	if span < 0 || span > maxStateSpan {
		return nil, fmt.Errorf("state window of %d offsets from %d", span, s.Start)
	}
	out := make([]cell, span)
	for i := range out {
		out[i] = cell{state: Available, set: true}
	}
	for _, b := range s.Batches {
		for off := max64(b.First, s.Start); off <= b.Last && off < s.Start+span; off++ {
			out[off-s.Start] = cell{state: b.State, count: b.Count, set: true}
		}
	}
	return out, nil
}

// runs turns a window of cells from start into state batches; unset
// cells are left out.
func runs(start int64, cs []cell) []StateBatch {
	var out []StateBatch
	for i, c := range cs {
		if !c.set {
			continue
		}
		off := start + int64(i)
		if k := len(out); k > 0 && out[k-1].Last == off-1 && out[k-1].State == c.state && out[k-1].Count == c.count {
			out[k-1].Last = off
			continue
		}
		out = append(out, StateBatch{First: off, Last: off, State: c.state, Count: c.count})
	}
	return out
}

func normalize(s Snapshot) (Snapshot, error) {
	cs, err := cells(s)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Start: s.Start, Batches: runs(s.Start, cs)}, nil
}

// diff is the update taking old to next (deltaFits holds): the offsets
// of next's window whose state or delivery count is not old's.
func diff(old, next Snapshot) []StateBatch {
	oc, err1 := cells(old)
	nc, err2 := cells(next)
	if err1 != nil || err2 != nil {
		return next.Batches
	}
	for i := range nc {
		off := next.Start + int64(i)
		if j := off - old.Start; j >= 0 && j < int64(len(oc)) && oc[j].state == nc[i].state && oc[j].count == nc[i].count {
			nc[i].set = false
		}
	}
	return runs(next.Start, nc)
}

// merge applies an update (start -1: unchanged) to old.
func merge(old Snapshot, start int64, batches []StateBatch) (Snapshot, error) {
	if start < 0 {
		start = old.Start
	}
	// cells applies the batches in order: the update's win.
	return normalize(Snapshot{Start: start, Batches: append(append([]StateBatch(nil), old.Batches...), batches...)})
}

// Import writes a snapshot record for each share partition of states
// whose stored state differs (the migration of the per-partition files:
// their content wins), then fsyncs each topic partition written once.
// Load must have run. It returns how many records it wrote.
func (s *TopicStore) Import(states map[string]map[TP]Snapshot) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		s.state = map[stateKey]*storedState{}
	}
	ends := map[int32]int64{}
	written := 0
	for group, parts := range states {
		for tp, snap := range parts {
			want, err := normalize(snap)
			if err != nil {
				return written, fmt.Errorf("share state of %s: %w", StateKey(group, tp), err)
			}
			k := stateKey{group, tp}
			old := s.state[k]
			if old != nil && snapshotsEqual(old.snap, want) {
				continue
			}
			r := StateRecord{Type: RecordSnapshot, Group: group, TP: tp, Start: want.Start, Batches: want.Batches}
			if old != nil {
				r.SnapshotEpoch = old.epoch + 1
			}
			p := s.partition(k)
			end, err := s.Log.Append(p, 1, func(int) ([]byte, []byte) { return r.Key(), r.Value() })
			if err != nil {
				return written, err
			}
			ends[p] = end
			s.state[k] = &storedState{part: p, snapAt: end - 1, snap: want, epoch: r.SnapshotEpoch}
			s.written[RecordSnapshot]++
			written++
		}
	}
	for p, end := range ends {
		if err := s.Log.Sync(p, end); err != nil {
			return written, err
		}
	}
	return written, nil
}

func snapshotsEqual(a, b Snapshot) bool {
	if a.Start != b.Start || len(a.Batches) != len(b.Batches) {
		return false
	}
	for i := range a.Batches {
		if a.Batches[i] != b.Batches[i] {
			return false
		}
	}
	return true
}
