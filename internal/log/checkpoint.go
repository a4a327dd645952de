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

func decodeOffsetFile(data []byte) (int64, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 2 || lines[0] != strconv.Itoa(checkpointVersion) {
		return 0, errCheckpoint
	}
	off, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || off < 0 {
		return 0, errCheckpoint
	}
	return off, nil
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
