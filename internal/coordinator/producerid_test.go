package coordinator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs"
)

func TestProducerIDsNeverRepeat(t *testing.T) {
	dir := t.TempDir()
	seen := map[int64]bool{}
	for restart := 0; restart < 20; restart++ {
		p, err := OpenProducerIDs(vfs.Default, dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < restart*97%1500; i++ {
			id, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			if seen[id] {
				t.Fatalf("restart %d: id %d handed out twice", restart, id)
			}
			seen[id] = true
		}
	}
	p, _ := OpenProducerIDs(vfs.Default, t.TempDir())
	if id, _ := p.Next(); id != 0 {
		t.Fatalf("a fresh cluster starts at 0, got %d", id)
	}
}

func TestProducerIDsCorruptFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	p, _ := OpenProducerIDs(vfs.Default, dir)
	p.Next()
	name := filepath.Join(dir, producerIDFile)
	b, _ := os.ReadFile(name)
	b[8] ^= 1
	os.WriteFile(name, b, 0o644)
	if _, err := OpenProducerIDs(vfs.Default, dir); err == nil {
		t.Fatal("corrupt reservation accepted")
	}
}

func FuzzDecodeProducerIDs(f *testing.F) {
	f.Add(encodeProducerIDs(1000))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := decodeProducerIDs(b); err == nil && n < 0 {
			t.Fatal("negative id accepted")
		}
	})
}
