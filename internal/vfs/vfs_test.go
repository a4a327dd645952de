package vfs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomicReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	for _, content := range []string{"first version", "second"} {
		if err := WriteFileAtomic(Default, dir, name, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(Default, name)
		if err != nil || string(got) != content {
			t.Fatalf("read %q %v, want %q", got, err, content)
		}
	}
	if _, err := os.Stat(name + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temp file left behind: %v", err)
	}
}

func TestWriteFileAtomicFailsWithoutDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	if err := WriteFileAtomic(Default, dir, filepath.Join(dir, "f"), []byte("x")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// A private file is 0600 even when a stale temp file with a wider mode
// was left by a crash (reusing it, as O_TRUNC would, keeps its mode).
func TestWriteFileAtomicPrivate(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "secrets.json")
	if err := os.WriteFile(name+".tmp", []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomicPrivate(Default, dir, name, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v, want 0600", fi.Mode(), err)
	}
	if raw, _ := os.ReadFile(name); string(raw) != "new" {
		t.Fatalf("contents %q", raw)
	}
}
