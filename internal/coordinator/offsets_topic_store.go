package coordinator

// The coordinator's storage: __consumer_offsets (topicStore), or, when
// the coordinator runs without the broker's topic, the group log
// (logStorage), as the versions before the topic ran it: the peer of
// internal/broker's store benchmarks, the writer of the migration tests'
// old data dirs, and the store of this package's tests of the group log
// format (its durability tests run on the topic too:
// offsets_topic_crash_test.go).
//
// Migration: a data dir written before the topic was the store of
// record has its group log (group-log). When the coordinator starts with
// the topic and finds that file, the file is the state (the topic only
// followed it, possibly behind): it is loaded, the topic is loaded, what
// the topic lacks is appended (reconcile, staged transactional offsets
// included), the appended partitions are made durable, and only then is
// the file removed (and the directory synced). A crash before the
// removal leaves the file, and the next start does the same again; a
// crash after it leaves the topic holding everything. So every cut ends
// in the old state or the new one, never in neither. An earlier version
// started on a migrated data dir finds no group log and starts with no
// groups (there is no downgrade).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/recordlog"
)

// groupStorage is where the coordinator's records go.
type groupStorage interface {
	// append queues recs, under the coordinator's lock; wait (nil: none)
	// makes them durable. err: refused, nothing queued.
	append(c *groupCore, recs []record) (wait func() error, err error)
	// flush makes everything appended so far durable.
	flush() error
	// maintain runs from the timer loop, outside the lock.
	maintain(g *Groups)
	close(abandon bool) error
}

// logStorage is the group log as a groupStorage.
type logStorage struct{ s *groupStore }

func (l logStorage) append(_ *groupCore, recs []record) (func() error, error) {
	t, err := l.s.append(recs)
	if err != nil {
		return nil, err
	}
	return func() error { return l.s.wait(t) }, nil
}

func (l logStorage) flush() error { return l.s.flush() }

func (l logStorage) maintain(g *Groups) {
	if !l.s.needsRewrite(g.opts.CompactBytes) {
		return
	}
	g.mu.Lock()
	err := l.s.rewrite(g.core.snapshotRecords())
	g.mu.Unlock()
	if err != nil {
		g.logger.Error("group log rewrite failed", zap.Error(err))
	}
}

func (l logStorage) close(abandon bool) error { return l.s.close(abandon) }

// topicStore is __consumer_offsets as a groupStorage. view is guarded by
// the coordinator's lock; dirty by mu.
type topicStore struct {
	t              OffsetsTopic
	view           *offsetsView
	sequentialSync bool // knobs.sequentialSync

	mu    sync.Mutex
	dirty map[int32]int64 // the end of what was appended, per partition, since the last flush
}

func (s *topicStore) append(c *groupCore, recs []record) (func() error, error) {
	out := s.view.follow(c, recs)
	clear(c.deleted)
	if len(out) == 0 {
		return nil, nil
	}
	ends, err := s.write(out)
	return func() error {
		if err != nil {
			return fmt.Errorf("%w: __consumer_offsets: %v", ErrCoordinatorNotAvailable, err)
		}
		return s.sync(ends)
	}, nil
}

// write appends out, partition by partition, and returns each
// partition's end.
func (s *topicStore) write(out pending) (map[int32]int64, error) {
	ps := make([]int32, 0, len(out))
	for p := range out {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	ends := make(map[int32]int64, len(ps))
	var first error
	for _, p := range ps {
		for _, op := range out[p] {
			var end int64
			var err error
			if op.marker {
				end, err = s.t.WriteMarker(p, op.txn.ID, op.txn.Epoch, op.commit, op.coordEpoch)
			} else {
				end, err = s.t.Append(p, op.recs, op.txn)
			}
			if err != nil {
				if first == nil {
					first = err
				}
				break
			}
			ends[p] = end
		}
	}
	s.mu.Lock()
	for p, end := range ends {
		if end > s.dirty[p] {
			s.dirty[p] = end
		}
	}
	s.mu.Unlock()
	return ends, first
}

// sync makes each partition durable up to its end (the partitions' group
// commits: concurrent waiters share an fsync), the partitions' fsyncs
// issued together (syncParts).
func (s *topicStore) sync(ends map[int32]int64) error {
	if err := syncParts(pointOf(ends), s.sequentialSync, s.t.Sync); err != nil {
		return fmt.Errorf("%w: __consumer_offsets: %v", ErrCoordinatorNotAvailable, err)
	}
	return nil
}

func (s *topicStore) flush() error {
	s.mu.Lock()
	ends := s.dirty
	s.dirty = map[int32]int64{}
	s.mu.Unlock()
	return s.sync(ends)
}

func (s *topicStore) maintain(*Groups) {} // the log cleaner compacts the topic

func (s *topicStore) close(abandon bool) error {
	if abandon {
		return nil
	}
	return s.flush()
}

// openStorage loads the core from its store and returns the store.
func (g *Groups) openStorage() (groupStorage, error) {
	opts := g.opts
	format := opts.private.logFormat()
	g.core.maxRecord = format.MaxRecord
	if opts.private.skipWriteBound {
		format.MaxRecord = 1 << 30
	}
	start := time.Now()
	if opts.OffsetsTopic == nil || opts.OffsetsTopic.Partitions() <= 0 {
		store, err := openGroupStore(opts.FS, opts.Dir, g.core, start, g.logger, format)
		if err != nil {
			return nil, err
		}
		g.logger.Info("loaded group log", zap.Int("groups", len(g.core.groups)), zap.Duration("took", time.Since(start)))
		return logStorage{store}, nil
	}
	t := opts.OffsetsTopic
	s := &topicStore{t: t, dirty: map[int32]int64{}, sequentialSync: opts.private.sequentialSync}
	legacy := filepath.Join(opts.Dir, groupLogFile)
	if _, err := opts.FS.Stat(legacy); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("group log: %w", err)
		}
		st, err := replayInto(g.core, t, start)
		if err != nil {
			return nil, err
		}
		s.view = viewOf(g.core, t.Partitions())
		g.core.deleted = map[string]*group{}
		g.logger.Info("loaded __consumer_offsets", zap.Int("groups", len(g.core.groups)), zap.Int("records", st.records),
			zap.Int("skipped", st.skipped), zap.Duration("took", time.Since(start)))
		return s, nil
	}
	if err := g.migrate(s, format, legacy, start); err != nil {
		return nil, err
	}
	g.core.deleted = map[string]*group{}
	return s, nil
}

func replayInto(c *groupCore, t OffsetsTopic, now time.Time) (replayStats, error) {
	c.replaying, c.replayNow = true, now
	defer func() { c.replaying, c.replayNow = false, time.Time{} }()
	return c.replayTopic(t)
}

// migrate moves the group log into the topic (see the file comment).
func (g *Groups) migrate(s *topicStore, format recordlog.Format, legacy string, start time.Time) error {
	opts := g.opts
	if h := opts.private.hooks.MigrationStart; h != nil {
		h()
	}
	store, err := openGroupStore(opts.FS, opts.Dir, g.core, start, g.logger, format)
	if err != nil {
		return err
	}
	if err := store.close(true); err != nil {
		return err
	}
	loaded := newGroupCore(opts.Config, newMemberID)
	st, err := replayInto(loaded, s.t, start)
	if err != nil {
		return err
	}
	s.view = viewOf(loaded, s.t.Partitions())
	out := s.view.reconcile(g.core, loaded)
	appended := 0
	for _, ops := range out {
		for _, op := range ops {
			appended += len(op.recs)
		}
	}
	if opts.private.hooks.MigrationRemovesLogFirst {
		// Negative control: the file goes before the topic is durable.
		if err := removeDurably(opts.FS, opts.Dir, groupLogFile); err != nil {
			return err
		}
	}
	if _, err := s.write(out); err != nil {
		return fmt.Errorf("migrating the group log to __consumer_offsets: %w", err)
	}
	if !opts.private.hooks.MigrationRemovesLogFirst {
		if err := s.flush(); err != nil {
			return fmt.Errorf("migrating the group log to __consumer_offsets: %w", err)
		}
		if err := removeDurably(opts.FS, opts.Dir, groupLogFile); err != nil {
			return fmt.Errorf("migrating the group log to __consumer_offsets: %w", err)
		}
	}
	g.logger.Info("moved the group log into __consumer_offsets", zap.Int("groups", len(g.core.groups)),
		zap.Int("topic_records_read", st.records), zap.Int("appended", appended), zap.Duration("took", time.Since(start)))
	return nil
}
