package log

// TruncateFullyAndStartAt deletes every segment and starts an empty log at
// offset, as Kafka's truncateFullyAndStartAt does for a follower whose
// leader's log start passed it. A mirror uses it when its source's log
// start moved past the mirror's log end.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	return l.resetLocked(offset)
}
