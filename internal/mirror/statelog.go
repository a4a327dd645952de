package mirror

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/minibroker/minibroker/internal/recordlog"
	"github.com/minibroker/minibroker/internal/vfs"
)

// The mirrors' persisted state is two record logs (internal/recordlog, the
// package the coordinators' logs use; byte diagram in
// internal/recordlog/format.go) in the data directory:
//
//	mirror-state.log    magic "MBMS", version 1: every mirror's definition
//	                    and per-partition state (state.go)
//	mirror-sources.log  magic "MBMC", version 1, mode 0600: the mirrors'
//	                    source security settings, secrets included
//	                    (secrets.go)
//
// Both hold frames of one body type:
//
//	0  1  type (1: a whole document)
//	1  …  the document, JSON (the shapes drawn in state.go and secrets.go)
//
// Each save is one record holding the whole document; reading takes the
// last valid record, and a torn tail (an append a crash cut, never
// acknowledged) is cut off as recordlog does. A save returns only once its
// record is fsynced, as the whole-file rewrite it replaces did, so every
// ordering the mirror relies on (STOPPING persisted before any log is
// touched, STOPPED only after the barrier is fsynced, a mirror's source
// settings saved before the mirror itself) holds unchanged. The state log
// is appended to (one write and one fsync a save, where the whole-file
// rewrite took two fsyncs and a rename) and rewritten to its last document
// once it has grown by max(its size after the last rewrite,
// docLogCompactBytes). The sources log is rewritten on every save, never
// appended to: a password changed or a mirror deleted must not stay behind
// in an older record.
//
// A log that cannot be written (a failed write or fsync leaves the file's
// contents unknown, and recordlog refuses further appends) is replaced
// whole by the next save (temp file, fsync, rename, directory fsync), as
// the JSON files were on every save: one failed fsync does not stop the
// mirrors from persisting their state until a restart.
//
// Upgrade: a data directory written before these logs has mirrors.json
// and mirror-sources.json, the same documents as whole JSON files. When a
// log has no file (or only a torn header: a creation that never finished)
// and its JSON file is there, the JSON is read, written to the new log
// (created through a temp file, fsync, rename and directory fsync) and
// only then removed (and the directory fsynced); the sources first, as a
// create saves them. A crash before the log's rename leaves the JSON
// alone, read again at the next start; a crash after it leaves both, and
// the next start, finding the log, takes it (the JSON is what it was
// written from, and every change since went to the log) and removes the
// JSON. So the upgrade can be cut anywhere and run again. An earlier
// version started on an upgraded directory finds no mirrors.json and
// starts with no mirror.
const (
	mirrorStateFile         = "mirror-state.log"
	mirrorSourcesFile       = "mirror-sources.log"
	legacyMirrorsFile       = "mirrors.json"
	legacySourcesFile       = "mirror-sources.json"
	docLogVersion           = 1
	docRecordType      byte = 1
	docLogCompactBytes      = 1 << 20
)

var (
	mirrorStateFormat   = recordlog.Format{Magic: "MBMS", Version: docLogVersion, MaxRecord: 64 << 20}
	mirrorSourcesFormat = recordlog.Format{Magic: "MBMC", Version: docLogVersion, MaxRecord: 16 << 20}
)

// docLog is one of the two logs.
type docLog struct {
	o recordlog.Options
	w *recordlog.Writer
	// rewriteEach makes every save a rewrite (the sources log).
	rewriteEach  bool
	compactBytes int64
	// skipSync is set only by this package's negative-control tests: a
	// save then writes its record without waiting for its fsync.
	skipSync bool
}

// openDocLog opens dir/name and returns its last document (nil when it
// has none) and, when the log has no file, the legacy JSON file's
// contents (nil when there is none either). notes are what a start
// should log: a torn tail cut, a legacy file removed.
func openDocLog(fs vfs.FS, dir, name, legacy string, format recordlog.Format, private bool) (l *docLog, last, legacyRaw []byte, notes []string, err error) {
	l = &docLog{o: recordlog.Options{FS: fs, Dir: dir, Name: name, Format: format, WriteThrough: true, Private: private},
		compactBytes: docLogCompactBytes}
	w, rec, err := recordlog.Open(l.o, func(off int, body []byte) error {
		if body[0] != docRecordType || len(body) < 2 {
			return fmt.Errorf("mirror: %s: record at byte %d: type %d of %d bytes", name, off, body[0], len(body))
		}
		last = bytes.Clone(body[1:])
		return nil
	})
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("mirror: open %s: %w", name, err)
	}
	l.w = w
	if rec.End < rec.Size && !w.Unborn() {
		notes = append(notes, fmt.Sprintf("%s: cut off a torn tail of %d bytes at byte %d", name, rec.Size-rec.End, rec.End))
	}
	legacyPath := filepath.Join(dir, legacy)
	if !w.Unborn() {
		// A crash after the upgrade wrote this log and before it removed
		// the JSON file: the log is the state.
		if _, err := fs.Stat(legacyPath); err == nil {
			if err := removeDurably(fs, dir, legacyPath); err != nil {
				w.Close(true)
				return nil, nil, nil, nil, err
			}
			notes = append(notes, fmt.Sprintf("removed %s, left by an upgrade that had written %s", legacy, name))
		}
		return l, last, nil, notes, nil
	}
	legacyRaw, err = vfs.ReadFile(fs, legacyPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return l, nil, nil, notes, nil
	case err != nil:
		w.Close(true)
		return nil, nil, nil, nil, fmt.Errorf("mirror: read %s: %w", legacy, err)
	}
	return l, nil, legacyRaw, notes, nil
}

// removeDurably removes path and fsyncs its directory.
func removeDurably(fs vfs.FS, dir, path string) error {
	if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("mirror: remove %s: %w", filepath.Base(path), err)
	}
	if err := fs.SyncDir(dir); err != nil {
		return fmt.Errorf("mirror: sync %s: %w", dir, err)
	}
	return nil
}

// save makes doc the log's document, durably, before it returns.
func (l *docLog) save(doc []byte) error {
	if 1+len(doc) > l.o.Format.MaxRecord {
		// A longer record would be read back as damage and cut off with
		// everything after it: refuse it, keeping the last state.
		return fmt.Errorf("mirror: save %s: the state is %d bytes, over the %d a record holds", l.o.Name, len(doc), l.o.Format.MaxRecord-1)
	}
	frame := recordlog.AppendFrameFunc(make([]byte, 0, recordlog.FrameHeaderLen+1+len(doc)), func(b []byte) []byte {
		return append(append(b, docRecordType), doc...)
	})
	if err := l.saveFrame(frame); err != nil {
		return fmt.Errorf("mirror: save %s: %w", l.o.Name, err)
	}
	return nil
}

func (l *docLog) saveFrame(frame []byte) error {
	if l.w.Err() != nil {
		return l.replace(frame)
	}
	size, base, _ := l.w.Stats()
	if l.rewriteEach || size+int64(len(frame))-base >= max(base, l.compactBytes) {
		return l.w.Rewrite(frame, 1)
	}
	t, err := l.w.AppendFrames(frame, 1)
	if err != nil || l.skipSync {
		return err
	}
	return l.w.Wait(t)
}

// replace writes the whole log anew holding frame, after a failed write
// or fsync left the open one broken, and opens it.
func (l *docLog) replace(frame []byte) error {
	_ = l.w.Close(true)
	data := append(l.o.Format.AppendHeader(make([]byte, 0, recordlog.HeaderLen+len(frame))), frame...)
	path := filepath.Join(l.o.Dir, l.o.Name)
	write := vfs.WriteFileAtomic
	if l.o.Private {
		write = vfs.WriteFileAtomicPrivate
	}
	if err := write(l.o.FS, l.o.Dir, path, data); err != nil {
		_ = l.o.FS.Remove(path + ".tmp")
		return err
	}
	w, _, err := recordlog.Open(l.o, func(int, []byte) error { return nil })
	if err != nil {
		return err
	}
	l.w = w
	return nil
}

func (l *docLog) close() error { return l.w.Close(false) }

// store is the mirrors' two logs.
type store struct {
	state, sources *docLog
	so             storeOptions
}

// storeOptions are seams for this package's negative-control tests only.
type storeOptions struct {
	// removeLegacyFirst makes the upgrade remove a JSON file before its
	// log is written.
	removeLegacyFirst bool
}

// openStore opens both logs (upgrading JSON files left by an earlier
// version) and returns the document with every mirror's source settings
// attached.
func openStore(fs vfs.FS, dir string) (*store, *doc, []string, error) {
	return openStoreWith(fs, dir, storeOptions{})
}

func openStoreWith(fs vfs.FS, dir string, so storeOptions) (*store, *doc, []string, error) {
	s := &store{so: so}
	var notes []string
	sources, lastSources, legacySources, n, err := openDocLog(fs, dir, mirrorSourcesFile, legacySourcesFile, mirrorSourcesFormat, true)
	if err != nil {
		return nil, nil, nil, err
	}
	s.sources, notes = sources, append(notes, n...)
	sources.rewriteEach = true
	if legacySources != nil {
		// The settings first: a mirror in the state always has them.
		if _, err := decodeSourceConfigs(legacySources, legacySourcesFile); err != nil {
			s.close()
			return nil, nil, nil, err
		}
		if err := s.upgrade(sources, legacySources, legacySourcesFile); err != nil {
			s.close()
			return nil, nil, nil, err
		}
		lastSources = legacySources
		notes = append(notes, "moved "+legacySourcesFile+" to "+mirrorSourcesFile)
	}
	state, lastState, legacyState, n, err := openDocLog(fs, dir, mirrorStateFile, legacyMirrorsFile, mirrorStateFormat, false)
	if err != nil {
		s.close()
		return nil, nil, nil, err
	}
	s.state, notes = state, append(notes, n...)
	d := &doc{Version: mirrorsVersion}
	name := mirrorStateFile
	if legacyState != nil {
		lastState, name = legacyState, legacyMirrorsFile
	}
	if lastState != nil {
		if d, err = decodeDoc(lastState, name); err != nil {
			s.close()
			return nil, nil, nil, err
		}
	}
	if legacyState != nil {
		raw, err := encodeDoc(d) // as read, with old group lists moved
		if err == nil {
			err = s.upgrade(state, raw, legacyMirrorsFile)
		}
		if err != nil {
			s.close()
			return nil, nil, nil, err
		}
		notes = append(notes, "moved "+legacyMirrorsFile+" to "+mirrorStateFile)
	}
	if lastSources != nil {
		sd, err := decodeSourceConfigs(lastSources, mirrorSourcesFile)
		if err != nil {
			s.close()
			return nil, nil, nil, err
		}
		for _, m := range d.Mirrors {
			m.SourceConfig = sd.Sources[m.Name]
		}
	}
	return s, d, notes, nil
}

// upgrade writes raw, read from the legacy file, to l durably and then
// removes the legacy file.
func (s *store) upgrade(l *docLog, raw []byte, legacy string) error {
	if s.so.removeLegacyFirst {
		if err := removeDurably(l.o.FS, l.o.Dir, filepath.Join(l.o.Dir, legacy)); err != nil {
			return err
		}
	}
	if err := l.save(raw); err != nil {
		return err
	}
	return removeDurably(l.o.FS, l.o.Dir, filepath.Join(l.o.Dir, legacy))
}

// saveDoc persists d (without its source settings).
func (s *store) saveDoc(d *doc) error {
	raw, err := encodeDoc(d)
	if err != nil {
		return err
	}
	return s.state.save(raw)
}

// saveSources persists the source settings of the mirrors in d.
func (s *store) saveSources(d *doc) error {
	raw, err := encodeSourceConfigs(d)
	if err != nil {
		return err
	}
	return s.sources.save(raw)
}

// stateUnknown reports whether the last save of the state log failed on
// a write or fsync: what the file holds is then unknown (it may hold the
// record whose save failed), and the next save writes it anew.
func (s *store) stateUnknown() bool { return s.state != nil && s.state.w.Err() != nil }

func (s *store) close() error {
	var err error
	for _, l := range []*docLog{s.sources, s.state} {
		if l != nil {
			if cerr := l.close(); err == nil {
				err = cerr
			}
		}
	}
	return err
}
