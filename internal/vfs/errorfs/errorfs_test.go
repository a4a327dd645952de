package errorfs

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs"
)

func write(t *testing.T, fsys vfs.FS, name, data string, sync bool) vfs.File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func content(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	b, err := vfs.ReadFile(fsys, name)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func TestCrashCloneKeepsSynced(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	f := write(t, m, "/d/a", "durable", true)
	f.Write([]byte("+lost"))
	m.SyncDir("/d")
	write(t, m, "/d/b", "unlinked", true) // file synced, directory not
	m.Rename("/d/a", "/d/c")              // rename not made durable

	c := m.CrashClone()
	if got := content(t, c, "/d/a"); got != "durable" {
		t.Fatalf("a = %q", got)
	}
	if _, err := c.Stat("/d/b"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("b survived without a directory sync: %v", err)
	}
	if _, err := c.Stat("/d/c"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("rename survived without a directory sync")
	}
	if got := content(t, m, "/d/c"); got != "durable+lost" {
		t.Fatalf("original changed: %q", got)
	}
}

func TestRules(t *testing.T) {
	e := Wrap(NewMem())
	e.MkdirAll("/d", 0o755)
	e.Inject(Rule{Op: OpWrite, PathContains: ".log", Skip: 1, Count: 1, ShortBytes: 3})
	f := write(t, e, "/d/x.log", "first", false)
	if n, err := f.Write([]byte("second")); n != 3 || !errors.Is(err, ErrInjected) {
		t.Fatalf("short write: %d %v", n, err)
	}
	if _, err := f.Write([]byte("third")); err != nil { // Count exhausted
		t.Fatal(err)
	}
	if got := content(t, e, "/d/x.log"); got != "firstsecthird" {
		t.Fatalf("content %q", got)
	}
	write(t, e, "/d/other", "ok", false) // path does not match
	e.Inject(Rule{Op: OpSync, Err: io.ErrClosedPipe})
	if err := f.Sync(); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("sync: %v", err)
	}
	if len(e.Injected()) != 2 {
		t.Fatalf("injected %v", e.Injected())
	}
}

func TestSpace(t *testing.T) {
	e := Wrap(NewMem())
	e.MkdirAll("/d", 0o755)
	e.SetSpace(10)
	f := write(t, e, "/d/x", "123456", false)
	n, err := f.Write([]byte("abcdef"))
	if n != 4 || !errors.Is(err, ENOSPC) {
		t.Fatalf("write at full disk: %d %v", n, err)
	}
	if _, err := f.Write([]byte("z")); !errors.Is(err, ENOSPC) {
		t.Fatalf("still full: %v", err)
	}
	e.SetSpace(-1)
	if _, err := f.Write([]byte("z")); err != nil {
		t.Fatal(err)
	}
	if got := content(t, e, "/d/x"); got != "123456abcdz" {
		t.Fatalf("content %q", got)
	}
}

func TestMemFSBasics(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, m, "/a/b/f", "hello", false)
	if _, err := m.OpenFile("/a/b/f", os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644); !errors.Is(err, os.ErrExist) {
		t.Fatalf("O_EXCL: %v", err)
	}
	f, _ := m.OpenFile("/a/b/f", os.O_RDWR, 0)
	buf := make([]byte, 3)
	if n, err := f.ReadAt(buf, 3); n != 2 || err != io.EOF {
		t.Fatalf("ReadAt past end: %d %v", n, err)
	}
	f.Truncate(2)
	if st, _ := f.Stat(); st.Size() != 2 {
		t.Fatalf("size %d", st.Size())
	}
	f.Close()
	if _, err := f.ReadAt(buf, 0); err == nil {
		t.Fatal("read after close")
	}
	ents, _ := m.ReadDir("/a")
	if len(ents) != 1 || !ents[0].IsDir() || ents[0].Name() != "b" {
		t.Fatalf("ReadDir %v", ents)
	}
	if err := vfs.WriteFileAtomic(m, "/a", "/a/ck", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := content(t, m.CrashClone(), "/a/ck"); got != "x" {
		t.Fatalf("atomic write not durable: %q", got)
	}
	m.RemoveAll("/a")
	if _, err := m.Stat("/a/b/f"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("RemoveAll")
	}
}

func TestTornCrashClone(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d", 0o755)
	f := write(t, m, "/d/a", "synced", true)
	m.SyncDir("/d")
	f.Write([]byte("-unsynced-tail"))
	seen := map[string]bool{}
	for seed := range uint64(50) {
		got := content(t, m.TornCrashClone(rand.New(rand.NewPCG(seed, 1))), "/d/a")
		if got != "synced-unsynced-tail"[:len(got)] || len(got) < len("synced") {
			t.Fatalf("torn clone kept %q", got)
		}
		seen[got] = true
	}
	if len(seen) < 5 {
		t.Fatalf("torn clone kept only %d different lengths", len(seen))
	}
}

// SetReadOnlyDir refuses what chmod a-w refuses a non-root process:
// creating, removing and renaming entries (EACCES), and nothing else.
func TestReadOnlyDir(t *testing.T) {
	dir := t.TempDir()
	e := Wrap(vfs.Default)
	old := write(t, e, dir+"/old", "x", false)
	e.SetReadOnlyDir(dir, true)
	if _, err := e.OpenFile(dir+"/new", os.O_RDWR|os.O_CREATE, 0o644); !errors.Is(err, syscall.EACCES) {
		t.Errorf("create in a read-only dir: %v", err)
	}
	if f, err := e.OpenFile(dir+"/old", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
		t.Errorf("open an existing file in a read-only dir: %v", err)
	} else {
		f.Close()
	}
	if _, err := old.Write([]byte("y")); err != nil {
		t.Errorf("write to an open file in a read-only dir: %v", err)
	}
	if err := e.Remove(dir + "/old"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("remove in a read-only dir: %v", err)
	}
	if err := e.Remove(dir + "/absent"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("remove of a missing entry in a read-only dir: %v", err)
	}
	if err := e.Rename(dir+"/old", dir+"/renamed"); !errors.Is(err, syscall.EACCES) {
		t.Errorf("rename in a read-only dir: %v", err)
	}
	e.SetReadOnlyDir(dir, false)
	write(t, e, dir+"/new", "z", false).Close()
	old.Close()
}

// TestMemFSDirectoryTree: ReadDir lists a directory's subdirectories from
// the directory itself (not a scan of every directory), and Remove,
// RemoveAll, MkdirAll and CrashClone keep those listings as a file system
// would.
func TestMemFSDirectoryTree(t *testing.T) {
	m := NewMem()
	for _, d := range []string{"/a/b/c", "/a/d", "/x"} {
		if err := m.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, m, "/a/f", "f", true).Close()
	if err := m.SyncDir("/a"); err != nil {
		t.Fatal(err)
	}
	names := func(fsys *MemFS, dir string) string {
		t.Helper()
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			n := e.Name()
			if e.IsDir() {
				n += "/"
			}
			out = append(out, n)
		}
		return strings.Join(out, " ")
	}
	if got := names(m, "/"); got != "a/ x/" {
		t.Fatalf("ReadDir / = %q", got)
	}
	if got := names(m, "/a"); got != "b/ d/ f" {
		t.Fatalf("ReadDir /a = %q", got)
	}
	if err := m.Remove("/a/b"); err == nil {
		t.Fatal("Remove of a directory holding a directory succeeded")
	}
	if err := m.Remove("/a/d"); err != nil {
		t.Fatal(err)
	}
	if got := names(m.CrashClone(), "/a"); got != "b/ f" {
		t.Fatalf("crash clone's ReadDir /a = %q", got)
	}
	if err := m.RemoveAll("/a/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Stat("/a/b/c"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("RemoveAll left /a/b/c: %v", err)
	}
	if got := names(m, "/a"); got != "f" {
		t.Fatalf("ReadDir /a after RemoveAll = %q", got)
	}
	if err := m.MkdirAll("/a/f/g", 0o755); err == nil {
		t.Fatal("MkdirAll under a file succeeded")
	}
	if err := m.MkdirAll("/a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if got := names(m, "/a/b"); got != "c/" {
		t.Fatalf("ReadDir /a/b = %q", got)
	}
}
