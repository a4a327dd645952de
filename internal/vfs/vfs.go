// Package vfs is the small file-system seam that storage code writes
// through, so tests can inject faults (failed writes and fsyncs, short
// writes, a full disk, a crash that keeps only synced bytes) without
// touching the real disk's behaviour in production.
package vfs

import (
	"errors"
	"io"
	"os"
)

// File is the subset of *os.File that the log, the producer-state
// snapshots and the checkpoints use.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Name() string
}

// FS opens and manages files.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(path string) error
	Rename(oldpath, newpath string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(dir string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir fsyncs a directory so that creations, renames and removals
	// in it are durable.
	SyncDir(dir string) error
}

// Default is the real operating-system file system.
var Default FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (osFS) Rename(o, n string) error                     { return os.Rename(o, n) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(dir string) ([]os.DirEntry, error)    { return os.ReadDir(dir) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }
func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReplaceFile writes data to name through a temp file renamed over it,
// with no fsync: a reader, or a start after a crash, finds the old
// contents, the new ones, or (after a power loss) possibly an empty file,
// never a mix. It is for hints whose loss costs only time, written after
// the data they describe was made durable.
func ReplaceFile(fs FS, name string, data []byte) error {
	tmp, err := writeTemp(fs, name, data, false)
	if err != nil {
		return err
	}
	return fs.Rename(tmp, name)
}

// ReplaceFileSynced is ReplaceFile with the temp file fsynced before the
// rename, but not the directory after it: a start after a power loss
// finds the old contents or the new ones, never an empty file, whichever
// the directory kept. For a file whose every durable version is valid,
// written where the directory fsync would be the larger cost.
func ReplaceFileSynced(fs FS, name string, data []byte) error {
	tmp, err := writeTemp(fs, name, data, true)
	if err != nil {
		return err
	}
	return fs.Rename(tmp, name)
}

// WriteFileAtomic writes data to name through a temp file that is fsynced,
// renamed over name, and made durable by fsyncing the directory.
func WriteFileAtomic(fs FS, dir, name string, data []byte) error {
	tmp, err := writeTemp(fs, name, data, true)
	if err != nil {
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}

// WriteFileAtomicPrivate is WriteFileAtomic for a file only its owner may
// read or write (mode 0600): secrets. The temp file is created afresh with
// that mode, so a stale temp file with a wider one is never reused.
func WriteFileAtomicPrivate(fs FS, dir, name string, data []byte) error {
	if err := fs.Remove(name + ".tmp"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	tmp, err := writeTempMode(fs, name, data, true, os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}

// writeTemp writes data to name's temp file (name + ".tmp"), fsyncing it
// if sync, and returns the temp file's name.
func writeTemp(fs FS, name string, data []byte, sync bool) (string, error) {
	return writeTempMode(fs, name, data, sync, os.O_TRUNC, 0o644)
}

func writeTempMode(fs FS, name string, data []byte, sync bool, flag int, perm os.FileMode) (string, error) {
	tmp := name + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|flag, perm)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return "", err
		}
	}
	return tmp, f.Close()
}

// ReadFile reads a whole file through fs.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
