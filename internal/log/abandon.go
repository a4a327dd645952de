package log

// Abandon closes the log as a crash would leave it: no flush, no final
// index entries, no clean-shutdown marker. What was written stays in the
// page cache (as after kill -9), so the next Open runs recovery. It exists
// for in-process crash tests (minibrokertest's Kill); the broker never
// calls it on its own.
func (l *Log) Abandon() {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.flusher.stop()
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.releaseWaitersLocked()
	for _, s := range l.segments {
		s.close()
	}
}
