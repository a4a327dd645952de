package log

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Replacing segments with a cleaned one, crash-safely (Kafka's
// replaceSegments and LogLoader's swap recovery):
//
//  1. The cleaned group is written as <base>.log.cleaned with its
//     <base>.index.cleaned, .timeindex.cleaned and .txnindex.cleaned, and
//     each is fsynced.
//  2. Under swapMu (held to the end; truncation, DeleteRecords and
//     retention take it first), with the group checked intact, each is
//     renamed to .swap, the log last, and the directory fsynced. From
//     here on the new segment is what the log holds: recovery completes
//     a swap it finds.
//  3. Under the log's locks (appendMu, truncMu for writing so no reader
//     is inside a file, mu), without an fsync: the old segments are
//     closed, the files of every old segment but the first removed (log
//     first), the .swap files renamed over the first segment's files
//     (indexes first, log last), and the segment list updated.
//  4. The directory is fsynced, then the cleaner checkpoint written.
//
// At open (completeSwaps): .cleaned files are removed (step 1 or 2 did
// not finish: the old segments are intact); a <base>.log.swap is the
// cleaned group, whose last batch is the group's last (the cleaner keeps
// it, emptied if need be), so every .log whose base lies in
// [base, swap's end) is an old segment of it and is removed, and the
// .swap files take their final names. An index .swap without its log
// .swap is removed. Like Kafka, this relies on the file system keeping
// the order of renames and removals in one directory (ext4 and xfs
// journal them in order); the crash matrix in clean_crash_test.go cuts
// after every step.

const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
	// cleanerCheckpointName holds the first dirty offset (Kafka's
	// cleaner-offset-checkpoint, kept there per data directory).
	cleanerCheckpointName = "cleaner-offset-checkpoint"
)

var segmentSuffixes = []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix} // log last

func (l *Log) removeCleanFiles(base int64) {
	for _, suf := range segmentSuffixes {
		for _, tail := range []string{cleanedSuffix, swapSuffix} {
			l.fs.Remove(segmentFileName(l.dir, base, suf) + tail)
		}
	}
}

func writeSynced(fsys vfs.FS, path string, data []byte, sync bool) error {
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return storageErr("create", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return storageErr("write", path, err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return storageErr("fsync", path, err)
		}
	}
	return f.Close()
}

// swapIn replaces group's segments with the cleaned segment g wrote.
func (l *Log) swapIn(group []segSnap, g *groupWriter) error {
	base := g.base
	name := func(suf, tail string) string { return segmentFileName(l.dir, base, suf) + tail }
	// 1. The indexes, fsynced (the log was fsynced by its writer).
	var txn []byte
	for _, t := range g.txns {
		txn = t.appendTo(txn)
	}
	sync := !l.opts.private.cleanSkipSync
	files := map[string][]byte{indexSuffix: g.offIdx, timeIndexSuffix: g.timeIdx}
	if len(txn) > 0 {
		files[txnIndexSuffix] = txn
	}
	for suf, data := range files {
		if err := writeSynced(l.fs, name(suf, cleanedSuffix), data, sync); err != nil {
			l.removeCleanFiles(base)
			return err
		}
	}
	l.cleanStep("cleaned files written")
	// From here until the old segments are gone no truncation, retention
	// or DeleteRecords runs (swapMu): the group is checked intact first.
	if !l.opts.private.cleanSkipSwapMu {
		l.swapMu.Lock()
		defer l.swapMu.Unlock()
	}
	if !l.groupIntact(group) {
		l.removeCleanFiles(base)
		return errCleanAborted
	}
	// 2. .cleaned → .swap, the log last; then the directory.
	for _, suf := range segmentSuffixes {
		if _, ok := files[suf]; !ok && suf != logSuffix {
			continue
		}
		if err := l.fs.Rename(name(suf, cleanedSuffix), name(suf, swapSuffix)); err != nil {
			l.removeCleanFiles(base)
			return storageErr("rename", name(suf, cleanedSuffix), err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		l.removeCleanFiles(base)
		return storageErr("fsync", l.dir, err)
	}
	l.cleanStep("swap files durable")
	// 3. Under the locks: no fsync.
	err := func() error {
		l.appendMu.Lock()
		defer l.appendMu.Unlock()
		l.truncMu.Lock()
		defer l.truncMu.Unlock()
		l.mu.Lock()
		defer l.mu.Unlock()
		if err := l.writableLocked(); err != nil {
			return err
		}
		i := l.groupIndexLocked(group)
		if i < 0 {
			// swapMu keeps every operation that changes sealed segments
			// out since the check before the .swap files were made
			// durable, so this cannot happen.
			return l.failLocked(fmt.Errorf("%w: cleaned segments changed under a durable swap", ErrStorage))
		}
		end := l.segments[i+len(group)].base
		for j := len(group) - 1; j >= 0; j-- {
			s := group[j].seg
			s.close()
			if j == 0 {
				continue
			}
			if err := s.remove(l.fs); err != nil {
				return l.failLocked(err)
			}
		}
		l.cleanStep("old segments removed")
		if _, ok := files[txnIndexSuffix]; !ok {
			if err := l.fs.Remove(name(txnIndexSuffix, "")); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return l.failLocked(storageErr("remove", name(txnIndexSuffix, ""), err))
			}
		}
		for _, suf := range segmentSuffixes {
			if _, ok := files[suf]; !ok && suf != logSuffix {
				continue
			}
			if err := l.fs.Rename(name(suf, swapSuffix), name(suf, "")); err != nil {
				return l.failLocked(storageErr("rename", name(suf, swapSuffix), err))
			}
		}
		s, err := openSegment(l.fs, l.dir, base, false, l.opts.Now())
		if err != nil {
			return l.failLocked(err)
		}
		s.nextOffset = end
		if e, ok := s.timeIdx.lastEntry(); ok {
			s.maxTs, s.maxTsOffset = e.Timestamp, e.Offset
		}
		s.lastBatchPos, s.lastBatchOffset = g.lastPos, g.lastOffset
		// Every batch was read with its CRC checked or written with a
		// CRC computed just now.
		s.verified = verification{prefixEnd: s.size, suffixStart: s.size}
		l.segments = slices.Replace(l.segments, i, i+len(group), s)
		l.dirDirty = true
		return nil
	}()
	if errors.Is(err, errCleanAborted) {
		l.removeCleanFiles(base)
		return err
	}
	if err != nil {
		return err
	}
	// 4. The renames and removals made durable.
	l.cleanStep("swapped, directory not synced")
	if err := l.fs.SyncDir(l.dir); err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.failLocked(storageErr("fsync", l.dir, err))
	}
	l.cleanStep("swap done")
	return nil
}

func (l *Log) cleanStep(step string) {
	if f := l.opts.private.cleanStep; f != nil {
		f(step)
	}
}

// groupIntact reports whether group's segments are still in the log,
// consecutive, unchanged and followed by another segment.
func (l *Log) groupIntact(group []segSnap) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writableLocked() == nil && l.groupIndexLocked(group) >= 0
}

func (l *Log) groupIndexLocked(group []segSnap) int {
	i := slices.Index(l.segments, group[0].seg)
	if i < 0 || i+len(group) >= len(l.segments) {
		return -1
	}
	for j, s := range group {
		if l.segments[i+j] != s.seg || s.seg.size != s.size {
			return -1
		}
	}
	return i
}

// completeSwaps finishes, at open, what a crash interrupted (see above).
func (l *Log) completeSwaps() error {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return storageErr("readdir", l.dir, err)
	}
	logSwaps := map[int64]bool{}
	var swapBases []int64
	var indexSwaps []string
	logs := map[int64]bool{}
	for _, e := range entries {
		n := e.Name()
		switch {
		case strings.HasSuffix(n, cleanedSuffix):
			if err := l.fs.Remove(filepath.Join(l.dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return storageErr("remove", n, err)
			}
		case strings.HasSuffix(n, logSuffix+swapSuffix):
			if b, ok := parseBase(strings.TrimSuffix(n, logSuffix+swapSuffix)); ok {
				logSwaps[b] = true
				swapBases = append(swapBases, b)
			}
		case strings.HasSuffix(n, swapSuffix):
			indexSwaps = append(indexSwaps, n)
		case strings.HasSuffix(n, logSuffix):
			if b, ok := parseBase(strings.TrimSuffix(n, logSuffix)); ok {
				logs[b] = true
			}
		}
	}
	for _, n := range indexSwaps {
		b, ok := parseBase(strings.TrimSuffix(strings.TrimSuffix(n, swapSuffix), filepath.Ext(strings.TrimSuffix(n, swapSuffix))))
		if !ok || !logSwaps[b] {
			if err := l.fs.Remove(filepath.Join(l.dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return storageErr("remove", n, err)
			}
		}
	}
	if len(swapBases) == 0 {
		return nil
	}
	slices.Sort(swapBases)
	for _, base := range swapBases {
		path := segmentFileName(l.dir, base, logSuffix) + swapSuffix
		end, err := swapEnd(l.fs, path, base)
		if err != nil {
			return err
		}
		l.logger.Warn("completing an interrupted cleaner swap", zap.Int64("base", base), zap.Int64("end", end))
		for b := range logs {
			if b > base && b < end {
				for _, suf := range segmentSuffixes {
					if err := l.fs.Remove(segmentFileName(l.dir, b, suf)); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return storageErr("remove", segmentFileName(l.dir, b, suf), err)
					}
				}
				delete(logs, b)
			}
		}
		for _, suf := range segmentSuffixes {
			final := segmentFileName(l.dir, base, suf)
			if _, err := l.fs.Stat(final + swapSuffix); err != nil {
				if suf == txnIndexSuffix {
					l.fs.Remove(final) // the cleaned group kept no aborted txn
				}
				continue
			}
			if err := l.fs.Rename(final+swapSuffix, final); err != nil {
				return storageErr("rename", final+swapSuffix, err)
			}
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return storageErr("fsync", l.dir, err)
	}
	return nil
}

func parseBase(s string) (int64, bool) {
	if len(s) != 20 {
		return 0, false
	}
	b, err := strconv.ParseInt(s, 10, 64)
	return b, err == nil && b >= 0
}

// swapEnd is the offset after the last whole batch of a .swap log.
func swapEnd(fsys vfs.FS, path string, base int64) (int64, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, storageErr("open", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, storageErr("stat", path, err)
	}
	end := base + 1
	sc := newScanner(f, path, 0, st.Size(), recoveryReadahead)
	defer sc.release()
	for {
		h, _, _, err := sc.next(false)
		if err == io.EOF {
			return end, nil
		}
		if err != nil {
			return end, nil // recovery of the segment cuts the damage
		}
		end = h.LastOffset() + 1
	}
}

// loadCheckpointLocked reads cleaner-offset-checkpoint once; cleanMu held.
func (l *Log) loadCheckpointLocked() error {
	if l.checkpointLoaded {
		return nil
	}
	off, ok, err := readOffsetFile(l.fs, l.dir, cleanerCheckpointName)
	if err != nil {
		return err
	}
	if !ok {
		off = 0
	}
	l.checkpoint, l.checkpointLoaded = off, true
	return nil
}

func (l *Log) writeCheckpointLocked(off int64) error {
	if err := writeOffsetFile(l.fs, l.dir, cleanerCheckpointName, off); err != nil {
		return err
	}
	l.checkpoint = off
	return nil
}

// CleanerCheckpoint is the first dirty offset (0 before any pass).
func (l *Log) CleanerCheckpoint() (int64, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if err := l.loadCheckpointLocked(); err != nil {
		return 0, err
	}
	return l.checkpoint, nil
}

// Throttler is Kafka's Throttler for log.cleaner.io.max.bytes.per.second,
// shared by the cleaner threads: it sleeps a caller when the bytes read
// and written in the current second exceed the rate.
type Throttler struct {
	mu     sync.Mutex
	rate   float64
	start  time.Time
	bytes  float64
	now    func() time.Time
	sleep  func(time.Duration)
	Waited time.Duration // total time slept (a metric); guarded by mu
}

// NewThrottler limits to bytesPerSecond (<= 0 or +Inf: no limit).
func NewThrottler(bytesPerSecond float64) *Throttler {
	return &Throttler{rate: bytesPerSecond, now: time.Now, sleep: time.Sleep}
}

func (t *Throttler) wait(n int64) {
	if t == nil || t.rate <= 0 || t.rate > 1e18 {
		return
	}
	t.mu.Lock()
	now := t.now()
	if t.start.IsZero() || now.Sub(t.start) > time.Second {
		t.start, t.bytes = now, 0
	}
	t.bytes += float64(n)
	want := time.Duration(t.bytes / t.rate * float64(time.Second))
	d := want - now.Sub(t.start)
	if d > 0 {
		t.Waited += d
	}
	t.mu.Unlock()
	if d > 0 {
		t.sleep(d)
	}
}
