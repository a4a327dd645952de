package log

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func TestReadAppendReusesBuffer(t *testing.T) {
	l := openTest(t, t.TempDir(), testConfig(), Options{})
	defer l.Close()
	batches := appendN(t, l, 40, 4, 0, 0, 200)
	prefix := []byte("prefix")
	out, err := l.ReadAppend(slices.Clone(prefix), 8, math.MaxInt64, 1, true)
	if err != nil || !bytes.Equal(out, slices.Concat(prefix, batches[2])) {
		t.Fatalf("ReadAppend: %v", err)
	}
	buf := make([]byte, 0, 64<<10)
	allocs := testing.AllocsPerRun(200, func() {
		var err error
		buf, err = l.ReadAppend(buf[:0], 77, math.MaxInt64, 8<<10, true)
		if err != nil || len(buf) == 0 {
			t.Fatal(err)
		}
	})
	// The scanner struct and a pread's bookkeeping; no data buffers.
	if allocs > 4 {
		t.Fatalf("%v allocations per ReadAppend into a reused buffer", allocs)
	}
}

// TestIdleMemory: an open partition with one small segment costs a few
// KiB of heap, not preallocated index buffers (the issue: 1,000 idle
// partitions under 200 MiB RSS).
func TestIdleMemory(t *testing.T) {
	const partitions = 100
	dir := t.TempDir()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	logs := make([]*Log, 0, partitions)
	for i := range partitions {
		l := openTest(t, filepath.Join(dir, fmt.Sprint(i)), DefaultConfig(), Options{})
		appendN(t, l, 1, 1, 0, 0, 100)
		logs = append(logs, l)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / partitions
	t.Logf("%.0f bytes of heap per idle partition", per)
	if per > 32<<10 {
		t.Errorf("%.0f bytes of heap per idle partition", per)
	}
	for _, l := range logs {
		l.Close()
	}
}
