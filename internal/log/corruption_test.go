package log

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// layout is where each appended batch landed.
type layout struct {
	dir     string
	batches [][]byte
	seg     []int64 // segment base of batch i
	pos     []int64 // byte position of batch i in its segment
}

// writeLayout writes 24 batches of 3 records over several segments and
// closes the log cleanly.
func writeLayout(t *testing.T) layout {
	t.Helper()
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	cfg.IndexIntervalBytes = 100
	lo := layout{dir: t.TempDir()}
	l := openTest(t, lo.dir, cfg, Options{})
	lo.batches = appendN(t, l, 24, 3, 0, 0, 20)
	bases := l.SegmentBaseOffsets()
	if len(bases) < 3 {
		t.Fatalf("want 3+ segments, got %v", bases)
	}
	var pos int64
	for i, b := range lo.batches {
		base := int64(i * 3)
		if slices.Contains(bases, base) {
			pos = 0
		}
		lo.seg = append(lo.seg, bases[max(0, sortSearch(bases, base))])
		lo.pos = append(lo.pos, pos)
		pos += int64(len(b))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return lo
}

// sortSearch returns the index of the last base <= off.
func sortSearch(bases []int64, off int64) int {
	i := 0
	for i+1 < len(bases) && bases[i+1] <= off {
		i++
	}
	return i
}

func (lo layout) path(i int) string { return segmentFileName(lo.dir, lo.seg[i], logSuffix) }

// unclean removes the clean-shutdown marker and the recovery point, as a
// crash before any flush would leave them: the open scans everything.
func (lo layout) unclean(t *testing.T) {
	if err := os.Remove(filepath.Join(lo.dir, cleanShutdownName)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(lo.dir, recoveryPointName))
}

// expectCut reopens and checks that exactly batches[:n] survive, the
// damaged segment ends where batch n started, and no later segment is left.
func (lo layout) expectCut(t *testing.T, n int) {
	t.Helper()
	l := openTest(t, lo.dir, testConfig(), Options{})
	defer l.Close()
	if got, want := readAll(t, l), slices.Concat(lo.batches[:n]...); !bytes.Equal(got, want) {
		t.Fatalf("survivors: %d bytes, want %d (%d batches)", len(got), len(want), n)
	}
	if l.LogEndOffset() != int64(n*3) {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), n*3)
	}
	if n < len(lo.batches) {
		st, err := os.Stat(lo.path(n))
		switch {
		case os.IsNotExist(err) && lo.pos[n] == 0 && lo.seg[n] != lo.seg[0]:
			// Cut to nothing: the empty trailing segment is removed.
		case err != nil:
			t.Fatal(err)
		case st.Size() != lo.pos[n]:
			t.Fatalf("damaged segment is %d bytes, want cut at %d", st.Size(), lo.pos[n])
		}
		for _, b := range l.SegmentBaseOffsets() {
			if b > lo.seg[n] {
				t.Fatalf("segment %d after the damage survived", b)
			}
		}
	}
	// The log stays writable at the cut.
	appendN(t, l, 1, 1, 0, 0, 1)
}

// TestTornTail cuts the last segment at byte K and expects the log to end
// at the last whole batch before K.
func TestTornTail(t *testing.T) {
	lo := writeLayout(t)
	last := len(lo.batches) - 1
	first := last
	for first > 0 && lo.seg[first-1] == lo.seg[last] {
		first--
	}
	size := lo.pos[last] + int64(len(lo.batches[last]))
	for _, k := range []int64{0, 1, 11, 12, 17, 60, 61, 62, lo.pos[first+1] - 1, lo.pos[first+1],
		lo.pos[first+1] + 1, lo.pos[last] + 30, size - 1, size} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			lo := writeLayout(t)
			lo.unclean(t)
			if err := os.Truncate(lo.path(last), k); err != nil {
				t.Fatal(err)
			}
			n := first
			for n <= last && lo.pos[n]+int64(len(lo.batches[n])) <= k {
				n++
			}
			lo.expectCut(t, n)
		})
	}
}

// TestCorruption flips one byte and expects the log cut at the damaged
// batch, everything before it intact. BaseOffset and PartitionLeaderEpoch
// are outside the CRC (as in Kafka): a flip there is caught only when it
// breaks the offset order or range (a base offset raised within range
// passes, and the next batch is cut instead).
func TestCorruption(t *testing.T) {
	cases := []struct {
		name   string
		batch  int
		at     int  // byte within the batch
		xor    byte // flip mask
		cutAt  int  // first lost batch
		inLast bool
	}{
		{"crc", 4, 18, 0x01, 4, false},
		{"attributes", 4, 22, 0x04, 4, false},
		{"record value", 4, 80, 0xff, 4, false},
		{"last byte", 4, -1, 0x10, 4, false},
		{"length bigger", 4, 10, 0x01, 4, false},
		{"length smaller", 4, 11, 0x20, 4, false},
		{"length huge", 4, 8, 0x40, 4, false},
		{"magic", 4, 16, 0x03, 4, false},
		{"base offset lower", 4, 7, 0x08, 4, false},
		{"base offset far higher", 4, 0, 0x01, 4, false}, // past the segment's int32 range
		{"first batch", 0, 30, 0x01, 0, false},
		{"last batch", -1, 40, 0x01, -1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lo := writeLayout(t)
			lo.unclean(t)
			i, cut := c.batch, c.cutAt
			if i < 0 {
				i, cut = len(lo.batches)-1, len(lo.batches)-1
			}
			at := c.at
			if at < 0 {
				at = len(lo.batches[i]) - 1
			}
			flip(t, lo.path(i), lo.pos[i]+int64(at), c.xor)
			lo.expectCut(t, cut)
		})
	}
}

func flip(t *testing.T, path string, pos int64, mask byte) {
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
	b[0] ^= mask
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptionNotServed: damage that recovery does not scan (a clean
// open, or data below the recovery point) is reported by Read as a
// CorruptionError, never served.
func TestCorruptionNotServed(t *testing.T) {
	for _, mode := range []string{"clean", "below recovery point", "below persisted recovery point"} {
		t.Run(mode, func(t *testing.T) {
			lo := writeLayout(t)
			opts := Options{}
			switch mode {
			case "below recovery point":
				lo.unclean(t)
				opts.RecoveryPoint = lo.seg[len(lo.batches)-1]
			case "below persisted recovery point": // the Log's own file
				if err := os.Remove(filepath.Join(lo.dir, cleanShutdownName)); err != nil {
					t.Fatal(err)
				}
			}
			flip(t, lo.path(2), lo.pos[2]+70, 0x01)
			l := openTest(t, lo.dir, testConfig(), opts)
			defer l.Close()
			if l.LogEndOffset() != 72 {
				t.Fatalf("LEO %d: the log was scanned", l.LogEndOffset())
			}
			b, err := l.Read(0, 1<<20, true)
			if err != nil || !bytes.Equal(b, slices.Concat(lo.batches[:2]...)) {
				t.Fatalf("Read(0) = %d bytes, %v: want the two good batches", len(b), err)
			}
			_, err = l.Read(6, 1<<20, true)
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Segment != lo.path(2) || ce.Offset != lo.pos[2] || !errors.Is(err, ErrStorage) {
				t.Fatalf("Read(6) = %v, want CorruptionError at %s:%d", err, lo.path(2), lo.pos[2])
			}
			if b, err := l.Read(9, 1<<20, true); err != nil || !bytes.Equal(b[:len(lo.batches[3])], lo.batches[3]) {
				t.Fatalf("Read(9) past the damage: %v", err)
			}
		})
	}
}

// TestDamagedIndexesRebuilt: missing, torn or nonsensical index files are
// rebuilt on open and lookups stay right.
func TestDamagedIndexesRebuilt(t *testing.T) {
	damage := map[string]func(lo layout){
		"missing index":     func(lo layout) { os.Remove(segmentFileName(lo.dir, lo.seg[0], indexSuffix)) },
		"missing timeindex": func(lo layout) { os.Remove(segmentFileName(lo.dir, lo.seg[0], timeIndexSuffix)) },
		"entry past end": func(lo layout) {
			f, _ := os.OpenFile(segmentFileName(lo.dir, lo.seg[0], indexSuffix), os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{0, 0, 0, 50, 0, 1, 0, 0})
			f.Close()
		},
		"entries misplaced": func(lo layout) {
			// Valid-looking entries whose positions all name the last
			// indexed batch: without verification reads would skip data.
			p := segmentFileName(lo.dir, lo.seg[0], indexSuffix)
			b, _ := os.ReadFile(p)
			last := slices.Clone(b[len(b)-4:])
			for i := 4; i < len(b); i += offsetEntrySize {
				copy(b[i:], last)
			}
			os.WriteFile(p, b, 0o644)
		},
		"torn entry": func(lo layout) {
			f, _ := os.OpenFile(segmentFileName(lo.dir, lo.seg[1], indexSuffix), os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{0, 0, 0})
			f.Close()
		},
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			lo := writeLayout(t)
			fn(lo)
			l := openTest(t, lo.dir, testConfig(), Options{})
			defer l.Close()
			if !bytes.Equal(readAll(t, l), slices.Concat(lo.batches...)) {
				t.Fatal("content")
			}
			for i := range lo.batches {
				b, err := l.Read(int64(i*3+1), 1, true)
				if err != nil || !bytes.Equal(b, lo.batches[i]) {
					t.Fatalf("Read(%d): %v", i*3+1, err)
				}
			}
			if off, _, ok := l.OffsetForTimestamp(10); !ok || off != 10 {
				t.Fatalf("OffsetForTimestamp(10) = %d %v", off, ok)
			}
			if s := l.segments[0]; s.offIdx.n == 0 || s.timeIdx.n == 0 {
				t.Fatal("index not rebuilt")
			}
		})
	}
}
