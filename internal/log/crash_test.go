package log

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/minibroker/minibroker/internal/batch"
	"github.com/minibroker/minibroker/internal/vfs/errorfs"
)

// TestRandomCrashes drives a log through random appends (rolling often),
// flushes, group commits and truncations, then cuts the power at a random
// point, sometimes tearing unsynced writes. After reopening, the log must
// be a prefix of what was in it, hold at least everything that was
// flushed, and accept appends.
func TestRandomCrashes(t *testing.T) {
	rounds := 150
	if testing.Short() {
		rounds = 30
	}
	for seed := range uint64(rounds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomCrash(t, seed) })
	}
}

func randomCrash(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	cfg := testConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 200
	if rng.IntN(2) == 0 {
		cfg.FlushIntervalMessages = 1
	}
	mem := errorfs.NewMem()
	l := openTest(t, faultDir, cfg, Options{FS: mem})
	defer l.Close()

	var model [][]byte // batches in the log, oldest first
	var modelLast []int64
	ops := 5 + rng.IntN(60)
	for range ops {
		switch r := rng.IntN(10); {
		case r < 6:
			var data []byte
			for range 1 + rng.IntN(3) {
				base := l.LogEndOffset()
				if len(modelLast) > 0 {
					base = max(base, modelLast[len(modelLast)-1]+1)
				}
				if rng.IntN(8) == 0 {
					base += int64(rng.IntN(5)) // a gap, as compacted data has
				}
				recs := 1 + rng.IntN(4)
				// Epochs mostly rise (new cache entries), sometimes fall back
				// (ignored by the cache).
				epoch := int32(len(model)/4 + rng.IntN(3))
				b := testBatch{base: base, records: recs, epoch: epoch, ts: int64(base), valueSize: rng.IntN(400)}.build()
				data = append(data, b...)
				model = append(model, b)
				modelLast = append(modelLast, base+int64(recs)-1)
			}
			res, err := l.Append(data)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			if cfg.FlushIntervalMessages == 1 && rng.IntN(2) == 0 {
				if err := l.WaitFlushed(res.LogEndOffset); err != nil {
					t.Fatal(err)
				}
			}
		case r < 8:
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		default:
			if len(model) == 0 {
				continue
			}
			k := rng.IntN(len(model))
			h, _ := batch.ParseHeader(model[k])
			first := h.BaseOffset
			off := first + int64(rng.IntN(int(modelLast[k]-first+1)))
			if err := l.TruncateTo(off); err != nil {
				t.Fatal(err)
			}
			model, modelLast = model[:k], modelLast[:k]
		}
	}
	flushed := l.FlushedOffset()
	checkRecoveryPointCovered(t, l, mem)
	var crashed *errorfs.MemFS
	if rng.IntN(2) == 0 {
		crashed = mem.TornCrashClone(rng)
	} else {
		crashed = mem.CrashClone()
	}
	l2 := openTest(t, faultDir, testConfig(), Options{FS: crashed})
	defer l2.Close()
	if testing.Verbose() {
		t.Logf("model: %d batches, last offsets %v; before crash LEO %d flushed %d segs %v; after LEO %d segs %v",
			len(model), modelLast, l.LogEndOffset(), flushed, l.SegmentBaseOffsets(), l2.LogEndOffset(), l2.SegmentBaseOffsets())
	}
	got := readAllGaps(t, l2)
	all := slices.Concat(model...)
	if !bytes.HasPrefix(all, got) {
		t.Fatalf("recovered %d bytes that are not a prefix of the %d in the log", len(got), len(all))
	}
	if l2.LogEndOffset() < min(flushed, l.LogEndOffset()) {
		t.Fatalf("recovered up to %d, but %d was flushed", l2.LogEndOffset(), flushed)
	}
	if got, want := l2.EpochEntries(), scannedEpochs(t, l2); !slices.Equal(got, want) {
		t.Fatalf("epoch cache %v after the crash, a scan of the surviving log gives %v", got, want)
	}
	if _, err := l2.Append(testBatch{base: l2.LogEndOffset(), records: 1}.build()); err != nil {
		t.Fatalf("Append after recovery: %v", err)
	}
}

// readAllGaps reads the whole log like readAll, but stops when only a gap
// (offsets without batches, from compaction) is left before the log end.
func readAllGaps(t *testing.T, l *Log) []byte {
	t.Helper()
	var out []byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		b, err := l.Read(off, 1000, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		hs := headers(t, b)
		if len(hs) == 0 {
			break
		}
		out = append(out, b...)
		off = hs[len(hs)-1].LastOffset() + 1
	}
	return out
}

// TestRandomFaults injects one random fault (failed write, short write,
// failed fsync, truncate, open, rename or directory sync, on a random kind
// of file) into a random workload. Every error must be ErrStorage, the log
// must then refuse writes, and both a restart and a power loss must leave
// a prefix of what was appended that holds everything flushed.
func TestRandomFaults(t *testing.T) {
	rounds := 150
	if testing.Short() {
		rounds = 30
	}
	for seed := range uint64(rounds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomFault(t, seed) })
	}
}

func randomFault(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	cfg := testConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 200
	if rng.IntN(2) == 0 {
		cfg.FlushIntervalMessages = 1
	}
	mem := errorfs.NewMem()
	efs := errorfs.Wrap(mem)
	l := openTest(t, faultDir, cfg, Options{FS: efs})
	defer l.Close()

	ops := []errorfs.Op{errorfs.OpWrite, errorfs.OpSync, errorfs.OpTruncate, errorfs.OpOpen,
		errorfs.OpRename, errorfs.OpSyncDir, errorfs.OpRemove}
	files := []string{logSuffix, indexSuffix, timeIndexSuffix, epochCheckpointName, ""}
	faultAt := rng.IntN(40)
	var attempted []byte // every batch handed to Append, in log order
	var failed error
	floor := int64(math.MaxInt64)
	trace := func(format string, args ...any) {
		if testing.Verbose() {
			t.Logf(format, args...)
		}
	}
	defer func() {
		trace("segments %v LEO %d flushed %d", l.SegmentBaseOffsets(), l.LogEndOffset(), l.FlushedOffset())
	}()
	for step := 0; step < 60 && failed == nil; step++ {
		if step == faultAt {
			efs.Inject(errorfs.Rule{Op: ops[rng.IntN(len(ops))], PathContains: files[rng.IntN(len(files))],
				Count: 1 + rng.IntN(2), ShortBytes: rng.IntN(100) - 20})
		}
		switch r := rng.IntN(10); {
		case r < 6:
			base := l.LogEndOffset()
			b := testBatch{base: base, records: 1 + rng.IntN(3), epoch: int32(step / 6), ts: base, valueSize: rng.IntN(300)}.build()
			attempted = append(attempted, b...)
			res, err := l.Append(b)
			if err == nil && cfg.FlushIntervalMessages == 1 {
				err = l.WaitFlushed(res.LogEndOffset)
			}
			trace("append %d: %v -> LEO %d segs %v", base, err, l.LogEndOffset(), l.SegmentBaseOffsets())
			failed = err
		case r < 8:
			failed = l.Flush()
			trace("flush: %v", failed)
		default:
			if leo := l.LogEndOffset(); leo > 0 {
				// Truncate to a batch boundary of what was attempted.
				cut := cutPoint(attempted, rng)
				failed = l.TruncateTo(cut.offset)
				trace("truncate %d: %v", cut.offset, failed)
				if failed == nil {
					attempted = attempted[:cut.pos]
				} else {
					// A truncation that failed half way may have cut.
					floor = cut.offset
				}
			}
		}
	}
	flushed := min(l.FlushedOffset(), floor)
	if failed != nil {
		if !errors.Is(failed, ErrStorage) {
			t.Fatalf("fault surfaced as %v, not ErrStorage (injected %v)", failed, efs.Injected())
		}
		// A retryable failure (retry.go) leaves the log writable:
		// TestFaultRollFails and TestFaultNoSpaceThenFreed retry.
		if l.Offline() != nil {
			if _, err := l.Append(testBatch{base: l.LogEndOffset(), records: 1}.build()); !errors.Is(err, ErrStorage) {
				t.Fatalf("Append after a storage failure: %v", err)
			}
		}
	}
	l.Close()
	efs.Clear()
	for _, fs := range []*errorfs.MemFS{mem.CrashClone(), mem} {
		l2 := openTest(t, faultDir, testConfig(), Options{FS: fs})
		got := readAllGaps(t, l2)
		if !bytes.HasPrefix(attempted, got) {
			t.Fatalf("recovered %d bytes that are not a prefix of the %d appended (injected %v)", len(got), len(attempted), efs.Injected())
		}
		if l2.LogEndOffset() < flushed {
			t.Fatalf("recovered up to %d, but %d was flushed (injected %v)", l2.LogEndOffset(), flushed, efs.Injected())
		}
		if got, want := l2.EpochEntries(), scannedEpochs(t, l2); !slices.Equal(got, want) {
			t.Fatalf("epoch cache %v after restart, a scan of the log gives %v (injected %v)", got, want, efs.Injected())
		}
		if _, err := l2.Append(testBatch{base: l2.LogEndOffset(), records: 1}.build()); err != nil {
			t.Fatalf("Append after restart: %v", err)
		}
		l2.Close()
	}
}

type cut struct {
	offset int64
	pos    int
}

// cutPoint picks a random batch boundary in a concatenation of batches.
func cutPoint(data []byte, rng *rand.Rand) cut {
	var cuts []cut
	for p := 0; p+batch.HeaderSize <= len(data); {
		h, err := batch.ParseHeader(data[p:])
		if err != nil {
			break
		}
		cuts = append(cuts, cut{h.BaseOffset, p})
		p += h.Size()
	}
	if len(cuts) == 0 {
		return cut{}
	}
	return cuts[rng.IntN(len(cuts))]
}
