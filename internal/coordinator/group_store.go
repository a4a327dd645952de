package coordinator

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/minibroker/minibroker/internal/recordlog"
	"github.com/minibroker/minibroker/internal/vfs"
)

// groupStore is the group log on disk (format in group_record.go), a
// recordlog. Appends are queued and made durable by group commit: the
// first waiter writes and fsyncs everything appended so far, concurrent
// waiters share that fsync. It never holds its lock across a write or an
// fsync except while rewriting the log, which appenders must wait for
// anyway.
type groupStore struct {
	path string
	w    *recordlog.Writer
}

// openGroupStore loads the group log in dir into core and cuts off a torn
// tail. A start that finds no log does not create one: the first write
// does (as Kafka creates __consumer_offsets on the first group request), so
// a broker that never sees a group writes nothing here and its start-up
// saves a file and two fsyncs.
func openGroupStore(fs vfs.FS, dir string, core *groupCore, now time.Time, logger *zap.Logger, format recordlog.Format) (*groupStore, error) {
	core.replaying, core.replayNow = true, now
	w, rec, err := recordlog.Open(recordlog.Options{FS: fs, Dir: dir, Name: groupLogFile, Format: format, Scan: groupLogScan},
		func(_ int, body []byte) error {
			r, err := decodeRecord(body)
			if err == nil {
				core.apply(r)
			}
			return err
		})
	core.replaying, core.replayNow = false, time.Time{}
	switch {
	case errors.Is(err, recordlog.ErrBadHeader):
		return nil, fmt.Errorf("%w: %v", ErrGroupLogCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("group log: %w", err)
	}
	s := &groupStore{path: filepath.Join(dir, groupLogFile), w: w}
	for _, d := range rec.Damaged {
		logger.Error("group log damaged: records in this range are lost (the rest is kept)",
			zap.String("file", s.path), zap.Int("from", d.From), zap.Int("to", d.To))
	}
	if rec.End < rec.Size {
		logger.Warn("group log: cut off a torn tail", zap.String("file", s.path),
			zap.Int("at", rec.End), zap.Int("bytes", rec.Size-rec.End))
	}
	return s, nil
}

// append queues records; the returned ticket is durable once wait(ticket)
// returns nil. 0 means nothing was queued. A record longer than the log
// holds is refused (ErrRecordTooLarge): nothing of recs is queued, there
// is nothing to wait for, and the log stays usable.
func (s *groupStore) append(recs []record) (uint64, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	var frames []byte
	for i := range recs {
		frames = appendFrame(frames, &recs[i])
	}
	t, err := s.w.AppendFrames(frames, len(recs))
	switch {
	case errors.Is(err, recordlog.ErrTooLarge):
		return 0, fmt.Errorf("%w: %v", ErrRecordTooLarge, err)
	case err != nil:
		// A closed or broken log: wait reports that (its error is
		// sticky, so the wait does not block).
		return ^uint64(0), nil
	}
	return t, nil
}

// wait makes everything up to ticket durable, sharing the fsync with
// concurrent waiters.
func (s *groupStore) wait(ticket uint64) error {
	if err := s.w.Wait(ticket); err != nil {
		if errors.Is(err, recordlog.ErrClosed) {
			return ErrCoordinatorNotAvailable
		}
		return fmt.Errorf("%w: group log: %v", ErrCoordinatorNotAvailable, err)
	}
	return nil
}

// flush makes everything appended so far durable.
func (s *groupStore) flush() error { return s.wait(s.w.Appended()) }

// needsRewrite: the log has grown by compactBytes and at least doubled
// since it was last rewritten.
func (s *groupStore) needsRewrite(compactBytes int64) bool {
	size, base, _ := s.w.Stats()
	return s.w.Err() == nil && size-base >= max(base, compactBytes)
}

// rewrite replaces the log with recs, the live state. The caller holds the
// coordinator's lock, so recs include everything appended: queued frames
// are dropped and their tickets become durable with the new file.
func (s *groupStore) rewrite(recs []record) error {
	var frames []byte
	for i := range recs {
		frames = appendFrame(frames, &recs[i])
	}
	if err := s.w.Rewrite(frames, len(recs)); err != nil {
		if errors.Is(err, recordlog.ErrClosed) {
			return nil
		}
		return fmt.Errorf("%w: group log: %v", ErrCoordinatorNotAvailable, err)
	}
	return nil
}

// close flushes (unless abandon) and closes the file.
func (s *groupStore) close(abandon bool) error {
	if err := s.w.Close(abandon); err != nil {
		return fmt.Errorf("%w: group log: %v", ErrCoordinatorNotAvailable, err)
	}
	return nil
}
