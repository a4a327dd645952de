package batch_test

import (
	"errors"
	"testing"

	"github.com/minibroker/minibroker/internal/batch"
)

// TestAccessorsMatchParseHeader: each single-field accessor reads what
// ParseHeader reads, and every prefix too short for its field gives ok
// false, never a panic.
func TestAccessorsMatchParseHeader(t *testing.T) {
	raw, _ := buildBatch(t, "none", 3, goodRecords(3))
	batch.SetBaseOffset(raw, 1<<40+7)
	batch.SetPartitionLeaderEpoch(raw, 9)
	h, err := batch.Validate(raw)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := batch.SizeOf(raw); !ok || v != int64(len(raw)) || v != int64(h.Size()) {
		t.Fatalf("SizeOf %d %v, want %d", v, ok, len(raw))
	}
	if v, ok := batch.BaseOffsetOf(raw); !ok || v != h.BaseOffset {
		t.Fatalf("BaseOffsetOf %d %v, want %d", v, ok, h.BaseOffset)
	}
	if v, ok := batch.LeaderEpochOf(raw); !ok || v != 9 {
		t.Fatalf("LeaderEpochOf %d %v", v, ok)
	}
	if v, ok := batch.MagicOf(raw); !ok || v != 2 {
		t.Fatalf("MagicOf %d %v", v, ok)
	}
	if v, ok := batch.CRCOf(raw); !ok || v != h.CRC {
		t.Fatalf("CRCOf %d %v, want %d", v, ok, h.CRC)
	}
	if v, ok := batch.CodecOf(raw); !ok || v != 0 {
		t.Fatalf("CodecOf %d %v", v, ok)
	}
	if s, ok := batch.RecordsSection(raw); !ok || len(s) != len(raw)-batch.HeaderSize {
		t.Fatalf("RecordsSection %d bytes %v", len(s), ok)
	}
	// The smallest prefix each accessor needs; one byte less is refused.
	need := map[string]int{"SizeOf": 12, "BaseOffsetOf": 8, "LeaderEpochOf": 16, "MagicOf": 17,
		"CRCOf": 21, "CodecOf": 23, "RecordsSection": batch.HeaderSize}
	for n := 0; n <= batch.HeaderSize; n++ {
		b := raw[:n]
		got := map[string]bool{}
		_, got["SizeOf"] = batch.SizeOf(b)
		_, got["BaseOffsetOf"] = batch.BaseOffsetOf(b)
		_, got["LeaderEpochOf"] = batch.LeaderEpochOf(b)
		_, got["MagicOf"] = batch.MagicOf(b)
		_, got["CRCOf"] = batch.CRCOf(b)
		_, got["CodecOf"] = batch.CodecOf(b)
		_, got["RecordsSection"] = batch.RecordsSection(b)
		for name, ok := range got {
			if ok != (n >= need[name]) {
				t.Errorf("%s of %d bytes: ok %v, needs %d", name, n, ok, need[name])
			}
		}
	}
	if _, ok := batch.SizeOf(nil); ok {
		t.Fatal("SizeOf(nil) ok")
	}
}

// TestSizeOfDamagedLength: SizeOf reports what the length field says,
// even when it cannot frame a batch; the caller judges it.
func TestSizeOfDamagedLength(t *testing.T) {
	b := make([]byte, 12)
	b[8], b[9], b[10], b[11] = 0xff, 0xff, 0xff, 0xff // -1
	if v, ok := batch.SizeOf(b); !ok || v != 11 {
		t.Fatalf("SizeOf %d %v, want 11", v, ok)
	}
}

// TestRecordIter: the iterator reads each record's offset and timestamp
// deltas, and stops with ErrMalformedRecords, without a panic, on every
// cut of the section and on a record count beyond what it holds.
func TestRecordIter(t *testing.T) {
	var recs []byte
	want := [][2]int64{{0, 0}, {1, -5}, {2, 1 << 40}, {9000, 3}}
	for _, w := range want {
		recs = append(recs, timedRecord(int32(w[0]), w[1], []byte("k"))...)
	}
	it := batch.NewRecordIter(recs, int32(len(want)))
	for i, w := range want {
		off, ts, ok := it.Next()
		if !ok || int64(off) != w[0] || ts != w[1] {
			t.Fatalf("record %d: %d %d %v, want %v (%v)", i, off, ts, ok, w, it.Err())
		}
	}
	if _, _, ok := it.Next(); ok || it.Err() != nil {
		t.Fatalf("after the last: ok %v err %v", ok, it.Err())
	}
	// More records declared than present.
	it = batch.NewRecordIter(recs, int32(len(want)+1))
	n := 0
	for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
		n++
	}
	if n != len(want) || !errors.Is(it.Err(), batch.ErrMalformedRecords) {
		t.Fatalf("%d records, err %v", n, it.Err())
	}
	// Every cut: no panic; a cut inside the first record stops at once.
	first := len(timedRecord(0, 0, []byte("k")))
	for cut := range len(recs) {
		it := batch.NewRecordIter(recs[:cut], int32(len(want)))
		n := 0
		for _, _, ok := it.Next(); ok; _, _, ok = it.Next() {
			n++
		}
		if n == len(want) || it.Err() == nil {
			t.Fatalf("cut %d: %d records, err %v", cut, n, it.Err())
		}
		if cut < first && n != 0 {
			t.Fatalf("cut %d inside the first record: %d records", cut, n)
		}
	}
	// A record whose length is zero, or negative, or whose offset delta
	// does not fit an int32.
	for _, bad := range [][]byte{{0}, {1}, {4, 0, 0, 0xff, 0xff}, {14, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x7f}} {
		it := batch.NewRecordIter(bad, 1)
		if _, _, ok := it.Next(); ok || !errors.Is(it.Err(), batch.ErrMalformedRecords) {
			t.Fatalf("% x: ok %v err %v", bad, ok, it.Err())
		}
	}
}

// TestControlKey: a control key is read, and a short one refused.
func TestControlKey(t *testing.T) {
	v, typ, ok := batch.ControlKey([]byte{0, 0, 0, 7, 9})
	if !ok || v != 0 || typ != batch.ControlMirrorPidReset {
		t.Fatalf("%d %v %v", v, typ, ok)
	}
	for n := range 4 {
		if _, _, ok := batch.ControlKey(make([]byte, n)); ok {
			t.Fatalf("key of %d bytes read", n)
		}
	}
}
