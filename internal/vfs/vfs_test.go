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
