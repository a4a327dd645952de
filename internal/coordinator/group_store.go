package coordinator

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/vfs"
)

// groupStore is the group log on disk (format in group_record.go). Appends
// are buffered and made durable by group commit: the first waiter writes
// and fsyncs everything appended so far, concurrent waiters share that
// fsync. It never holds its lock across a write or an fsync except while
// rewriting the log, which appenders must wait for anyway.
type groupStore struct {
	fs   vfs.FS
	dir  string
	path string

	mu       sync.Mutex // guards everything below
	cond     *sync.Cond
	f        vfs.File
	size     int64  // bytes in the file
	buf      []byte // appended, not yet written
	appended uint64 // tickets handed out
	durable  uint64 // tickets written and fsynced
	syncing  bool
	err      error // sticky: a failed write or fsync leaves the file unknown
	closed   bool
	base     int64 // size after the last load or rewrite
}

// openGroupStore loads the group log in dir into core and cuts off a torn
// tail. A start that finds no log does not create one: the first write
// does (as Kafka creates __consumer_offsets on the first group request), so
// a broker that never sees a group writes nothing here and its start-up
// saves a file and two fsyncs.
func openGroupStore(fs vfs.FS, dir string, core *groupCore, now time.Time, logger *zap.Logger) (*groupStore, error) {
	s := &groupStore{fs: fs, dir: dir, path: filepath.Join(dir, groupLogFile)}
	s.cond = sync.NewCond(&s.mu)
	_ = fs.Remove(s.path + ".tmp") // a rewrite or creation that did not finish
	data, err := vfs.ReadFile(fs, s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		s.size, s.base = groupLogHeaderLen, groupLogHeaderLen // what the new file will start with
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("read group log: %w", err)
	}
	if err := checkGroupLogHeader(data); err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	core.replaying, core.replayNow = true, now
	valid, damaged := scanFrames(data, core.apply)
	core.replaying, core.replayNow = false, time.Time{}
	for _, d := range damaged {
		logger.Error("group log damaged: records in this range are lost (the rest is kept)",
			zap.String("file", s.path), zap.Int("from", d.From), zap.Int("to", d.To))
	}
	if valid < len(data) {
		logger.Warn("group log: cutting off a torn tail", zap.String("file", s.path),
			zap.Int("at", valid), zap.Int("bytes", len(data)-valid))
	}
	f, err := fs.OpenFile(s.path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open group log: %w", err)
	}
	if valid < len(data) {
		if err := f.Truncate(int64(valid)); err != nil {
			f.Close()
			return nil, fmt.Errorf("truncate group log torn tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("sync group log: %w", err)
		}
	}
	s.f, s.size, s.base = f, int64(valid), int64(valid)
	return s, nil
}

// append queues records; the returned ticket is durable once wait(ticket)
// returns nil. 0 means nothing was queued.
func (s *groupStore) append(recs []record) uint64 {
	if len(recs) == 0 {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range recs {
		s.buf = appendFrame(s.buf, &recs[i])
	}
	s.appended++
	return s.appended
}

// wait makes everything up to ticket durable, sharing the fsync with
// concurrent waiters.
func (s *groupStore) wait(ticket uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.durable < ticket {
		switch {
		case s.err != nil:
			return s.err
		case s.closed:
			return ErrCoordinatorNotAvailable
		case s.syncing:
			s.cond.Wait()
			continue
		}
		s.syncing = true
		buf, upTo, f := s.buf, s.appended, s.f
		s.buf = nil
		s.mu.Unlock()
		var err error
		creating := f == nil
		if creating {
			f, err = s.create(buf)
		} else if _, err = f.Write(buf); err == nil {
			err = f.Sync()
		}
		s.mu.Lock()
		s.syncing = false
		if creating {
			if err != nil {
				// No file was made: keep the frames for the next write
				// and fail only this waiter.
				s.buf = append(buf, s.buf...)
				s.cond.Broadcast()
				return fmt.Errorf("%w: create group log: %v", ErrCoordinatorNotAvailable, err)
			}
			s.f = f
		}
		if err != nil {
			s.err = fmt.Errorf("%w: group log: %v", ErrCoordinatorNotAvailable, err)
		} else {
			s.durable = upTo
			s.size += int64(len(buf))
		}
		s.cond.Broadcast()
	}
	return nil
}

// create writes the log's first file, the header and buf, and opens it
// for appends. Nothing is left behind when it fails: the next write tries
// again.
func (s *groupStore) create(buf []byte) (vfs.File, error) {
	data := append(groupLogHeader(), buf...)
	if err := vfs.WriteFileAtomic(s.fs, s.dir, s.path, data); err != nil {
		_ = s.fs.Remove(s.path + ".tmp")
		return nil, err
	}
	return s.fs.OpenFile(s.path, os.O_RDWR|os.O_APPEND, 0o644)
}

// flush makes everything appended so far durable.
func (s *groupStore) flush() error {
	s.mu.Lock()
	t := s.appended
	s.mu.Unlock()
	return s.wait(t)
}

// needsRewrite: the log has grown by compactBytes and at least doubled
// since it was last rewritten.
func (s *groupStore) needsRewrite(compactBytes int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	size := s.size + int64(len(s.buf))
	return s.err == nil && !s.closed && size-s.base >= max(s.base, compactBytes)
}

// rewrite replaces the log with recs, the live state. The caller holds the
// coordinator's lock, so recs include everything appended: queued frames
// are dropped and their tickets become durable with the new file.
func (s *groupStore) rewrite(recs []record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.syncing {
		s.cond.Wait()
	}
	if s.err != nil || s.closed {
		return s.err
	}
	data := groupLogHeader()
	for i := range recs {
		data = appendFrame(data, &recs[i])
	}
	if err := vfs.WriteFileAtomic(s.fs, s.dir, s.path, data); err != nil {
		// The old file is intact unless the rename happened; reopen it
		// either way and carry on with what it holds.
		s.fs.Remove(s.path + ".tmp")
		return fmt.Errorf("rewrite group log: %w", err)
	}
	f, err := s.fs.OpenFile(s.path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		s.err = fmt.Errorf("%w: reopen group log: %v", ErrCoordinatorNotAvailable, err)
		s.cond.Broadcast()
		return s.err
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.size, s.base, s.buf = f, int64(len(data)), int64(len(data)), nil
	s.durable = s.appended
	s.cond.Broadcast()
	return nil
}

// close flushes (unless abandon) and closes the file.
func (s *groupStore) close(abandon bool) error {
	var err error
	if !abandon {
		err = s.flush()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.syncing {
		s.cond.Wait()
	}
	s.closed = true
	s.cond.Broadcast()
	if s.f == nil { // never written
		return err
	}
	if cerr := s.f.Close(); err == nil && !abandon {
		err = cerr
	}
	return err
}
