package log

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/minibroker/minibroker/internal/vfs"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// fuzzSeedLog returns the raw bytes of a small valid segment.
func fuzzSeedLog() []byte {
	var out []byte
	for i := range 6 {
		out = append(out, testBatch{base: int64(i * 2), records: 2, epoch: int32(i / 3), ts: int64(i), valueSize: 5}.build()...)
	}
	return out
}

// writeMem creates dir/name with data in fsys.
func writeMem(t *testing.T, fsys vfs.FS, name string, data []byte) {
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data)
	f.Close()
}

// checkServes reads the whole log and fails if anything served is not a
// valid batch; corruption errors are allowed, panics and bad bytes not.
func checkServes(t *testing.T, l *Log) {
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		b, err := l.Read(off, 1<<16, true)
		var ce *CorruptionError
		if errors.As(err, &ce) {
			return
		}
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		hs := headers(t, b)
		if len(hs) == 0 {
			t.Fatalf("Read(%d) below LEO %d returned nothing", off, l.LogEndOffset())
		}
		off = hs[len(hs)-1].LastOffset() + 1
	}
}

// FuzzSegmentRecovery: an unclean open of any segment bytes must not
// panic, must keep only valid batches, and must leave a writable log.
func FuzzSegmentRecovery(f *testing.F) {
	seed := fuzzSeedLog()
	f.Add(seed)
	f.Add(seed[:len(seed)-7])
	f.Add(append(slices.Clone(seed), 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := errorfs.NewMem()
		fsys.MkdirAll(faultDir, 0o755)
		writeMem(t, fsys, segmentFileName(faultDir, 0, logSuffix), data)
		l, err := Open(faultDir, testConfig(), Options{FS: fsys})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Close()
		got := readAll(t, l) // every batch after recovery is valid
		if !bytes.HasPrefix(data, got) {
			t.Fatal("recovery served bytes that were not a prefix of the segment")
		}
		if _, err := l.Append(testBatch{base: l.LogEndOffset(), records: 1}.build()); err != nil {
			t.Fatalf("Append after recovery: %v", err)
		}
	})
}

// FuzzIndexFiles: any .index/.timeindex bytes on a clean open must not
// panic, and reads never serve invalid or wrong batches.
func FuzzIndexFiles(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 2})
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 100}, []byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 1}, []byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, idx, tidx []byte) {
		fsys := errorfs.NewMem()
		l, err := Open(faultDir, testConfig(), Options{FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		seed := fuzzSeedLog()
		if _, err := l.Append(seed); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		writeMem(t, fsys, segmentFileName(faultDir, 0, indexSuffix), idx)
		writeMem(t, fsys, segmentFileName(faultDir, 0, timeIndexSuffix), tidx)
		l, err = Open(faultDir, testConfig(), Options{FS: fsys})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Close()
		if l.LogEndOffset() != 12 {
			t.Fatalf("LEO %d", l.LogEndOffset())
		}
		for off := int64(0); off < 12; off++ {
			b, err := l.Read(off, 1, true)
			if err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
			if hs := headers(t, b); len(hs) != 1 || hs[0].BaseOffset != off/2*2 {
				t.Fatalf("Read(%d) returned the wrong batch", off)
			}
		}
		l.OffsetForTimestamp(3)
		l.MaxTimestamp()
		if err := l.TruncateTo(5); err != nil {
			t.Logf("TruncateTo: %v", err)
		}
		checkServes(t, l)
	})
}

// FuzzAppend: Append must reject or store any input without panicking,
// and the log must stay readable.
func FuzzAppend(f *testing.F) {
	seed := fuzzSeedLog()
	f.Add(seed)
	f.Add(seed[:70])
	f.Add(append(slices.Clone(seed[:61]), seed...))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Open(faultDir, testConfig(), Options{FS: errorfs.NewMem()})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		l.Append(data)
		checkServes(t, l)
	})
}

// FuzzCheckpointFiles: the text and txnindex decoders never panic and
// round-trip what they accept.
func FuzzCheckpointFiles(f *testing.F) {
	f.Add([]byte("0\n2\n0 0\n3 100\n"))
	f.Add([]byte("0\n12\n"))
	f.Add(AbortedTxn{1, 2, 3, 4}.appendTo(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		if entries, err := decodeEpochCheckpoint(data); err == nil {
			again, err := decodeEpochCheckpoint(encodeEpochCheckpoint(entries))
			if err != nil || !slices.Equal(again, entries) {
				t.Fatalf("epoch checkpoint round trip: %v", err)
			}
		}
		if off, err := decodeOffsetFile(data); err == nil {
			if again, err := decodeOffsetFile(encodeOffsetFile(off)); err != nil || again != off {
				t.Fatal("offset file round trip")
			}
		}
		if tx, err := decodeAbortedTxn(data); err == nil {
			if again, _ := decodeAbortedTxn(tx.appendTo(nil)); again != tx {
				t.Fatal("txn entry round trip")
			}
		}
	})
}
