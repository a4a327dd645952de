package log

import (
	"bytes"
	"fmt"
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
				b := testBatch{base: base, records: recs, epoch: int32(rng.IntN(3)), ts: int64(base), valueSize: rng.IntN(400)}.build()
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
