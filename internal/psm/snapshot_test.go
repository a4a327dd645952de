package psm

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/minibroker/minibroker/internal/vfs"
)

// populated is a manager with an idle producer, a full dedup window, an
// open transaction and a marker-only entry.
func populated(t testing.TB) *Manager {
	m := NewManager(Config{}, nil, nil)
	for i := int32(0); i < 7; i++ {
		apply(t, m, OriginClient, dataBatch(5, 2, i*3, 3, int64(i)*3, false))
	}
	apply(t, m, OriginClient, dataBatch(9, 0, 0, 2, 21, true))
	apply(t, m, OriginCoordinator, marker(false, 12, 4, 7, 23))
	apply(t, m, OriginClient, dataBatch(1<<40, 0, 100, 1, 24, false))
	return m
}

func TestSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := populated(t)
	if err := m.WriteSnapshot(vfs.Default, dir, m.LastOffset()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000025.snapshot")); err != nil {
		t.Fatal(err)
	}
	got, off, err := LoadLatestSnapshot(vfs.Default, dir, 1000, Config{}, nil, nil)
	if err != nil || off != 25 {
		t.Fatalf("load: %d %v", off, err)
	}
	if !reflect.DeepEqual(got.Entries(), m.Entries()) {
		t.Fatalf("entries differ:\n got %+v\nwant %+v", got.Entries(), m.Entries())
	}
	if got.LastOffset() != 25 {
		t.Fatalf("LastOffset %d", got.LastOffset())
	}
	if fuo, ok := got.FirstUnstableOffset(); !ok || fuo != 21 {
		t.Fatalf("FUO %d %v", fuo, ok)
	}
	// The dedup window survives: a retry of an old batch is a duplicate.
	var dup *DuplicateError
	if _, err := got.Prepare(OriginClient, []PreparedBatch{dataBatch(5, 2, 6, 3, 25, false)}, testTS); !errors.As(err, &dup) || dup.FirstOffset != 6 {
		t.Fatalf("dedup after reload: %v", err)
	}
}

func TestSnapshotSelectionAndDeletion(t *testing.T) {
	dir := t.TempDir()
	m := populated(t)
	for _, off := range []int64{10, 20, 30} {
		if err := m.WriteSnapshot(vfs.Default, dir, off); err != nil {
			t.Fatal(err)
		}
	}
	if _, off, _ := LoadLatestSnapshot(vfs.Default, dir, 29, Config{}, nil, nil); off != 20 {
		t.Fatalf("max 29 loaded %d", off)
	}
	if _, off, _ := LoadLatestSnapshot(vfs.Default, dir, 9, Config{}, nil, nil); off != 0 {
		t.Fatalf("max 9 loaded %d", off)
	}
	if err := DeleteSnapshotsAfter(vfs.Default, dir, 20); err != nil {
		t.Fatal(err)
	}
	if err := DeleteSnapshotsBefore(vfs.Default, dir, 20); err != nil {
		t.Fatal(err)
	}
	offs, err := SnapshotOffsets(vfs.Default, dir)
	if err != nil || !reflect.DeepEqual(offs, []int64{20}) {
		t.Fatalf("offsets %v %v", offs, err)
	}
	if offs, err := SnapshotOffsets(vfs.Default, filepath.Join(dir, "missing")); err != nil || offs != nil {
		t.Fatalf("missing dir: %v %v", offs, err)
	}
}

func TestCorruptSnapshotFallsBack(t *testing.T) {
	m := populated(t)
	size := len(encodeSnapshotOf(m, 30))
	// Flip every byte position in turn: each must be detected.
	for k := 0; k < size; k++ {
		dir := t.TempDir()
		reg := prometheus.NewRegistry()
		met := NewMetrics(reg)
		if err := m.WriteSnapshot(vfs.Default, dir, 20); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteSnapshot(vfs.Default, dir, 30); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, SnapshotFileName(30))
		b, _ := os.ReadFile(path)
		b[k] ^= 0x40
		os.WriteFile(path, b, 0o644)
		got, off, err := LoadLatestSnapshot(vfs.Default, dir, 100, Config{}, nil, met)
		if err != nil || off != 20 {
			t.Fatalf("byte %d: loaded %d, %v", k, off, err)
		}
		if got.Len() != m.Len() {
			t.Fatalf("byte %d: %d producers", k, got.Len())
		}
		if counterValue(t, reg, "minibroker_psm_corrupt_snapshots_total", "") != 1 {
			t.Fatalf("byte %d: corruption not counted", k)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("byte %d: corrupt snapshot kept", k)
		}
	}
}

func encodeSnapshotOf(m *Manager, off int64) []byte { return m.encodeSnapshot(off) }

func TestSnapshotVersionAndNameChecks(t *testing.T) {
	b := encodeSnapshot(7, nil)
	if _, err := DecodeSnapshot(b); err != nil {
		t.Fatal(err)
	}
	v2 := append([]byte(nil), b...)
	v2[5] = 2 // version 2, CRC does not cover the version: must still fail
	if _, err := DecodeSnapshot(v2); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("version 2: %v", err)
	}
	dir := t.TempDir()
	// A valid file under the wrong name is corrupt.
	os.WriteFile(filepath.Join(dir, SnapshotFileName(8)), b, 0o644)
	if _, off, err := LoadLatestSnapshot(vfs.Default, dir, 100, Config{}, nil, nil); err != nil || off != 0 {
		t.Fatalf("misnamed: %d %v", off, err)
	}
	for _, name := range []string{"1.snapshot", "0000000000000000000a.snapshot", "00000000000000000001.snapshot.tmp"} {
		if _, ok := ParseSnapshotFileName(name); ok {
			t.Fatalf("%q parsed", name)
		}
	}
}

// TestSnapshotGolden pins the on-disk format: a change to the encoding
// must be a new version, not a silent change of version 1. Regenerate
// with PSM_UPDATE_GOLDEN=1 only when adding a version.
func TestSnapshotGolden(t *testing.T) {
	const golden = "testdata/snapshot_v1.golden"
	m := populated(t)
	got := m.encodeSnapshot(25)
	if os.Getenv("PSM_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("snapshot encoding changed:\n got %x\nwant %x", got, want)
	}
	entries, err := DecodeSnapshot(want)
	if err != nil || !reflect.DeepEqual(normalize(entries), m.Entries()) {
		t.Fatalf("golden decodes to %+v, %v", entries, err)
	}
}
