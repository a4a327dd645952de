package log

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Small per-partition text files; see doc.go for their layout.
//
// Kafka keeps the clean-shutdown marker and log-start-offset checkpoint per
// data directory. minibroker keeps them per partition directory so that a
// Log is self-contained: a partition can be opened, closed or deleted on
// its own, and the broker needs no data-dir bookkeeping for them.
const (
	cleanShutdownName  = "clean-shutdown"
	logStartOffsetName = "log-start-offset"
	recoveryPointName  = "recovery-point"
	checkpointVersion  = 0
)

var errCheckpoint = errors.New("malformed checkpoint file")

// encodeOffsetFile renders "version\noffset\n".
func encodeOffsetFile(offset int64) []byte {
	return fmt.Appendf(nil, "%d\n%d\n", checkpointVersion, offset)
}

// Checkpoint is a text checkpoint file parsed for its layout only:
//
//	single offset   version, then one offset (log-start-offset,
//	                recovery-point, clean-shutdown, cleaner-offset-checkpoint)
//	entries         version, count, then one line of fields per entry:
//	                "epoch startOffset" (leader-epoch-checkpoint) or
//	                "topic partition offset" (Kafka's per data directory
//	                recovery-point-offset-checkpoint and the like)
//
// ParseCheckpoint is the one parser of these files. The log's readers
// (decodeOffsetFile, decodeEpochCheckpoint) add its own rules on top
// (version 0, no negative offset, epochs and offsets increasing); the
// tools in internal/logtool show what ParseCheckpoint gives, so they also
// show Kafka's files and files the log would refuse.
type Checkpoint struct {
	Version int
	// Offset is set for the single-offset layout.
	Offset *int64
	// Entries holds the lines after the count, split into fields.
	Entries [][]string
}

// ParseCheckpoint parses data. epochs selects the two-field entries of
// leader-epoch-checkpoint; otherwise a file of two lines is the
// single-offset layout and a longer one holds three-field entries. It
// checks the count line against the entries and that the numeric fields
// are numbers; the errors say which line is wrong.
func ParseCheckpoint(data []byte, epochs bool) (*Checkpoint, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("%d lines, want at least 2", len(lines))
	}
	v, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		return nil, fmt.Errorf("version line %q", lines[0])
	}
	c := &Checkpoint{Version: v}
	if !epochs && len(lines) == 2 {
		off, err := strconv.ParseInt(strings.TrimSpace(lines[1]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("offset line %q", lines[1])
		}
		c.Offset = &off
		return c, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("count line %q for %d entries", lines[1], len(lines)-2)
	}
	width := 3
	if epochs {
		width = 2
	}
	c.Entries = make([][]string, 0, n)
	for i, line := range lines[2:] {
		f := strings.Fields(line)
		if len(f) != width {
			return nil, fmt.Errorf("entry %d: %q has %d fields, want %d", i, line, len(f), width)
		}
		for _, num := range f[width-2:] {
			if _, err := strconv.ParseInt(num, 10, 64); err != nil {
				return nil, fmt.Errorf("entry %d: %q is not a number", i, num)
			}
		}
		c.Entries = append(c.Entries, f)
	}
	return c, nil
}

// decodeOffsetFile reads the single-offset layout under the log's rules:
// version 0 and an offset that is not negative.
func decodeOffsetFile(data []byte) (int64, error) {
	c, err := ParseCheckpoint(data, false)
	if err != nil || c.Version != checkpointVersion || c.Offset == nil || *c.Offset < 0 {
		return 0, errCheckpoint
	}
	return *c.Offset, nil
}

// readOffsetFile returns the offset in dir/name, ok=false if missing or
// malformed.
func readOffsetFile(fsys vfs.FS, dir, name string) (int64, bool, error) {
	path := filepath.Join(dir, name)
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, storageErr("read", path, err)
	}
	off, err := decodeOffsetFile(data)
	if err != nil {
		return 0, false, nil
	}
	return off, true, nil
}

func writeOffsetFile(fsys vfs.FS, dir, name string, off int64) error {
	path := filepath.Join(dir, name)
	if err := vfs.WriteFileAtomic(fsys, dir, path, encodeOffsetFile(off)); err != nil {
		return storageErr("write", path, err)
	}
	return nil
}

// readCleanShutdown reports whether the marker exists and the log end
// offset it recorded.
func readCleanShutdown(fsys vfs.FS, dir string) (int64, bool, error) {
	return readOffsetFile(fsys, dir, cleanShutdownName)
}

// writeCleanShutdown writes the marker without an fsync. Close fsynced
// the data before, so the marker cannot outlive a crash that the data did
// not, and losing it only makes the next open recover. Kafka's
// .kafka_cleanshutdown can be lost the same way (Kafka 4 fsyncs the file
// but not its directory), and Kafka writes
// one per data directory where minibroker writes one per partition: the
// two fsyncs per partition were a third of a 1,000-partition shutdown's.
func writeCleanShutdown(fsys vfs.FS, dir string, leo int64) error {
	return writeOffsetHint(fsys, dir, cleanShutdownName, leo)
}

// writeOffsetHint is writeOffsetFile without the fsyncs (vfs.ReplaceFile).
func writeOffsetHint(fsys vfs.FS, dir, name string, off int64) error {
	path := filepath.Join(dir, name)
	if err := vfs.ReplaceFile(fsys, path, encodeOffsetFile(off)); err != nil {
		return storageErr("write", path, err)
	}
	return nil
}

func removeCleanShutdown(fsys vfs.FS, dir string) error {
	path := filepath.Join(dir, cleanShutdownName)
	if err := fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return storageErr("remove", path, err)
	}
	return nil
}

func readLogStartOffset(fsys vfs.FS, dir string) (int64, error) {
	off, _, err := readOffsetFile(fsys, dir, logStartOffsetName)
	return off, err
}

// writeOffsetSyncedNoDir is writeOffsetFile without the directory fsync
// (vfs.ReplaceFileSynced): after a power loss the old value or the new.
func writeOffsetSyncedNoDir(fsys vfs.FS, dir, name string, off int64) error {
	path := filepath.Join(dir, name)
	if err := vfs.ReplaceFileSynced(fsys, path, encodeOffsetFile(off)); err != nil {
		return storageErr("write", path, err)
	}
	return nil
}
