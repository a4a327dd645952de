package log

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/batch"
)

// Log compaction (cleanup.policy=compact), Kafka's Cleaner: see
// docs/COMPACTION.md for the rules and where minibroker deviates. A pass
// over one log:
//
//  1. The dirty section is [firstDirty, firstUncleanable): firstDirty from
//     cleaner-offset-checkpoint, firstUncleanable the lowest of the active
//     segment's base, the caller's first unstable offset (LSO) and the
//     first segment younger than min.compaction.lag.ms. A pass runs when
//     the dirty bytes are at least min.cleanable.dirty.ratio of the log,
//     or the first dirty batch is older than max.compaction.lag.ms.
//  2. The offset map (offsetMap, Kafka's SkimpyOffsetMap) takes the
//     latest offset of each key of the dirty section, skipping aborted
//     transactions, until it is full; the pass cleans up to the last
//     offset it covers (endOffset).
//  3. Every segment below endOffset, grouped as groupSegmentsBySize
//     groups them, is rewritten keeping a record only if it is the latest
//     of its key (or past the map), not of an aborted transaction, and not
//     a tombstone past its delete horizon; batches keep their offsets, so
//     the log has gaps (clean_batch.go).
//  4. Each rewritten group replaces its segments through .cleaned and
//     .swap files (clean_swap.go), and the checkpoint moves to endOffset.

// Cleaner is one cleaner thread's state (log.cleaner.threads of them):
// its offset map, sized by its share of log.cleaner.dedupe.buffer.size,
// and the I/O throttle all threads share.
type Cleaner struct {
	m          *offsetMap
	loadFactor float64
	throttle   *Throttler
}

// NewCleaner makes a cleaner whose offset map takes bufferBytes
// (log.cleaner.dedupe.buffer.size / log.cleaner.threads) and fills to
// loadFactor (log.cleaner.io.buffer.load.factor; <= 0: 0.9). throttle may
// be nil (no log.cleaner.io.max.bytes.per.second).
func NewCleaner(bufferBytes int64, loadFactor float64, throttle *Throttler) *Cleaner {
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = 0.9
	}
	return &Cleaner{m: newOffsetMap(bufferBytes), loadFactor: loadFactor, throttle: throttle}
}

// ProducerLast is what the partition's producer state says of a
// producer's last record (Kafka's LastRecord): the last offset of its
// last data batch (-1: none, its last record is a marker) and its epoch.
// The cleaner keeps that batch, emptied if need be, so producer state can
// be rebuilt from the cleaned log.
type ProducerLast struct {
	LastDataOffset int64
	Epoch          int16
}

// CleanRequest is what the partition tells the cleaner.
type CleanRequest struct {
	Now time.Time
	// FirstUnstable is the last stable offset: nothing at or after it is
	// cleaned (an open transaction's fate is not known yet).
	FirstUnstable int64
	// Producers are the last records of the producers in the
	// partition's producer state.
	Producers map[int64]ProducerLast
	// Force cleans the whole log from its start, ignoring the
	// checkpoint and min.cleanable.dirty.ratio (a full pass: cleaning
	// clean data again is always allowed; tests and tools use it).
	Force bool
	// BarrierDiscardable is the partition's rule for a MIRROR_PID_RESET
	// barrier (the barrier's rules live in partition and psm): given whether
	// a batch with a producer id is kept below it, may it be removed once
	// its delete horizon has passed? nil keeps every barrier, as Kafka's
	// cleaner keeps every control batch of a type it does not know.
	BarrierDiscardable func(producerKeptBelow bool) bool
}

// CleanStats describes one pass (Kafka's CleanerStats).
type CleanStats struct {
	Cleaned                         bool // a pass ran
	FirstDirty, EndOffset           int64
	DirtyRatio                      float64
	BytesRead, BytesWritten         int64
	MessagesRead, MessagesWritten   int64
	MapBytesRead, MapMessagesRead   int64
	BufferUtilization               float64
	Elapsed                         time.Duration
	SegmentsReplaced, GroupsWritten int
}

// Cleanable is the cleaner manager's view of a log (Kafka's LogToClean).
type Cleanable struct {
	FirstDirty, FirstUncleanable int64
	CleanBytes, CleanableBytes   int64
	Ratio                        float64
	NeedNow                      bool // max.compaction.lag.ms passed
}

// cleanState is the cleaner's part of Log, guarded by cleanMu (one pass
// at a time per log).
type cleanState struct {
	cleanMu          sync.Mutex
	checkpoint       int64 // first dirty offset
	checkpointLoaded bool
	// swapMu is held by a swap from before its .swap files become
	// durable until the old segments are gone, and by every operation
	// that removes or cuts sealed segments (TruncateTo, DeleteRecords,
	// retention, TruncateFullyAndStartAt), taken before appendMu. So a
	// durable .swap never covers segments such an operation changed
	// meanwhile (recovery would complete it and bring back what was cut).
	// Appends and reads never take it.
	swapMu sync.Mutex
}

var errCleanAborted = errors.New("log: cleaning aborted: the log changed under it")

// Cleanable computes the dirty section and ratio for now and lso.
func (l *Log) Cleanable(now time.Time, lso int64) (Cleanable, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	segs, _, cfg, err := l.cleanSnapshot()
	if err != nil {
		return Cleanable{}, err
	}
	return l.cleanableLocked(segs, cfg, now, lso)
}

type segSnap struct {
	seg        *segment
	base, next int64
	size       int64
	maxTs      int64
	idxBytes   int64
	timeBytes  int64
}

// cleanSnapshot copies the segment list (the active one last) under mu.
func (l *Log) cleanSnapshot() ([]segSnap, int64, Config, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return nil, 0, Config{}, err
	}
	out := make([]segSnap, len(l.segments))
	for i, s := range l.segments {
		out[i] = segSnap{seg: s, base: s.base, next: s.nextOffset, size: s.size, maxTs: s.maxTs,
			idxBytes: s.offIdx.n * offsetEntrySize, timeBytes: s.timeIdx.n * timeEntrySize}
	}
	return out, l.logStart, l.cfg, nil
}

func (l *Log) cleanableLocked(segs []segSnap, cfg Config, now time.Time, lso int64) (Cleanable, error) {
	var c Cleanable
	logStart := l.LogStartOffset()
	if err := l.loadCheckpointLocked(); err != nil {
		return c, err
	}
	c.FirstDirty = l.checkpoint
	active := segs[len(segs)-1]
	if c.FirstDirty < logStart || c.FirstDirty > active.next {
		c.FirstDirty = logStart
	}
	c.FirstUncleanable = min(active.base, lso)
	if cfg.MinCompactionLagMs > 0 {
		for _, s := range segs[:len(segs)-1] {
			if s.next > c.FirstDirty && s.maxTs > now.UnixMilli()-cfg.MinCompactionLagMs {
				c.FirstUncleanable = min(c.FirstUncleanable, s.base)
				break
			}
		}
	}
	c.FirstUncleanable = max(c.FirstUncleanable, c.FirstDirty)
	for _, s := range segs[:len(segs)-1] {
		switch {
		case s.next <= c.FirstDirty:
			c.CleanBytes += s.size
		case s.base < c.FirstUncleanable:
			c.CleanableBytes += s.size // the segment holding firstDirty too, as Kafka counts it
		}
	}
	if total := c.CleanBytes + c.CleanableBytes; total > 0 {
		c.Ratio = float64(c.CleanableBytes) / float64(total)
	}
	if cfg.MaxCompactionLagMs > 0 && cfg.MaxCompactionLagMs < math.MaxInt64 && c.CleanableBytes > 0 {
		// Kafka's LogCleanerManager.maxCompactionDelay: the first dirty
		// segment's first batch timestamp against max.compaction.lag.ms.
		for _, s := range segs[:len(segs)-1] {
			if s.base < c.FirstDirty && s.next <= c.FirstDirty {
				continue
			}
			sc := newScanner(s.seg.log, s.seg.logPath, 0, s.size, batch.HeaderSize)
			if h, _, _, err := sc.next(false); err == nil && h.MaxTimestamp >= 0 &&
				now.UnixMilli()-h.MaxTimestamp > cfg.MaxCompactionLagMs {
				c.NeedNow = true
			}
			sc.release()
			break
		}
	}
	return c, nil
}

// Clean runs one cleaning pass over the log if its policy is compact and
// it is dirty enough (or req.Force). Appends, reads and the other writers
// go on meanwhile: the segments are read without the log's locks, and
// only the swap of each cleaned group takes them (no fsync under them).
// A truncation, retention or DeleteRecords that changes the segments
// being cleaned makes the pass stop (errCleanAborted is not returned: the
// pass reports Cleaned false) and leaves the log as it was.
func (c *Cleaner) Clean(l *Log, req CleanRequest) (CleanStats, error) {
	start := time.Now()
	var st CleanStats
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	segs, logStart, cfg, err := l.cleanSnapshot()
	if err != nil {
		return st, err
	}
	if !cfg.Compact || len(segs) < 2 {
		return st, nil
	}
	if req.Force {
		l.checkpoint, l.checkpointLoaded = 0, true // dirty from the log start
	}
	ca, err := l.cleanableLocked(segs, cfg, req.Now, req.FirstUnstable)
	if err != nil {
		return st, err
	}
	st.FirstDirty, st.DirtyRatio = ca.FirstDirty, ca.Ratio
	if ca.CleanableBytes == 0 || (!req.Force && !ca.NeedNow && ca.Ratio < cfg.MinCleanableDirtyRatio) {
		return st, nil
	}
	// 2. The offset map over the dirty section.
	if err := c.buildMap(l, segs, ca.FirstDirty, ca.FirstUncleanable, &st); err != nil {
		return st, err
	}
	endOffset := c.m.latest + 1
	if endOffset <= ca.FirstDirty {
		return st, nil
	}
	st.EndOffset = endOffset
	// 3. Groups of the segments below endOffset.
	var below []segSnap
	for _, s := range segs[:len(segs)-1] {
		if s.base < endOffset && s.next > logStart {
			below = append(below, s)
		}
	}
	groups := groupSegmentsBySize(below, cfg.SegmentBytes, int64(cfg.SegmentIndexBytes), ca.FirstUncleanable)
	pass := &cleanPass{c: c, l: l, cfg: cfg, now: req.Now.UnixMilli(), producers: req.Producers,
		upperBound: ca.FirstUncleanable, barrierRule: req.BarrierDiscardable, txns: newCleanedTxns(nil), stats: &st, seenAborted: map[AbortedTxn]bool{}}
	for _, g := range groups {
		if err := pass.cleanGroup(g); err != nil {
			if errors.Is(err, errCleanAborted) {
				l.logger.Info("cleaning stopped: the log changed", zap.Error(err))
				return st, nil
			}
			return st, err
		}
	}
	// 4. The checkpoint: the next pass starts where this one ended.
	if err := l.writeCheckpointLocked(endOffset); err != nil {
		return st, err
	}
	st.Cleaned = true
	st.BufferUtilization = c.m.utilization()
	st.Elapsed = time.Since(start)
	l.logger.Info("cleaned log", zap.Int64("firstDirty", ca.FirstDirty), zap.Int64("endOffset", endOffset),
		zap.Int64("bytesRead", st.BytesRead), zap.Int64("bytesWritten", st.BytesWritten),
		zap.Int("groups", st.GroupsWritten), zap.Duration("elapsed", st.Elapsed))
	return st, nil
}

// buildMap fills the offset map from the dirty section (Kafka's
// buildOffsetMap): the latest offset of every key outside aborted
// transactions, until the map is full.
func (c *Cleaner) buildMap(l *Log, segs []segSnap, start, end int64, st *CleanStats) error {
	c.m.clear()
	txns := newCleanedTxns(l.AbortedTxns(start, end))
	limit := c.m.capacity(c.loadFactor)
	var recs []cleanRecord
	for i, s := range segs[:len(segs)-1] {
		if s.next <= start || s.base >= end {
			continue
		}
		nextStart := min(segs[i+1].base, end)
		sc := newScanner(s.seg.log, s.seg.logPath, 0, s.size, recoveryReadahead)
		full, err := func() (bool, error) {
			defer sc.release()
			for {
				h, raw, _, err := sc.next(true)
				if err == io.EOF {
					return false, nil
				}
				if err != nil {
					return false, err
				}
				if h.LastOffset() >= end {
					// Not wholly below the first uncleanable offset: the
					// map covers only what precedes it.
					nextStart = min(nextStart, h.BaseOffset)
					return false, nil
				}
				c.throttle.wait(int64(h.Size()))
				st.MapBytesRead += int64(h.Size())
				if h.LastOffset() < start {
					continue
				}
				if h.IsControl() {
					typ, known := controlType(raw, &h)
					txns.onControl(&h, typ, known)
				} else if !txns.onData(&h) {
					section, err := records(raw, &h)
					if err != nil {
						return false, fmt.Errorf("cleaner: %s at offset %d: %w", s.seg.logPath, h.BaseOffset, err)
					}
					if recs, err = parseRecords(section, &h, recs[:0]); err != nil {
						return false, fmt.Errorf("cleaner: %s at offset %d: %w", s.seg.logPath, h.BaseOffset, err)
					}
					for _, r := range recs {
						off := h.BaseOffset + int64(r.offsetDelta)
						if !r.hasKey || off < start {
							continue
						}
						if c.m.entries >= limit {
							return true, nil
						}
						c.m.put(r.key, off)
						st.MapMessagesRead++
					}
				}
				c.m.latest = max(c.m.latest, h.LastOffset())
			}
		}()
		if err != nil {
			return err
		}
		if full {
			return nil
		}
		// Offsets past the segment's last batch (a gap) are covered too.
		c.m.latest = max(c.m.latest, nextStart-1)
	}
	return nil
}

// controlType reads a control batch's type (known false: the batch holds
// no record, an already cleaned marker, or its key does not parse).
func controlType(raw []byte, h *batch.Header) (batch.ControlType, bool) {
	if h.NumRecords == 0 {
		return 0, false
	}
	section, err := records(raw, h)
	if err != nil {
		return 0, false
	}
	recs, err := parseRecords(section, h, nil)
	if err != nil || len(recs) == 0 {
		return 0, false
	}
	_, typ, ok := batch.ControlKey(recs[0].key)
	return typ, ok
}

// groupSegmentsBySize is Kafka's: consecutive segments whose logs fit in
// segment.bytes together and whose indexes fit in segment.index.bytes
// are cleaned into one, as long as their offsets fit one segment's
// relative offsets.
func groupSegmentsBySize(segs []segSnap, maxSize, maxIndexSize, firstUncleanable int64) [][]segSnap {
	var groups [][]segSnap
	for len(segs) > 0 {
		g := []segSnap{segs[0]}
		logSize, idxSize, timeSize := segs[0].size, segs[0].idxBytes, segs[0].timeBytes
		segs = segs[1:]
		for len(segs) > 0 {
			next := segs[0]
			lastOff := firstUncleanable - 1
			if len(segs) > 1 {
				lastOff = segs[1].base - 1
			}
			if logSize+next.size > maxSize || idxSize+next.idxBytes > maxIndexSize ||
				timeSize+next.timeBytes > maxIndexSize ||
				(next.size != 0 && lastOff-g[0].base > math.MaxInt32) {
				break
			}
			g = append(g, next)
			logSize, idxSize, timeSize = logSize+next.size, idxSize+next.idxBytes, timeSize+next.timeBytes
			segs = segs[1:]
		}
		groups = append(groups, g)
	}
	return groups
}
