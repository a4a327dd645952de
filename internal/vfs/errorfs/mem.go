package errorfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/minibroker/minibroker/internal/vfs"
)

// MemFS is an in-memory vfs.FS that remembers what is durable, so that
// CrashClone can model a power loss: a file keeps only the bytes it had at
// its last Sync, and a directory keeps only the entries (creations,
// renames, removals) it had at its last SyncDir. Directories themselves are
// durable as soon as they are created. Safe for concurrent use.
type MemFS struct {
	mu   sync.Mutex
	dirs map[string]*memDir
}

type memDir struct {
	entries map[string]*inode // current
	durable map[string]*inode // as of the last SyncDir
	subdirs map[string]bool   // the names of its subdirectories (durable at once)
}

type inode struct {
	data   []byte // current contents (page cache)
	synced []byte // contents as of the last Sync
	mtime  time.Time
}

// NewMem returns an empty MemFS with a root directory "/".
func NewMem() *MemFS {
	m := &MemFS{dirs: map[string]*memDir{}}
	m.dirs["/"] = newMemDir()
	return m
}

func newMemDir() *memDir {
	return &memDir{entries: map[string]*inode{}, durable: map[string]*inode{}, subdirs: map[string]bool{}}
}

func clean(p string) string { return filepath.Clean("/" + p) }

// CrashClone returns a new MemFS holding what would survive a power loss
// now: synced bytes of durably linked files. The receiver is unchanged.
func (m *MemFS) CrashClone() *MemFS { return m.crashClone(nil) }

// TornCrashClone is CrashClone where, as after a power loss in the middle
// of writeback, a file that only grew since its last sync also keeps a
// random prefix of its unsynced tail (a torn write).
func (m *MemFS) TornCrashClone(rng *rand.Rand) *MemFS { return m.crashClone(rng) }

func (m *MemFS) crashClone(rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &MemFS{dirs: map[string]*memDir{}}
	paths := make([]string, 0, len(m.dirs))
	for p := range m.dirs {
		paths = append(paths, p)
	}
	sort.Strings(paths) // deterministic use of rng
	for _, p := range paths {
		d := m.dirs[p]
		names := make([]string, 0, len(d.durable))
		for name := range d.durable {
			names = append(names, name)
		}
		sort.Strings(names)
		nd := newMemDir()
		for _, name := range names {
			ino := d.durable[name]
			kept := slices.Clone(ino.synced)
			if rng != nil && len(ino.data) > len(ino.synced) && bytes.HasPrefix(ino.data, ino.synced) {
				kept = slices.Clone(ino.data[:len(ino.synced)+rng.IntN(len(ino.data)-len(ino.synced)+1)])
			}
			n := &inode{data: kept, synced: slices.Clone(kept), mtime: ino.mtime}
			nd.entries[name], nd.durable[name] = n, n
		}
		for name := range d.subdirs {
			nd.subdirs[name] = true
		}
		c.dirs[p] = nd
	}
	return c
}

// lookup returns the directory and base name of p, or an error if the
// directory does not exist.
func (m *MemFS) lookup(p string) (*memDir, string, error) {
	p = clean(p)
	d, ok := m.dirs[filepath.Dir(p)]
	if !ok {
		return nil, "", fs.ErrNotExist
	}
	return d, filepath.Base(p), nil
}

func pathErr(op, p string, err error) error { return &fs.PathError{Op: op, Path: p, Err: err} }

func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, isDir := m.dirs[clean(name)]; isDir {
		return nil, pathErr("open", name, errors.New("is a directory"))
	}
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	ino, ok := d.entries[base]
	switch {
	case ok && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	case !ok && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case !ok:
		ino = &inode{mtime: time.Now()}
		d.entries[base] = ino
	}
	if flag&os.O_TRUNC != 0 {
		ino.data = ino.data[:0:0]
	}
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	return &memFile{fs: m, name: name, ino: ino, appendOnly: flag&os.O_APPEND != 0,
		readable: acc != os.O_WRONLY, writable: acc != os.O_RDONLY}, nil
}

func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	if d, ok := m.dirs[p]; ok {
		if len(d.entries) > 0 || len(d.subdirs) > 0 {
			return pathErr("remove", name, errors.New("directory not empty"))
		}
		delete(m.dirs, p)
		m.unlinkDir(p)
		return nil
	}
	d, base, err := m.lookup(name)
	if err != nil {
		return pathErr("remove", name, err)
	}
	if _, ok := d.entries[base]; !ok {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	delete(d.entries, base)
	return nil
}

// unlinkDir removes the directory p from its parent's subdirectories.
func (m *MemFS) unlinkDir(p string) {
	if parent, ok := m.dirs[filepath.Dir(p)]; ok && p != "/" {
		delete(parent.subdirs, filepath.Base(p))
	}
}

// removeTree forgets the directory p and every directory below it.
func (m *MemFS) removeTree(p string) {
	d, ok := m.dirs[p]
	if !ok {
		return
	}
	for name := range d.subdirs {
		m.removeTree(filepath.Join(p, name))
	}
	delete(m.dirs, p)
}

// RemoveAll removes path and everything below it, durably at once.
func (m *MemFS) RemoveAll(path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(path)
	if _, ok := m.dirs[p]; ok {
		m.removeTree(p)
		m.unlinkDir(p)
		if p == "/" {
			m.dirs[p] = newMemDir() // the root stays
		}
	}
	if d, base, err := m.lookup(p); err == nil {
		delete(d.entries, base)
		delete(d.durable, base)
	}
	return nil
}

func (m *MemFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	od, ob, err := m.lookup(oldpath)
	if err != nil {
		return pathErr("rename", oldpath, err)
	}
	ino, ok := od.entries[ob]
	if !ok {
		return pathErr("rename", oldpath, fs.ErrNotExist)
	}
	nd, nb, err := m.lookup(newpath)
	if err != nil {
		return pathErr("rename", newpath, err)
	}
	delete(od.entries, ob)
	nd.entries[nb] = ino
	return nil
}

func (m *MemFS) MkdirAll(path string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(path)
	for q := p; q != "/"; q = filepath.Dir(q) {
		if d, base, err := m.lookup(q); err == nil {
			if _, isFile := d.entries[base]; isFile {
				return pathErr("mkdir", q, errors.New("not a directory"))
			}
		}
	}
	// Create the missing directories from p up, each linked into its
	// parent; the first that exists has its parents.
	child := ""
	for q := p; ; q = filepath.Dir(q) {
		d, existed := m.dirs[q]
		if !existed {
			d = newMemDir()
			m.dirs[q] = d
		}
		if child != "" {
			d.subdirs[child] = true
		}
		if existed || q == "/" {
			return nil
		}
		child = filepath.Base(q)
	}
}

func (m *MemFS) ReadDir(dir string) ([]os.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(dir)
	d, ok := m.dirs[p]
	if !ok {
		return nil, pathErr("readdir", dir, fs.ErrNotExist)
	}
	var out []os.DirEntry
	for name, ino := range d.entries {
		out = append(out, fs.FileInfoToDirEntry(fileInfo{name: name, size: int64(len(ino.data)), mtime: ino.mtime}))
	}
	for name := range d.subdirs {
		out = append(out, fs.FileInfoToDirEntry(fileInfo{name: name, dir: true}))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	if _, ok := m.dirs[p]; ok {
		return fileInfo{name: filepath.Base(p), dir: true}, nil
	}
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	ino, ok := d.entries[base]
	if !ok {
		return nil, pathErr("stat", name, fs.ErrNotExist)
	}
	return fileInfo{name: base, size: int64(len(ino.data)), mtime: ino.mtime}, nil
}

func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.dirs[clean(dir)]
	if !ok {
		return pathErr("syncdir", dir, fs.ErrNotExist)
	}
	d.durable = make(map[string]*inode, len(d.entries))
	for k, v := range d.entries {
		d.durable[k] = v
	}
	return nil
}

type fileInfo struct {
	name  string
	size  int64
	mtime time.Time
	dir   bool
}

func (fi fileInfo) Name() string { return fi.name }
func (fi fileInfo) Size() int64  { return fi.size }
func (fi fileInfo) Mode() os.FileMode {
	if fi.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
func (fi fileInfo) ModTime() time.Time { return fi.mtime }
func (fi fileInfo) IsDir() bool        { return fi.dir }
func (fi fileInfo) Sys() any           { return nil }

type memFile struct {
	fs                 *MemFS
	name               string
	ino                *inode
	pos                int64
	appendOnly         bool
	readable, writable bool
	closed             bool
}

var errClosed = os.ErrClosed

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed || !f.readable {
		return 0, pathErr("read", f.name, errClosed)
	}
	if f.pos >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[f.pos:])
	f.pos += int64(n)
	return n, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed || !f.readable {
		return 0, pathErr("read", f.name, errClosed)
	}
	if off < 0 {
		return 0, pathErr("read", f.name, errors.New("negative offset"))
	}
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed || !f.writable {
		return 0, pathErr("write", f.name, errClosed)
	}
	if f.appendOnly {
		f.pos = int64(len(f.ino.data))
	}
	if end := f.pos + int64(len(p)); end > int64(len(f.ino.data)) {
		f.ino.data = append(f.ino.data, make([]byte, end-int64(len(f.ino.data)))...)
	}
	copy(f.ino.data[f.pos:], p)
	f.pos += int64(len(p))
	f.ino.mtime = time.Now()
	return len(p), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, errClosed)
	}
	f.closed = true
	return nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("sync", f.name, errClosed)
	}
	f.ino.synced = slices.Clone(f.ino.data)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed || !f.writable {
		return pathErr("truncate", f.name, errClosed)
	}
	if size < 0 {
		return pathErr("truncate", f.name, errors.New("negative size"))
	}
	if size <= int64(len(f.ino.data)) {
		f.ino.data = f.ino.data[:size:size]
	} else {
		f.ino.data = append(f.ino.data, make([]byte, size-int64(len(f.ino.data)))...)
	}
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return fileInfo{name: filepath.Base(f.name), size: int64(len(f.ino.data)), mtime: f.ino.mtime}, nil
}

func (f *memFile) Name() string { return f.name }
