// Package partition joins one partition's log and its producer state: it
// owns the append paths (client, mirror, coordinator), the high watermark
// and last stable offset, truncation, recovery replay, and the
// MIRROR_PID_RESET barrier. The barrier's rules live here and in psm
// (docs/ARCHITECTURE.md lists them with their tests).
package partition

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/batch"
	mlog "github.com/minibroker/minibroker/internal/log"
	"github.com/minibroker/minibroker/internal/psm"
	"github.com/minibroker/minibroker/internal/vfs"
)

// Mode says who may write a partition. The numbers are persisted.
type Mode int32

const (
	// Writable partitions take Produce from clients.
	Writable Mode = 0
	// Mirrored partitions are written only by a mirror fetcher.
	Mirrored Mode = 1
)

// Errors returned by the append paths; the broker maps them to Kafka codes.
var (
	ErrCorrupt       = errors.New("partition: corrupt record batch")
	ErrInvalidRecord = errors.New("partition: invalid record")
	// ErrInvalidTimestamp: a record's timestamp is out of the topic's
	// bounds, or its producer set the LogAppendTime type.
	ErrInvalidTimestamp = errors.New("partition: invalid timestamp")
	ErrTooLarge         = errors.New("partition: record batch too large")
	ErrMirrored         = errors.New("partition: read-only while mirrored")
	ErrOffsetMismatch   = errors.New("partition: mirrored batch does not follow the log end")
	ErrClosed           = errors.New("partition: closed")
)

// MirroredError is ErrMirrored with the mirror's name, for the client.
type MirroredError struct{ Mirror string }

func (e *MirroredError) Error() string {
	return fmt.Sprintf("partition is read-only: mirrored by mirror %q (stop the mirror to make it writable)", e.Mirror)
}
func (e *MirroredError) Unwrap() error { return ErrMirrored }

// Config is a partition's settings.
type Config struct {
	Log             mlog.Config
	PSM             psm.Config
	MessageMaxBytes int32
	LogAppendTime   bool
	// Compacted (cleanup.policy with compact) refuses records without a
	// key, as Kafka does, though minibroker does not compact.
	Compacted bool
	// BoundTimestamps refuses, on a CreateTime topic, records stamped
	// more than TimestampBeforeMaxMs before the broker's clock or
	// TimestampAfterMaxMs after it (message.timestamp.before.max.ms and
	// message.timestamp.after.max.ms); unset, nothing is bounded.
	BoundTimestamps                           bool
	TimestampBeforeMaxMs, TimestampAfterMaxMs int64
}

// Options carries the partition's collaborators.
type Options struct {
	FS         vfs.FS
	Logger     *zap.Logger
	PSMMetrics *psm.Metrics
	Now        func() time.Time

	// private are the test seams (knobs.go): unexported, so no config
	// file, flag or API sets them; the zero value is production. Only
	// this package's tests set them.
	private knobs
}

// Partition is one topic partition on this node.
//
// Lock order: appendMu, then snapshotWriteMu, then snapshotMu, then mu;
// the log's own locks
// are taken inside any of them (the log calls OnRoll with none of its
// locks held). No lock is held across a network call; appendMu is held
// across the log's writes (no fsync but a roll's small index sync, and a
// flush.interval.messages=1 fsync is waited for after it is released).
// Every release is deferred, so a panic recovered by the connection that
// caused it leaves the partition usable.
type Partition struct {
	Topic string
	Index int32

	dir    string
	cfg    atomic.Pointer[Config] // replaced whole by SetConfig; read with config()
	fs     vfs.FS
	logger *zap.Logger
	now    func() time.Time
	log    *mlog.Log
	knobs  knobs

	// appendMu serialises writers (offset assignment through log append
	// and producer-state update). Readers do not take it.
	appendMu sync.Mutex
	psm      *psm.Manager // guarded by appendMu

	// snapshotWriteMu is held while the producer snapshots taken at
	// segment rolls are written (fsynced after appendMu is released), and
	// by the truncations that delete snapshots, so a snapshot of a
	// truncated tail is never written after its deletion.
	snapshotWriteMu sync.Mutex
	snapshotMu      sync.Mutex     // guards rollSnapshot and unsyncedSnapshots
	rollSnapshot    []psm.Snapshot // taken at rolls, not yet written
	// unsyncedSnapshots are the paths of roll snapshots written without
	// fsync, for the log's background flush (syncRollSnapshots).
	unsyncedSnapshots []string

	mu            sync.Mutex // guards the fields below
	mode          Mode
	mirror        string
	leaderEpoch   int32
	highWatermark int64
	lastStable    int64
	notify        chan struct{} // closed on every change readers wait for
	closed        bool
}

// Open opens (or creates) the partition in dir, recovering its log and
// rebuilding producer state from the newest snapshot plus a replay.
func Open(dir, topic string, index int32, cfg Config, opts Options) (*Partition, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &Partition{
		Topic: topic, Index: index, dir: dir, fs: opts.FS,
		logger: opts.Logger.WithLazy(zap.String("partition", fmt.Sprintf("%s-%d", topic, index))),
		now:    opts.Now, notify: make(chan struct{}), knobs: opts.private,
	}
	p.cfg.Store(&cfg)
	l, err := mlog.Open(dir, cfg.Log, mlog.Options{FS: opts.FS, Logger: p.logger, Now: opts.Now, OnRoll: p.onRoll,
		BeforeBackgroundFlush: p.syncRollSnapshots})
	if err != nil {
		return nil, fmt.Errorf("open partition %s-%d: %w", topic, index, err)
	}
	p.log = l
	// A power loss can keep a snapshot and lose the log tail it describes
	// (a snapshot at a roll or Close reaches the disk before that data).
	// Such a snapshot is never loaded now, but once the log grew past it
	// again it would be: remove it, as Kafka's ProducerStateManager
	// removes snapshots outside the log on load.
	if err := psm.DeleteSnapshotsAfter(p.fs, p.dir, l.LogEndOffset()); err != nil {
		l.Close()
		return nil, fmt.Errorf("open partition %s-%d: %w", topic, index, err)
	}
	if err := p.rebuildProducerState(l.LogEndOffset(), opts.PSMMetrics); err != nil {
		l.Close()
		return nil, err
	}
	if e, ok := l.LatestEpoch(); ok {
		p.leaderEpoch = e
	}
	p.highWatermark = l.LogEndOffset()
	if cfg.Log.FlushIntervalMessages == 1 {
		p.highWatermark = l.FlushedOffset()
	}
	p.updateLastStableLocked()
	return p, nil
}

// config is the partition's current configuration (never modified).
func (p *Partition) config() *Config { return p.cfg.Load() }

// SetConfig applies a topic's altered configs to the running partition,
// as Kafka's LogManager.updateTopicConfig does: appends from now on are
// checked and stamped with it (message.max.bytes, timestamp type and
// bounds, cleanup.policy's key requirement), the log rolls at the new
// segment size and age, retention applies the new limits at its next
// run, and the fsync policy follows. Producer-state settings (broker-wide)
// are kept.
func (p *Partition) SetConfig(cfg Config) {
	cfg.PSM = p.config().PSM
	p.cfg.Store(&cfg)
	p.log.SetConfig(cfg.Log)
}

// onRoll snapshots producer state at a new segment's base offset, as Kafka
// does. The log calls it from Append, so appendMu is held: the state is
// taken here and written by writeRollSnapshots once the append has
// released appendMu, without fsync, and fsynced by the log's background
// flush (syncRollSnapshots), so a roll stalls neither the partition's
// other writers nor the acknowledgement of the request that rolled.
func (p *Partition) onRoll(base int64) {
	if p.psm == nil {
		return
	}
	snap := p.psm.TakeSnapshot(base)
	p.snapshotMu.Lock()
	defer p.snapshotMu.Unlock()
	p.rollSnapshot = append(p.rollSnapshot, snap)
}

// writeRollSnapshots writes the snapshots taken at rolls. Called without
// appendMu by every append, before it returns. If another append is
// writing them it returns at once: that writer looks again for snapshots
// taken meanwhile before it lets go.
func (p *Partition) writeRollSnapshots() {
	for p.rollSnapshotsPending() {
		if !p.snapshotWriteMu.TryLock() {
			return
		}
		func() {
			defer p.snapshotWriteMu.Unlock()
			p.writeRollSnapshotsLocked()
		}()
	}
}

func (p *Partition) rollSnapshotsPending() bool {
	p.snapshotMu.Lock()
	defer p.snapshotMu.Unlock()
	return len(p.rollSnapshot) > 0
}

// writeRollSnapshotsLocked writes the pending roll snapshots;
// snapshotWriteMu held.
func (p *Partition) writeRollSnapshotsLocked() {
	p.snapshotMu.Lock()
	snaps := p.rollSnapshot
	p.rollSnapshot = nil
	p.snapshotMu.Unlock()
	written := 0
	for _, snap := range snaps {
		path, err := snap.WriteFileNoSync(p.fs, p.dir)
		if err != nil {
			p.logger.Warn("producer snapshot at roll failed", zap.Int64("offset", snap.Offset), zap.Error(err))
			continue
		}
		p.snapshotMu.Lock()
		p.unsyncedSnapshots = append(p.unsyncedSnapshots, path)
		p.snapshotMu.Unlock()
		written++
	}
	if written > 0 {
		// The roll's own flush may have started before the file existed.
		p.log.FlushInBackground()
	}
}

// syncRollSnapshots fsyncs the roll snapshots written since the last call,
// then their directory. The log's background flusher calls it before each
// full flush, as Kafka's flush-log task fsyncs the roll's snapshot before
// the rolled segment (UnifiedLog.roll). Until then a power loss can lose
// or tear them, which costs the next open only a longer replay
// (psm.LoadLatestSnapshot skips a torn one). An fsync on the produce path
// instead would wait for the journal commit behind the rolled segment's
// fsync (about 0.4 s with 1 GiB segments; OPTIMISATIONS.md, "Produce tail
// latency").
// A file deleted meanwhile (truncation, retention) is skipped.
func (p *Partition) syncRollSnapshots() {
	p.snapshotMu.Lock()
	paths := p.unsyncedSnapshots
	p.unsyncedSnapshots = nil
	p.snapshotMu.Unlock()
	if len(paths) == 0 {
		return
	}
	for _, path := range paths {
		if err := psm.SyncFile(p.fs, path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			p.logger.Warn("producer snapshot fsync failed", zap.String("path", path), zap.Error(err))
		}
	}
	if err := p.fs.SyncDir(p.dir); err != nil {
		p.logger.Warn("producer snapshot directory fsync failed", zap.Error(err))
	}
}

// dropRollSnapshotsAfter forgets unwritten roll snapshots above offset (a
// truncation removes the log they describe). appendMu and snapshotWriteMu
// held.
func (p *Partition) dropRollSnapshotsAfter(offset int64) {
	p.snapshotMu.Lock()
	defer p.snapshotMu.Unlock()
	kept := p.rollSnapshot[:0]
	for _, snap := range p.rollSnapshot {
		if snap.Offset <= offset {
			kept = append(kept, snap)
		}
	}
	p.rollSnapshot = kept
}

func (p *Partition) rebuildProducerState(upTo int64, metrics *psm.Metrics) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.rebuildProducerStateLocked(upTo, metrics)
}

// rebuildProducerStateLocked loads the newest snapshot at or below upTo and
// replays the log from there to upTo with REPLICATION semantics, so a
// barrier in the replayed range clears state exactly as a live append does.
func (p *Partition) rebuildProducerStateLocked(upTo int64, metrics *psm.Metrics) error {
	m, from, err := psm.LoadLatestSnapshot(p.fs, p.dir, upTo, p.config().PSM, p.logger, metrics)
	if err != nil {
		return fmt.Errorf("load producer snapshot: %w", err)
	}
	from = max(from, p.log.LogStartOffset())
	p.psm = m
	var one [1]psm.PreparedBatch
	for from < upTo {
		raw, err := p.log.ReadUpTo(from, upTo, 1<<20, true)
		if err != nil {
			return fmt.Errorf("replay producer state from %d: %w", from, err)
		}
		if len(raw) == 0 {
			break
		}
		it := batch.NewIter(raw)
		for b, h, ok := it.Next(); ok; b, h, ok = it.Next() {
			one[0] = psm.PreparedBatch{Header: h, Raw: b}
			pend, err := m.Prepare(psm.OriginReplication, one[:], h.MaxTimestamp)
			if err != nil {
				return fmt.Errorf("replay producer state at %d: %w", h.BaseOffset, err)
			}
			p.reindexAborted(m, pend.Apply())
			from = h.LastOffset() + 1
		}
		if it.Err() != nil {
			return fmt.Errorf("replay producer state: %w", it.Err())
		}
	}
	m.SetLastOffset(upTo)
	// A snapshot may hold producers idle past producer.id.expiration.ms.
	m.RemoveExpired(p.now().UnixMilli())
	return nil
}

// reindexAborted puts back in the transaction index an aborted
// transaction whose ABORT marker a replay met and the index lacks. The
// marker reaches the log before its index entry (applyLocked), and the
// entry's write can wait for the log's lock behind a flush: a process
// killed in between (kill -9) left the marker on disk, the transaction
// closed in the producer state rebuilt from it, and no entry, so
// read_committed consumers read the aborted records. Entries are written
// in marker order, so a missing one is past every entry present.
func (p *Partition) reindexAborted(m *psm.Manager, done []psm.CompletedTxn) {
	if p.knobs.noReindexAborted {
		return
	}
	for _, t := range done {
		if !t.Aborted {
			continue
		}
		if slices.ContainsFunc(p.log.AbortedTxns(t.LastOffset, t.LastOffset+1), func(e mlog.AbortedTxn) bool {
			return e.ProducerID == t.ProducerID && e.LastOffset == t.LastOffset
		}) {
			continue
		}
		lso := t.LastOffset + 1
		if first, ok := m.FirstUnstableOffset(); ok {
			lso = min(lso, first)
		}
		if err := p.log.AppendAbortedTxn(mlog.AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset,
			LastOffset: t.LastOffset, LastStableOffset: lso}); err != nil {
			p.logger.Error("transaction index: re-adding an aborted transaction failed", zap.Int64("producer_id", t.ProducerID),
				zap.Int64("marker_offset", t.LastOffset), zap.Error(err))
			continue
		}
		p.logger.Warn("transaction index: re-added an aborted transaction its marker's crash left out",
			zap.Int64("producer_id", t.ProducerID), zap.Int64("marker_offset", t.LastOffset))
	}
}

// Dir is the partition's directory.
func (p *Partition) Dir() string { return p.dir }

// Mode returns the partition's mode and, when mirrored, the mirror name.
func (p *Partition) Mode() (Mode, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.mirror
}

// SetMode switches between writable and mirrored.
func (p *Partition) SetMode(m Mode, mirror string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.mirror = m, mirror
}

// LeaderEpoch is the epoch this node stamps on batches it writes.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leaderEpoch
}

// Offsets reports log start, high watermark, last stable offset and log end.
type Offsets struct {
	LogStart, HighWatermark, LastStable, LogEnd int64
}

// Offsets returns the partition's current offsets.
func (p *Partition) Offsets() Offsets {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Offsets{LogStart: p.log.LogStartOffset(), HighWatermark: p.highWatermark, LastStable: p.lastStable, LogEnd: p.log.LogEndOffset()}
}

// Changed returns a channel closed at the next append or truncation; Fetch
// long polls wait on it.
func (p *Partition) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notify
}

func (p *Partition) signalLocked() {
	close(p.notify)
	p.notify = make(chan struct{})
}

// updateLastStableLocked recomputes the LSO: the first offset of the
// oldest open transaction, never past the high watermark. p.mu held; the
// caller also holds appendMu or is in Open.
func (p *Partition) updateLastStableLocked() {
	lso := p.highWatermark
	if first, ok := p.psm.FirstUnstableOffset(); ok && first < lso {
		lso = first
	}
	p.lastStable = lso
}

// markClosed marks the partition closed and wakes its readers; false if
// it already was.
func (p *Partition) markClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.closed = true
	p.signalLocked()
	return true
}

// Close flushes and closes the log after writing a producer snapshot.
func (p *Partition) Close() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if !p.markClosed() {
		return nil
	}
	p.snapshotWriteMu.Lock()
	defer p.snapshotWriteMu.Unlock()
	p.writeRollSnapshotsLocked()
	// Not fsynced (Kafka fsyncs it): the log's Close fsyncs the data and
	// leaves its own hints unsynced too, and losing the snapshot in a
	// power loss only makes the next open replay more of the log. With
	// 1,000 partitions its two fsyncs were half of a shutdown's. An empty
	// log (end offset 0, no producers) has no state to snapshot: the next
	// open replays nothing with or without it, and Kafka's takeSnapshot
	// skips an offset past no new state too. The internal topics'
	// partitions, most of a broker's and mostly empty, so cost a close no
	// snapshot file each.
	if leo := p.log.LogEndOffset(); leo > 0 || p.psm.Len() > 0 {
		if err := p.psm.WriteSnapshotNoSync(p.fs, p.dir, leo); err != nil {
			p.logger.Warn("producer snapshot at close failed", zap.Error(err))
		}
	}
	return p.log.Close()
}

// Delete closes the partition and removes its files.
func (p *Partition) Delete() error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.markClosed()
	p.snapshotWriteMu.Lock()
	defer p.snapshotWriteMu.Unlock()
	p.dropRollSnapshotsAfter(-1)
	return p.log.Delete()
}

// Abandon closes the partition as a crash would (no snapshot, no flush, no
// clean-shutdown marker); see mlog.Log.Abandon.
func (p *Partition) Abandon() {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if !p.markClosed() {
		return
	}
	p.snapshotWriteMu.Lock()
	defer p.snapshotWriteMu.Unlock()
	p.dropRollSnapshotsAfter(-1)
	p.log.Abandon()
}
