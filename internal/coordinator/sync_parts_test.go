package coordinator

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestSyncPartsWaitsForAll: every partition's wait runs (in parallel, or
// in order with sequential), syncParts returns only after all of them
// have returned, a slow one included (an answer must not go out while
// one of its partitions' fsyncs runs, even after another partition's
// failed), and the error is the lowest failed partition's.
func TestSyncPartsWaitsForAll(t *testing.T) {
	for _, sequential := range []bool{false, true} {
		var mu sync.Mutex
		done := map[int32]int64{}
		var order []int32
		points := syncPoint{{7, 70}, {2, 20}, {40, 400}, {3, 30}}
		err := syncParts(points, sequential, func(p int32, end int64) error {
			if p == 7 {
				time.Sleep(50 * time.Millisecond) // the slow fsync
			}
			mu.Lock()
			defer mu.Unlock()
			done[p] = end
			order = append(order, p)
			if p == 3 || p == 40 {
				return fmt.Errorf("partition %d failed", p)
			}
			return nil
		})
		mu.Lock()
		if len(done) != 4 && !sequential {
			t.Fatalf("parallel: returned with %d of 4 partitions' waits done (%v)", len(done), order)
		}
		if err == nil || err.Error() != "partition 3 failed" {
			t.Fatalf("sequential=%v: error %v, want partition 3's", sequential, err)
		}
		for p, end := range done {
			if end != int64(p)*10 {
				t.Fatalf("partition %d waited up to %d", p, end)
			}
		}
		if sequential && fmt.Sprint(order) != "[2 3]" {
			t.Fatalf("sequential order %v, want [2 3] (stopping at the first failure)", order)
		}
		mu.Unlock()
	}
	if err := syncParts(nil, false, func(int32, int64) error { return errors.New("called") }); err != nil {
		t.Fatal(err)
	}
}
