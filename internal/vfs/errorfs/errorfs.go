// Package errorfs injects faults into a vfs.FS for tests, after pebble's
// vfs/errorfs: errors chosen by operation and path, short writes, a full
// disk (ENOSPC once a byte budget is spent), and, with MemFS, a crash
// clone that keeps only synced bytes.
package errorfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/minibroker/minibroker/internal/vfs"
)

// Op names a file-system operation. The numbers are stable (they may
// appear in test tables and logs).
type Op int

const (
	OpAny      Op = 0
	OpOpen     Op = 1
	OpRead     Op = 2 // Read and ReadAt
	OpWrite    Op = 3
	OpSync     Op = 4
	OpTruncate Op = 5
	OpClose    Op = 6
	OpStat     Op = 7 // FS.Stat and File.Stat
	OpRemove   Op = 8 // Remove and RemoveAll
	OpRename   Op = 9
	OpMkdir    Op = 10
	OpReadDir  Op = 11
	OpSyncDir  Op = 12
)

func (o Op) String() string {
	names := [...]string{"any", "open", "read", "write", "sync", "truncate", "close", "stat",
		"remove", "rename", "mkdir", "readdir", "syncdir"}
	if o >= 0 && int(o) < len(names) {
		return names[o]
	}
	return "op?"
}

// ErrInjected is the default injected error.
var ErrInjected = errors.New("errorfs: injected error")

// ENOSPC is the error a full disk returns.
var ENOSPC error = syscall.ENOSPC

// Rule injects Err into operations matching Op (OpAny: all) on paths
// containing PathContains (empty: all). It lets the first Skip matches
// through and then fires Count times (0: forever). For writes, ShortBytes
// >= 0 makes the failing write store that many leading bytes before it
// returns the error (a short or torn write); -1 stores nothing.
type Rule struct {
	Op           Op
	PathContains string
	Skip         int
	Count        int
	ShortBytes   int
	Err          error // nil → ErrInjected
}

type rule struct {
	Rule
	seen, fired int
}

// FS wraps a vfs.FS and injects faults into it.
type FS struct {
	inner vfs.FS

	mu    sync.Mutex
	rules []*rule
	space int64 // bytes writable before ENOSPC; < 0 unlimited
	log   []string
	// readOnly are directories without write permission (SetReadOnlyDir).
	readOnly map[string]bool
}

// Wrap returns an FS that passes everything to inner until rules are added.
func Wrap(inner vfs.FS) *FS { return &FS{inner: inner, space: -1} }

// Inject adds a rule.
func (e *FS) Inject(r Rule) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.Err == nil {
		r.Err = ErrInjected
	}
	e.rules = append(e.rules, &rule{Rule: r})
}

// Clear removes every rule and the space limit.
func (e *FS) Clear() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rules, e.space = nil, -1
}

// SetSpace makes writes fail with ENOSPC once n more bytes have been
// written (the write that crosses the limit stores what still fits).
// n < 0 removes the limit.
func (e *FS) SetSpace(n int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.space = n
}

// SetReadOnlyDir makes dir act as a directory without write permission
// does for a process that is not root (chmod a-w; root passes the check,
// so a test run as root cannot use chmod): creating, removing or renaming
// an entry of dir fails with EACCES, while files already open, and
// existing files opened without creating, stay writable; removing an
// entry that does not exist still fails with ENOENT. on=false lifts it.
func (e *FS) SetReadOnlyDir(dir string, on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.readOnly == nil {
		e.readOnly = map[string]bool{}
	}
	e.readOnly[filepath.Clean(dir)] = on
}

// denied is the EACCES a read-only parent directory gives op on path.
func (e *FS) denied(op Op, path string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.readOnly[filepath.Dir(filepath.Clean(path))] {
		return nil
	}
	e.log = append(e.log, op.String()+" "+path+": read-only directory")
	return &os.PathError{Op: op.String(), Path: path, Err: syscall.EACCES}
}

// createDenied: an open that would create name in a read-only directory.
func (e *FS) createDenied(name string, flag int) error {
	if flag&os.O_CREATE == 0 {
		return nil
	}
	if _, err := e.inner.Stat(name); err == nil {
		return nil
	}
	return e.denied(OpOpen, name)
}

// removeDenied: a remove of an existing entry of a read-only directory.
func (e *FS) removeDenied(name string) error {
	if _, err := e.inner.Stat(name); err != nil {
		return nil // the inner FS answers ENOENT
	}
	return e.denied(OpRemove, name)
}

// Injected lists the faults fired so far ("op path: err").
func (e *FS) Injected() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.log...)
}

// check returns the rule firing for op on path, if any.
func (e *FS) check(op Op, path string) *rule {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.rules {
		if (r.Op != OpAny && r.Op != op) || !strings.Contains(path, r.PathContains) {
			continue
		}
		r.seen++
		if r.seen <= r.Skip || (r.Count > 0 && r.fired >= r.Count) {
			continue
		}
		r.fired++
		e.log = append(e.log, op.String()+" "+path+": "+r.Err.Error())
		return r
	}
	return nil
}

func (e *FS) fail(op Op, path string) error {
	if r := e.check(op, path); r != nil {
		return &os.PathError{Op: op.String(), Path: path, Err: r.Err}
	}
	return nil
}

func (e *FS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if err := e.fail(OpOpen, name); err != nil {
		return nil, err
	}
	if err := e.createDenied(name, flag); err != nil {
		return nil, err
	}
	f, err := e.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &file{fs: e, inner: f, name: name}, nil
}

func (e *FS) Remove(name string) error {
	if err := e.fail(OpRemove, name); err != nil {
		return err
	}
	if err := e.removeDenied(name); err != nil {
		return err
	}
	return e.inner.Remove(name)
}

func (e *FS) RemoveAll(path string) error {
	if err := e.fail(OpRemove, path); err != nil {
		return err
	}
	if err := e.removeDenied(path); err != nil {
		return err
	}
	return e.inner.RemoveAll(path)
}

func (e *FS) Rename(oldpath, newpath string) error {
	if err := e.fail(OpRename, oldpath); err != nil {
		return err
	}
	if err := e.denied(OpRename, oldpath); err != nil {
		return err
	}
	if err := e.denied(OpRename, newpath); err != nil {
		return err
	}
	return e.inner.Rename(oldpath, newpath)
}

func (e *FS) MkdirAll(path string, perm os.FileMode) error {
	if err := e.fail(OpMkdir, path); err != nil {
		return err
	}
	if _, err := e.inner.Stat(path); err != nil {
		if err := e.denied(OpMkdir, path); err != nil {
			return err
		}
	}
	return e.inner.MkdirAll(path, perm)
}

func (e *FS) ReadDir(dir string) ([]os.DirEntry, error) {
	if err := e.fail(OpReadDir, dir); err != nil {
		return nil, err
	}
	return e.inner.ReadDir(dir)
}

func (e *FS) Stat(name string) (os.FileInfo, error) {
	if err := e.fail(OpStat, name); err != nil {
		return nil, err
	}
	return e.inner.Stat(name)
}

func (e *FS) SyncDir(dir string) error {
	if err := e.fail(OpSyncDir, dir); err != nil {
		return err
	}
	return e.inner.SyncDir(dir)
}

type file struct {
	fs    *FS
	inner vfs.File
	name  string
}

func (f *file) Read(p []byte) (int, error) {
	if err := f.fs.fail(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.inner.Read(p)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.fail(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.inner.ReadAt(p, off)
}

// Write applies a matching rule (storing ShortBytes first) and the space
// budget.
func (f *file) Write(p []byte) (int, error) {
	if r := f.fs.check(OpWrite, f.name); r != nil {
		n := 0
		if r.ShortBytes > 0 {
			n, _ = f.inner.Write(p[:min(r.ShortBytes, len(p))])
		}
		return n, &os.PathError{Op: "write", Path: f.name, Err: r.Err}
	}
	f.fs.mu.Lock()
	allowed := len(p)
	full := false
	if f.fs.space >= 0 {
		if int64(allowed) > f.fs.space {
			allowed, full = int(f.fs.space), true
		}
		f.fs.space -= int64(allowed)
		if full {
			f.fs.log = append(f.fs.log, "write "+f.name+": "+ENOSPC.Error())
		}
	}
	f.fs.mu.Unlock()
	n := 0
	var err error
	if allowed > 0 {
		n, err = f.inner.Write(p[:allowed])
	}
	if err == nil && full {
		err = &os.PathError{Op: "write", Path: f.name, Err: ENOSPC}
	}
	return n, err
}

func (f *file) Close() error {
	if err := f.fs.fail(OpClose, f.name); err != nil {
		f.inner.Close()
		return err
	}
	return f.inner.Close()
}

func (f *file) Sync() error {
	if err := f.fs.fail(OpSync, f.name); err != nil {
		return err
	}
	return f.inner.Sync()
}

func (f *file) Truncate(size int64) error {
	if err := f.fs.fail(OpTruncate, f.name); err != nil {
		return err
	}
	return f.inner.Truncate(size)
}

func (f *file) Stat() (os.FileInfo, error) {
	if err := f.fs.fail(OpStat, f.name); err != nil {
		return nil, err
	}
	return f.inner.Stat()
}

func (f *file) Name() string { return f.name }
