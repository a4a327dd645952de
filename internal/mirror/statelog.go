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

// The mirrors' state (every mirror's definition and per-partition
// state, state.go) is kept in the internal topic __mirror_state
// (statetopic.go); their source security settings, secrets included, in
// a record log of their own in the data directory (internal/recordlog,
// byte diagram in internal/recordlog/format.go), never in a topic that
// Fetch serves:
//
//	mirror-sources.log  magic "MBMC", version 1, mode 0600 (secrets.go)
//
// It holds frames of one body type:
//
//	0  1  type (1: a whole document)
//	1  …  the document, JSON (the shape drawn in secrets.go)
//
// Each save is one record holding the whole document, written to a new
// file (temp file, fsync, rename, directory fsync) so that a password
// changed or a mirror deleted does not stay behind in an older record;
// reading takes the last valid record. A save returns only once it is
// durable, and a mirror's source settings are saved before the mirror
// itself.
//
// Upgrade from the state log. The previous version kept the state
// document in mirror-state.log (magic "MBMS", version 1, the same frames,
// the last record the state), and the one before it in mirrors.json. A
// start that finds either file reads its document (the log's when both
// are there: an upgrade from JSON cut before it removed mirrors.json),
// writes it to __mirror_state (the records that differ from what the
// topic holds, tombstones for what it holds beyond: one batch, fsynced)
// and only then removes the files (and fsyncs the directory). A crash
// before the batch is durable leaves the files, read again at the next
// start; a crash after it leaves the topic holding the file's document,
// and the next start, finding the file still there, writes nothing (the
// topic already holds it) and removes it. The file always wins while it
// is there: only this step writes the topic before the file is gone. So
// the upgrade can be cut anywhere and run again. A file holding a torn
// header only (a creation that never finished) holds no state and is
// removed. An earlier version started on an upgraded directory finds no
// file and starts with no mirror; started here again, what it saved
// replaces the topic's state.
//
// The JSON-to-log upgrade of mirror-sources.json is unchanged: when the
// sources log has no file (or only a torn header) and mirror-sources.json
// is there, the JSON is written to the log (temp file, fsync, rename,
// directory fsync) and only then removed.
const (
	mirrorStateFile        = "mirror-state.log"
	mirrorSourcesFile      = "mirror-sources.log"
	legacyMirrorsFile      = "mirrors.json"
	legacySourcesFile      = "mirror-sources.json"
	docLogVersion          = 1
	docRecordType     byte = 1
)

var (
	mirrorStateFormat   = recordlog.Format{Magic: "MBMS", Version: docLogVersion, MaxRecord: 64 << 20}
	mirrorSourcesFormat = recordlog.Format{Magic: "MBMC", Version: docLogVersion, MaxRecord: 16 << 20}
)

// docLog is the sources log.
type docLog struct {
	o recordlog.Options
	w *recordlog.Writer
}

// openDocLog opens dir/name and returns its last document (nil when it
// has none) and, when the log has no file, the legacy JSON file's
// contents (nil when there is none either). notes are what a start
// should log: a torn tail cut, a legacy file removed.
func openDocLog(fs vfs.FS, dir, name, legacy string, format recordlog.Format, private bool) (l *docLog, last, legacyRaw []byte, notes []string, err error) {
	l = &docLog{o: recordlog.Options{FS: fs, Dir: dir, Name: name, Format: format, WriteThrough: true, Private: private}}
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

// removeDurably removes paths and fsyncs their directory.
func removeDurably(fs vfs.FS, dir string, paths ...string) error {
	for _, path := range paths {
		if err := fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("mirror: remove %s: %w", filepath.Base(path), err)
		}
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
	var err error
	if l.w.Err() != nil {
		err = l.replace(frame)
	} else {
		err = l.w.Rewrite(frame, 1)
	}
	if err != nil {
		return fmt.Errorf("mirror: save %s: %w", l.o.Name, err)
	}
	return nil
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

// store is the mirrors' state topic and sources log.
type store struct {
	state   *topicState
	sources *docLog
	knobs   knobs // the test seams (hooks.go): removeLegacyFirst
	// own is the state topic's partition when the store opened it (no
	// StateTopic given), closed with the store.
	own *partitionTopic
}

// openStore reads the state from t (moving there the state file left by
// an earlier version) and opens the sources log (upgrading its JSON
// file), and returns the document with every mirror's source settings
// attached.
func openStore(fs vfs.FS, dir string, t StateTopic) (*store, *doc, []string, error) {
	return openStoreWith(fs, dir, t, knobs{})
}

func openStoreWith(fs vfs.FS, dir string, t StateTopic, k knobs) (*store, *doc, []string, error) {
	s := &store{knobs: k}
	if t == nil {
		own, err := openOwnStateTopic(fs, dir)
		if err != nil {
			return nil, nil, nil, err
		}
		s.own, t = own, own
	}
	var notes []string
	sources, lastSources, legacySources, n, err := openDocLog(fs, dir, mirrorSourcesFile, legacySourcesFile, mirrorSourcesFormat, true)
	if err != nil {
		s.close()
		return nil, nil, nil, err
	}
	s.sources, notes = sources, append(notes, n...)
	if legacySources != nil {
		// The settings first: a mirror in the state always has them.
		if _, err := decodeSourceConfigs(legacySources, legacySourcesFile); err != nil {
			s.close()
			return nil, nil, nil, err
		}
		if err := s.upgradeSources(legacySources); err != nil {
			s.close()
			return nil, nil, nil, err
		}
		lastSources = legacySources
		notes = append(notes, "moved "+legacySourcesFile+" to "+mirrorSourcesFile)
	}
	state, d, err := loadTopicState(t)
	if err != nil {
		s.close()
		return nil, nil, nil, err
	}
	s.state = state
	old, n, err := s.moveStateFiles(fs, dir)
	if err != nil {
		s.close()
		return nil, nil, nil, err
	}
	notes = append(notes, n...)
	if old != nil {
		d = old
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

// upgradeSources writes raw, read from mirror-sources.json, to the
// sources log durably and then removes the JSON file.
func (s *store) upgradeSources(raw []byte) error {
	l := s.sources
	legacy := filepath.Join(l.o.Dir, legacySourcesFile)
	if s.knobs.removeLegacyFirst {
		if err := removeDurably(l.o.FS, l.o.Dir, legacy); err != nil {
			return err
		}
	}
	if err := l.save(raw); err != nil {
		return err
	}
	return removeDurably(l.o.FS, l.o.Dir, legacy)
}

// readStateFiles is the state document an earlier version left: the last
// record of mirror-state.log, else mirrors.json; nil when neither holds
// one. files are those present, to be removed once the topic holds it.
func readStateFiles(fs vfs.FS, dir string) (d *doc, files []string, err error) {
	logPath, jsonPath := filepath.Join(dir, mirrorStateFile), filepath.Join(dir, legacyMirrorsFile)
	var raw []byte
	name := mirrorStateFile
	data, err := vfs.ReadFile(fs, logPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("mirror: read %s: %w", mirrorStateFile, err)
	default:
		files = append(files, logPath)
		if herr := mirrorStateFormat.CheckHeader(data); herr != nil {
			if len(data) >= recordlog.HeaderLen || !bytes.HasPrefix(mirrorStateFormat.AppendHeader(nil), data) {
				return nil, nil, fmt.Errorf("mirror: %s: %w", mirrorStateFile, herr)
			}
			break // a torn header: a creation that never finished
		}
		if _, _, err := mirrorStateFormat.Scan(data, recordlog.ScanOptions{}, func(off int, body []byte) error {
			if body[0] != docRecordType || len(body) < 2 {
				return fmt.Errorf("mirror: %s: record at byte %d: type %d of %d bytes", mirrorStateFile, off, body[0], len(body))
			}
			raw = body[1:]
			return nil
		}); err != nil {
			return nil, nil, err
		}
	}
	if _, err := fs.Stat(jsonPath); err == nil {
		files = append(files, jsonPath)
		if raw == nil && len(files) == 1 {
			if raw, err = vfs.ReadFile(fs, jsonPath); err != nil {
				return nil, nil, fmt.Errorf("mirror: read %s: %w", legacyMirrorsFile, err)
			}
			name = legacyMirrorsFile
		}
	}
	if raw == nil {
		return nil, files, nil
	}
	if d, err = decodeDoc(raw, name); err != nil {
		return nil, nil, err
	}
	return d, files, nil
}

// moveStateFiles writes the state an earlier version left in a file to
// the topic, durably, and then removes the file; it returns that state
// (nil when there was none).
func (s *store) moveStateFiles(fs vfs.FS, dir string) (*doc, []string, error) {
	d, files, err := readStateFiles(fs, dir)
	if err != nil || len(files) == 0 {
		return nil, nil, err
	}
	if s.knobs.removeLegacyFirst {
		if err := removeDurably(fs, dir, files...); err != nil {
			return nil, nil, err
		}
	}
	var notes []string
	if d != nil {
		if err := s.state.save(d); err != nil {
			return nil, nil, err
		}
		notes = append(notes, fmt.Sprintf("moved the mirror state of %s to %s", filepath.Base(files[0]), StateTopicName))
	}
	if err := removeDurably(fs, dir, files...); err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		notes = append(notes, "removed "+filepath.Base(f))
	}
	return d, notes, nil
}

// saveDoc persists d (without its source settings).
func (s *store) saveDoc(d *doc) error { return s.state.save(d) }

// saveSources persists the source settings of the mirrors in d.
func (s *store) saveSources(d *doc) error {
	raw, err := encodeSourceConfigs(d)
	if err != nil {
		return err
	}
	return s.sources.save(raw)
}

// stateUnknown reports whether the last save of the state failed: what
// the topic holds is then unknown (it may hold the batch whose save
// failed).
func (s *store) stateUnknown() bool { return s.state != nil && s.state.unknown }

func (s *store) close() error {
	var err error
	if s.sources != nil {
		err = s.sources.close()
	}
	if s.own != nil {
		if cerr := s.own.p.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
