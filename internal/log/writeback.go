package log

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
	}
	return r
}
