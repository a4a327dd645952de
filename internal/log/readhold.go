package log

import "time"

// Readers near the end hold the drop-behind (writeback.go). A consumer
// that falls a little behind a fast producer, by more than
// DropBehindBytes but not by much, would otherwise find the pages it is
// about to read dropped and read them from the disk, into new pages: on
// the machines drop-behind is for, a tailing consumer at 586 MB/s read
// 495 MB from the disk in 5 s with 32 MiB kept (docs/OPTIMISATIONS.md,
// "Produce path"). So every read notes how far behind the log's end it
// started, and the drop keeps, instead of DropBehindBytes, the farthest
// such distance noted in the last holdWindow to two, up to
// maxHoldFactor × DropBehindBytes; a reader further behind than that
// holds nothing (it reads from the disk, as it would have anyway). The
// cost is on the appends: while the held distance grows they take new
// pages instead of reusing dropped ones; once it stops growing they
// reuse pages again, dropped that much later.
const (
	holdWindow    = time.Second
	maxHoldFactor = 16
)

// readHold is the farthest distance from the log's end a read started at
// in the current holdWindow (cur, since start) and in the one before
// (prev). Guarded by Log.mu.
type readHold struct {
	start     time.Time
	cur, prev int64
}

// at returns the distance held at now, rotating the windows.
func (h *readHold) at(now time.Time) int64 {
	if d := now.Sub(h.start); d >= holdWindow {
		h.prev, h.cur = h.cur, 0
		if d >= 2*holdWindow {
			h.prev = 0
		}
		h.start = now
	}
	return max(h.cur, h.prev)
}

// note records a read that started dist bytes before the log's end.
func (h *readHold) note(now time.Time, dist int64) {
	h.at(now)
	h.cur = max(h.cur, dist)
}

// noteRead records a read of s from pos for the drop-behind's hold: its
// distance from the end of the log, if within maxHoldFactor ×
// DropBehindBytes.
func (l *Log) noteRead(s *segment, pos int64) {
	limit := l.cfg.DropBehindBytes * maxHoldFactor
	if limit <= 0 || l.opts.private.dropIgnoresReaders {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	dist := -pos
	for i := len(l.segments) - 1; i >= 0 && dist <= limit; i-- {
		dist += l.segments[i].size
		if l.segments[i] == s {
			if dist <= limit {
				l.hold.note(time.Now(), dist)
			}
			return
		}
	}
}
