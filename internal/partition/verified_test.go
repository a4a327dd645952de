package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/minibroker/minibroker/internal/batch"
	mlog "github.com/minibroker/minibroker/internal/log"
)

// TestAppendPathsAreVerified: every append path of the partition (mirror,
// barrier, leader produce, transaction marker) checked or built its CRCs,
// so the log counts the bytes as verified and reads do not check them
// again in this process: damage made on disk afterwards is served (the
// accepted trade-off, as Kafka, whose clients check CRCs). After a clean
// restart nothing is verified and the same damage is reported.
func TestAppendPathsAreVerified(t *testing.T) {
	dir := t.TempDir()
	p := open(t, dir)
	if _, err := p.AppendAsMirror(at(encode(5, 0, 0, 3, false), 0, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteBarrier("cluster-A"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(encode(-1, -1, -1, 2, false)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(encode(7, 0, 0, 1, true)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteMarker(7, 0, true, 0); err != nil {
		t.Fatal(err)
	}
	end := p.Offsets().LogEnd
	// The file, not a read: a read would check and verify the batches.
	seg := filepath.Join(p.log.Dir(), "00000000000000000000.log")
	orig, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	// Flip the last byte (inside the CRC's coverage) of every batch.
	var starts []int64
	var offsets []int64
	for pos := 0; pos < len(orig); {
		size := int(binary.BigEndian.Uint32(orig[pos+batch.LengthOffset:])) + batch.LogOverhead
		starts = append(starts, int64(pos))
		offsets = append(offsets, int64(binary.BigEndian.Uint64(orig[pos:])))
		flipByte(t, seg, int64(pos+size-1))
		pos += size
	}
	if len(starts) != 5 {
		t.Fatalf("%d batches, want 5", len(starts))
	}
	got, err := p.log.Read(0, 1<<20, true)
	if err != nil || len(got) != len(orig) || bytes.Equal(got, orig) {
		t.Fatalf("verified batches: %d bytes, %v; want the damaged bytes served", len(got), err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	p = open(t, dir)
	defer p.Close()
	if p.Offsets().LogEnd != end {
		t.Fatalf("LEO %d after a clean restart, want %d", p.Offsets().LogEnd, end)
	}
	for i, off := range offsets {
		_, err := p.log.Read(off, 1, true)
		var ce *mlog.CorruptionError
		if !errors.As(err, &ce) || ce.Offset != starts[i] || !errors.Is(err, mlog.ErrStorage) {
			t.Fatalf("batch %d at %d after restart: %v, want CorruptionError at %d", i, off, err, starts[i])
		}
	}
}

func flipByte(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x01
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}
