package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// TestVerificationTable: the two verified parts of a segment (verify.go)
// only grow, meet into a whole, and shrink to the cut on truncation.
func TestVerificationTable(t *testing.T) {
	type step struct {
		op         string // "read", "append", "append-unchecked", "truncate"
		a, b, size int64
		want       verification
	}
	cases := []struct {
		name  string
		start verification
		steps []step
	}{
		{"clean open, sequential reader", unverified(100), []step{
			{"read", 0, 30, 100, verification{30, 100}},
			{"read", 30, 60, 100, verification{60, 100}},
			{"read", 10, 40, 100, verification{60, 100}}, // inside: nothing new
			{"read", 60, 100, 100, verification{100, 60}},
		}},
		{"clean open, appends then tail reader", unverified(100), []step{
			{"append", 100, 150, 0, verification{0, 100}},
			{"read", 80, 150, 150, verification{0, 80}},    // reaches the suffix
			{"read", 40, 60, 150, verification{0, 80}},     // touches neither part
			{"read", 0, 40, 150, verification{40, 80}},     // prefix
			{"read", 40, 80, 150, verification{150, 40}},   // parts meet: all
			{"append", 150, 170, 0, verification{170, 40}}, // whole stays whole
		}},
		{"unchecked append ends the suffix", verification{100, 100}, []step{
			{"append-unchecked", 100, 120, 0, verification{100, 120}},
			{"append", 120, 140, 0, verification{100, 120}},
			{"read", 110, 120, 140, verification{100, 110}}, // reaches the suffix
			{"read", 100, 110, 140, verification{140, 100}}, // meets: whole
		}},
		{"truncation lowers both to the cut", verification{60, 80}, []step{
			{"truncate", 0, 0, 70, verification{60, 70}},
			{"append-unchecked", 70, 90, 0, verification{60, 90}},
			{"truncate", 0, 0, 50, verification{50, 50}},
			{"append-unchecked", 50, 60, 0, verification{50, 60}},
			{"append", 60, 70, 0, verification{50, 60}},
		}},
		{"new segment", unverified(0), []step{
			{"append", 0, 10, 0, verification{10, 0}},
			{"append-unchecked", 10, 20, 0, verification{10, 20}},
			{"append", 20, 30, 0, verification{10, 20}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := c.start
			for i, s := range c.steps {
				switch s.op {
				case "read":
					v.checked(s.a, s.b, s.size)
				case "append", "append-unchecked":
					v.appended(s.a, s.b, s.op == "append")
				case "truncate":
					v.truncated(s.size)
				}
				if v != s.want {
					t.Fatalf("step %d %s(%d,%d,%d): %+v, want %+v", i, s.op, s.a, s.b, s.size, v, s.want)
				}
			}
		})
	}
}

// readBatch reads the one batch holding offset.
func readBatch(l *Log, offset int64) ([]byte, error) { return l.Read(offset, 1, true) }

func wantCorruption(t *testing.T, err error, path string, pos int64) {
	t.Helper()
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != path || ce.Offset != pos || !errors.Is(err, ErrStorage) {
		t.Fatalf("got %v, want CorruptionError at %s:%d", err, path, pos)
	}
}

// TestFirstReadAfterCleanOpenChecks: a clean open verifies nothing, so a
// byte flipped while the log was closed is reported by the first read,
// whether the bytes were appended checked (AppendVerified, the
// partition's path) or not, in the active segment or an older one.
func TestFirstReadAfterCleanOpenChecks(t *testing.T) {
	for _, verified := range []bool{false, true} {
		t.Run(fmt.Sprintf("appendVerified=%v", verified), func(t *testing.T) {
			cfg := testConfig()
			cfg.SegmentBytes = 1000
			dir := t.TempDir()
			l := openTest(t, dir, cfg, Options{})
			for i := range 12 {
				b := testBatch{base: int64(i * 3), records: 3, ts: int64(i * 3), valueSize: 20}.build()
				app := l.Append
				if verified {
					app = l.AppendVerified
				}
				if _, err := app(b); err != nil {
					t.Fatal(err)
				}
			}
			bases := l.SegmentBaseOffsets()
			if len(bases) < 2 {
				t.Fatalf("want 2+ segments, got %v", bases)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Damage one payload byte of the first batch of the first and
			// of the last segment.
			first := segmentFileName(dir, bases[0], logSuffix)
			last := segmentFileName(dir, bases[len(bases)-1], logSuffix)
			flip(t, first, 70, 0x01)
			flip(t, last, 70, 0x01)
			l = openTest(t, dir, cfg, Options{})
			defer l.Close()
			for _, s := range l.segments {
				if s.verified != unverified(s.size) {
					t.Fatalf("segment %d: %+v after a clean open, want nothing verified", s.base, s.verified)
				}
			}
			_, err := readBatch(l, bases[0])
			wantCorruption(t, err, first, 0)
			_, err = readBatch(l, bases[len(bases)-1])
			wantCorruption(t, err, last, 0)
			// And again: damage is never recorded as verified.
			_, err = readBatch(l, bases[0])
			wantCorruption(t, err, first, 0)
		})
	}
}

// TestVerifiedDamageNotRedetected is the accepted trade-off, as in Kafka:
// once a batch has passed its CRC check in this process, later reads of
// it skip the check, so damage that appears on disk afterwards (here: a
// byte flipped through another file handle) is served. The first read
// after the next open checks it again.
func TestVerifiedDamageNotRedetected(t *testing.T) {
	lo := writeLayout(t)
	l := openTest(t, lo.dir, testConfig(), Options{})
	const victim = 5
	off := int64(victim * 3)

	// Not yet read in this process: the damage is reported.
	flip(t, lo.path(victim), lo.pos[victim]+70, 0x01)
	_, err := readBatch(l, off)
	wantCorruption(t, err, lo.path(victim), lo.pos[victim])
	flip(t, lo.path(victim), lo.pos[victim]+70, 0x01) // repaired

	// A sequential pass verifies every batch.
	if !bytes.Equal(readAll(t, l), slices.Concat(lo.batches...)) {
		t.Fatal("content")
	}
	for _, s := range l.segments {
		if !s.verified.covers(0, s.size) {
			t.Fatalf("segment %d: %+v after a full read of %d bytes", s.base, s.verified, s.size)
		}
	}

	// Damaged after it was verified: served as it is, no error.
	flip(t, lo.path(victim), lo.pos[victim]+70, 0x01)
	got, err := readBatch(l, off)
	if err != nil {
		t.Fatalf("Read(%d) of a verified batch: %v (the CRC should not have been checked again)", off, err)
	}
	if bytes.Equal(got, lo.batches[victim]) || got[70] != lo.batches[victim][70]^0x01 {
		t.Fatal("expected the damaged bytes to be served")
	}
	if _, err := batch.Validate(got); !errors.Is(err, batch.ErrCRC) {
		t.Fatalf("served batch: %v, want a CRC mismatch a client would report", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A new process lifetime checks again.
	l = openTest(t, lo.dir, testConfig(), Options{})
	defer l.Close()
	_, err = readBatch(l, off)
	wantCorruption(t, err, lo.path(victim), lo.pos[victim])
}

// TestVerifiedWithoutCheckServesCorruption is the negative control for
// the rule that the verified position moves only after a good check: the
// same scenario as the first read in TestVerifiedDamageNotRedetected, but
// with the segment marked verified without any check (what moving the
// position on open, or before or regardless of the check, would do).
// The damage is then served unreported.
func TestVerifiedWithoutCheckServesCorruption(t *testing.T) {
	for _, rule := range []string{"advance after a good check", "advance without a check"} {
		t.Run(rule, func(t *testing.T) {
			lo := writeLayout(t)
			l := openTest(t, lo.dir, testConfig(), Options{})
			defer l.Close()
			const victim = 5
			flip(t, lo.path(victim), lo.pos[victim]+70, 0x01)
			if rule == "advance without a check" {
				l.mu.Lock()
				s := l.segments[l.segmentIndex(int64(victim*3))]
				s.verified.checked(0, s.size, s.size)
				l.mu.Unlock()
			}
			_, err := readBatch(l, int64(victim*3))
			if rule == "advance after a good check" {
				wantCorruption(t, err, lo.path(victim), lo.pos[victim])
				return
			}
			if err != nil {
				t.Fatalf("Read: %v; the control expects the damage to go unreported", err)
			}
		})
	}
}

// TestVerifiedAfterTruncate: TruncateTo lowers the verified parts to the
// new end; bytes appended afterwards are verified only when appended
// checked (AppendVerified), so damage in bytes appended with Append is
// reported. Same after TruncateFullyAndStartAt and after a read that ran
// into damage.
func TestVerifiedAfterTruncate(t *testing.T) {
	for _, mode := range []string{"Append", "AppendVerified"} {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig()
			dir := t.TempDir()
			l := openTest(t, dir, cfg, Options{})
			defer l.Close()
			for i := range 10 {
				b := testBatch{base: int64(i * 4), records: 4, valueSize: 200}.build()
				if _, err := l.AppendVerified(b); err != nil {
					t.Fatal(err)
				}
			}
			s := l.active()
			if len(l.segments) != 1 || !s.verified.covers(0, s.size) {
				t.Fatalf("checked appends: %+v of %d bytes", s.verified, s.size)
			}
			if err := l.TruncateTo(20); err != nil {
				t.Fatal(err)
			}
			cut := s.size
			if s.verified.prefixEnd > cut || s.verified.suffixStart > cut {
				t.Fatalf("after truncation to %d bytes: %+v", cut, s.verified)
			}
			if !s.verified.covers(0, cut) {
				t.Fatalf("truncation forgot verified bytes below the cut: %+v", s.verified)
			}
			app := l.Append
			if mode == "AppendVerified" {
				app = l.AppendVerified
			}
			nb := testBatch{base: 20, records: 4, valueSize: 200}.build()
			if _, err := app(nb); err != nil {
				t.Fatal(err)
			}
			end := s.size
			if got, want := s.verified.covers(cut, end), mode == "AppendVerified"; got != want {
				t.Fatalf("re-appended bytes [%d,%d) covered=%v, want %v (%+v)", cut, end, got, want, s.verified)
			}
			flip(t, s.logPath, cut+70, 0x01)
			_, err := readBatch(l, 20)
			if mode == "AppendVerified" {
				if err != nil {
					t.Fatalf("verified bytes: %v", err)
				}
				return
			}
			wantCorruption(t, err, s.logPath, cut)
			if s.verified.covers(cut, end) {
				t.Fatal("a failed check verified the damaged batch")
			}

			// A whole-log restart: nothing carried over, and Append's bytes
			// are checked on first read.
			if err := l.TruncateFullyAndStartAt(100); err != nil {
				t.Fatal(err)
			}
			s = l.active()
			if s.size != 0 || s.verified != unverified(0) {
				t.Fatalf("after TruncateFullyAndStartAt: %+v of %d bytes", s.verified, s.size)
			}
			if _, err := l.Append(testBatch{base: 100, records: 4, valueSize: 200}.build()); err != nil {
				t.Fatal(err)
			}
			flip(t, s.logPath, 70, 0x01)
			_, err = readBatch(l, 100)
			wantCorruption(t, err, s.logPath, 0)
		})
	}
}

// TestVerifiedAcrossRollAndRetention: a roll starts a new segment with
// nothing to verify, the old one keeps its state, and deleting segments
// leaves the others' state alone.
func TestVerifiedAcrossRollAndRetention(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	dir := t.TempDir()
	l := openTest(t, dir, cfg, Options{})
	defer l.Close()
	for i := range 24 {
		b := testBatch{base: int64(i * 3), records: 3, valueSize: 20}.build()
		app := l.AppendVerified
		if i%2 == 1 {
			app = l.Append
		}
		if _, err := app(b); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.segments) < 3 {
		t.Fatalf("want 3+ segments, got %d", len(l.segments))
	}
	readAll(t, l)
	for _, s := range l.segments {
		if !s.verified.covers(0, s.size) {
			t.Fatalf("segment %d: %+v after a full read", s.base, s.verified)
		}
	}
	if err := l.DeleteRecordsBefore(l.segments[1].base); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.segments {
		if !s.verified.covers(0, s.size) {
			t.Fatalf("segment %d: %+v after deleting the first segment", s.base, s.verified)
		}
	}
}

// TestRecoveryVerifies: an unclean open validates every batch from the
// segment holding the recovery point: those segments are verified, the
// ones below are not (damage there is reported on first read).
func TestRecoveryVerifies(t *testing.T) {
	lo := writeLayout(t)
	lo.unclean(t)
	lastSeg := lo.seg[len(lo.batches)-1]
	flip(t, lo.path(0), lo.pos[0]+70, 0x01)
	l := openTest(t, lo.dir, testConfig(), Options{RecoveryPoint: lastSeg})
	defer l.Close()
	for _, s := range l.segments {
		want := s.base >= lastSeg
		if got := s.verified.covers(0, s.size); got != want {
			t.Fatalf("segment %d: verified=%v (%+v), want %v", s.base, got, s.verified, want)
		}
	}
	_, err := readBatch(l, 0)
	wantCorruption(t, err, lo.path(0), 0)
}

// TestVerifiedConcurrent: readers at random and sequential offsets, an
// appender mixing checked and unchecked appends, truncation and
// retention, under -race. A batch damaged before the open is never served
// and never counted as verified; the verified positions always lie on
// batch boundaries within the segment.
func TestVerifiedConcurrent(t *testing.T) {
	lo := writeLayout(t)
	const victim = 2 // in the first segment, which retention keeps here
	flip(t, lo.path(victim), lo.pos[victim]+70, 0x01)
	cfg := testConfig()
	cfg.SegmentBytes = 4000
	cfg.RetentionMs = -1
	l := openTest(t, lo.dir, cfg, Options{})
	defer l.Close()
	victimOff := int64(victim * 3)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	reader := func(seed uint64, sequential bool) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 1))
		off := int64(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			end := l.LogEndOffset()
			if !sequential {
				off = rng.Int64N(end)
			}
			if off >= end {
				off = 0
			}
			b, err := l.Read(off, 1+rng.IntN(3000), true)
			switch {
			case errors.Is(err, ErrOffsetOutOfRange):
				off = 0
				continue
			case off >= victimOff && off < victimOff+3:
				var ce *CorruptionError
				if !errors.As(err, &ce) {
					t.Errorf("Read(%d) of the damaged batch: %v, %d bytes", off, err, len(b))
					return
				}
				off = victimOff + 3
				continue
			case err != nil:
				t.Errorf("Read(%d): %v", off, err)
				return
			}
			var last int64
			for len(b) > 0 {
				size := int(binary.BigEndian.Uint32(b[8:])) + batch.LogOverhead
				h, err := batch.Validate(b[:size])
				if err != nil {
					t.Errorf("Read(%d) served a bad batch: %v", off, err)
					return
				}
				last = h.LastOffset()
				b = b[size:]
			}
			off = last + 1
		}
	}
	for i := range 4 {
		wg.Add(1)
		go reader(uint64(i), i%2 == 0)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 400 {
		leo := l.LogEndOffset()
		b := testBatch{base: leo, records: 3, valueSize: 20 + rng.IntN(200)}.build()
		app := l.AppendVerified
		if rng.IntN(3) == 0 {
			app = l.Append
		}
		if _, err := app(b); err != nil {
			t.Fatal(err)
		}
		switch i % 100 {
		case 50:
			if err := l.TruncateTo(max(leo-30, victimOff+30)); err != nil {
				t.Fatal(err)
			}
		case 90:
			if _, err := l.ApplyRetention(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()

	l.truncMu.Lock()
	defer l.truncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segments {
		v := s.verified
		if v.prefixEnd > s.size || v.suffixStart > s.size || v.prefixEnd < 0 || v.suffixStart < 0 {
			t.Fatalf("segment %d: %+v outside %d bytes", s.base, v, s.size)
		}
		bounds := map[int64]bool{s.size: true}
		sc := newScanner(s.log, s.logPath, 0, s.size, 64<<10)
		for {
			h, _, pos, err := sc.next(false)
			if err != nil {
				break
			}
			bounds[pos] = true
			if v.covers(pos, pos+int64(h.Size())) {
				raw := make([]byte, h.Size())
				if _, err := s.log.ReadAt(raw, pos); err != nil {
					t.Fatal(err)
				}
				if _, err := batch.Validate(raw); err != nil {
					t.Fatalf("segment %d: batch at %d counted as verified: %v", s.base, pos, err)
				}
			}
		}
		if !bounds[v.prefixEnd] || !bounds[v.suffixStart] {
			t.Fatalf("segment %d: %+v not on batch boundaries", s.base, v)
		}
	}
}

// TestVerifiedFailedWrite: a checked append whose write is torn (and
// whose undo fails, leaving the torn bytes in the file) verifies nothing
// past the committed size; the restart's recovery validates the segment
// and cuts the torn bytes.
func TestVerifiedFailedWrite(t *testing.T) {
	l, e, mem := faultLog(t, testConfig())
	for i := range 4 {
		if _, err := l.AppendVerified(testBatch{base: int64(i * 2), records: 2, valueSize: 30}.build()); err != nil {
			t.Fatal(err)
		}
	}
	s := l.active()
	sizeBefore := s.size
	e.Inject(errorfs.Rule{Op: errorfs.OpWrite, PathContains: logSuffix, Count: 1, ShortBytes: 30})
	e.Inject(errorfs.Rule{Op: errorfs.OpTruncate, PathContains: logSuffix, Count: 1})
	if _, err := l.AppendVerified(testBatch{base: 8, records: 2, valueSize: 30}.build()); !errors.Is(err, ErrStorage) {
		t.Fatalf("torn write: %v", err)
	}
	if got := fileSize(t, mem, 0); got != sizeBefore+30 {
		t.Fatalf("file %d bytes, want the torn 30 bytes left after %d", got, sizeBefore)
	}
	if s.size != sizeBefore || s.verified != (verification{prefixEnd: sizeBefore, suffixStart: 0}) {
		t.Fatalf("after the failed write: size %d, %+v; want %d and the old state", s.size, s.verified, sizeBefore)
	}
	l.Close()
	l2 := openTest(t, faultDir, testConfig(), Options{FS: mem})
	defer l2.Close()
	s = l2.active()
	if s.size != sizeBefore || !s.verified.covers(0, s.size) {
		t.Fatalf("after recovery: size %d, %+v; want %d bytes, all verified", s.size, s.verified, sizeBefore)
	}
}
