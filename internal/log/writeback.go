package log

import (
	"time"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Write-behind of the active segment (Linux): every Config.WritebackBytes
// appended (minibroker's log.writeback.bytes; 0: none), the background flusher asks the kernel to start writing the
// pages just filled (sync_file_range SYNC_FILE_RANGE_WRITE) and waits for
// the range it started the time before, so that at most about two windows
// of the segment are dirty or in flight at once. Without it the page cache
// holds the whole segment dirty (vm.dirty_background_ratio of a large
// memory is gigabytes) until the roll's fsync writes it in one burst: a
// queue of up to a gigabyte of writes that every later small fsync (a
// group commit's, a journal commit) waits behind. Neither the data
// nor its metadata is durable after it: durability is still the fsync's
// (flush), which then finds little left to write. Only whole pages are
// written back, so an append never writes into a page under writeback.
const DefaultWritebackBytes = 8 << 20

// Drop-behind (minibroker's log.writeback.drop.behind.bytes; 0: off; -1,
// the default: AutoDropBehind, pagereport.go): once the write-behind has
// waited for a range, the pages of the active segment more than
// Config.DropBehindBytes behind that range's end are dropped from the
// page cache (posix_fadvise POSIX_FADV_DONTNEED on clean pages), so the
// memory they held is free for the next appends. On a virtual machine
// that hands free memory back to its host (virtio free page reporting),
// every page an append takes from memory the guest has not touched
// lately is faulted in by the host: on the machine this was measured on
// that cost the broker about three times the copy itself, and an append
// that reuses a page freed moments before does not pay it
// (docs/OPTIMISATIONS.md, "Produce path"). About the last DropBehindBytes
// of the partition stay cached for consumers at or near the end (once a
// segment's written-back pages pass DropBehindBytes, the segments before
// it are dropped whole); a reader further behind reads from the disk.
// Nothing about the data changes: only clean pages are dropped, and a
// later read reads them back.

// writebackRange is a range of a segment file handed to the kernel.
type writebackRange struct {
	s        *segment
	off, end int64
}

// writebackDue reports whether the active segment has a window of
// appended bytes not yet handed to the kernel. Called with mu held.
func (l *Log) writebackDue(s *segment) bool {
	return l.cfg.WritebackBytes > 0 && s.size-s.wbFrom >= l.cfg.WritebackBytes
}

// takeWriteback returns the whole pages of the active segment appended
// since the last call and marks them handed over (mu held).
func (l *Log) takeWriteback() (writebackRange, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || len(l.segments) == 0 {
		return writebackRange{}, false
	}
	s := l.active()
	end := s.size &^ (pageSize - 1)
	if s.wbFrom > end { // truncated below what was handed over
		s.wbFrom = end
	}
	if end <= s.wbFrom {
		return writebackRange{}, false
	}
	r := writebackRange{s: s, off: s.wbFrom, end: end}
	s.wbFrom = end
	return r, true
}

const pageSize = 4096

// writeBehind starts the writeback of the pages appended since the last
// call and waits for the range started the time before (prev), which it
// returns replaced by the new one. It runs on the flusher goroutine with no
// Log lock held: a segment closed meanwhile makes the calls fail, which is
// ignored, as is any error (the fsync that makes the data durable reports
// its own).
func (l *Log) writeBehind(prev writebackRange) writebackRange {
	r, ok := l.takeWriteback()
	if !ok {
		return prev
	}
	startWriteback(r.s.log, r.off, r.end-r.off)
	if prev.s != nil {
		waitWriteback(prev.s.log, prev.off, prev.end-prev.off)
		for _, c := range l.dropTargets(prev) {
			dropCached(c.f, c.off, c.n)
		}
	}
	return r
}

// cachedRange is a range of a segment file whose pages drop-behind drops.
type cachedRange struct {
	f      vfs.File
	off, n int64
}

// dropTargets returns the written-back pages to drop once the write-behind
// has waited for r: those more than the kept distance behind r's end,
// from where the last drop in their segment stopped (segment.droppedTo),
// so every page is dropped once however the distance moves. The kept
// distance is DropBehindBytes, or more while a reader near the end holds
// it (readhold.go), rounded up to whole pages.
//
// The distance does not stop at r's segment's start: where it reaches
// back past it, it drops the tail of the segments before (the one the
// last roll closed), so after a roll the new segment's first pages reuse
// the old one's memory instead of taking DropBehindBytes of memory not
// touched lately (on the machine docs/OPTIMISATIONS.md describes, a stall
// of a few hundred milliseconds at every roll of a paced producer). The
// segments before the one the distance lands in are further than that
// from the log's end: those whose cache has not been dropped yet are
// dropped whole, so a partition keeps about its last DropBehindBytes
// cached, not the tail of every segment it rolled. Whole-segment drops
// take only fsynced segments (the dirty pages of one the roll's
// background flush has not written yet would stay cached; a later call
// drops it) and stop at the first one already dropped. Files are dropped
// by the caller, outside mu: a segment closed meanwhile makes the call
// fail, which is ignored.
func (l *Log) dropTargets(r writebackRange) []cachedRange {
	keep := l.cfg.DropBehindBytes
	if keep <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	i := len(l.segments) - 1
	for i >= 0 && l.segments[i] != r.s {
		i--
	}
	if i < 0 {
		return nil // r's segment is gone (deleted, truncated away)
	}
	keep = max(keep, l.hold.at(time.Now()))
	keep = (keep + pageSize - 1) &^ (pageSize - 1)
	// t: the position keep bytes before r's end, in segments[j].
	j, t := i, r.end-keep
	for t < 0 && j > 0 && !l.opts.private.dropStopsAtRoll {
		j--
		t += l.segments[j].size
	}
	if t < 0 {
		return nil
	}
	var out []cachedRange
	s := l.segments[j]
	if j == i {
		// Drops stop behind what was handed to the write-behind, so a
		// cursor past it is one a truncation cut under (takeWriteback
		// has moved wbFrom back to the cut).
		s.droppedTo = min(s.droppedTo, s.wbFrom)
	}
	if (j == i || !s.cacheDropped) && t > s.droppedTo {
		out = append(out, cachedRange{s.log, s.droppedTo, t - s.droppedTo})
		s.droppedTo = t
	}
	for k := j - 1; k >= 0 && !l.segments[k].cacheDropped; k-- {
		if l.segments[k].nextOffset > l.flushed {
			continue // not fsynced yet (the roll's background flush)
		}
		l.segments[k].cacheDropped = true
		out = append(out, cachedRange{l.segments[k].log, 0, l.segments[k].size})
	}
	return out
}
