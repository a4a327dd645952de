package log

import (
	"testing"
	"time"
)

// TestWriteBehind: as the active segment fills, the background flusher
// hands each window of whole pages to the kernel for writeback: the
// handed-over end stays page-aligned, never passes the data, and follows
// it to within a window; after a truncation below it, it comes back to
// the data. Negative control: without the kick in writeRunLocked it
// stays at 0.
func TestWriteBehind(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 64 << 20
	l := openTest(t, t.TempDir(), cfg, Options{})
	defer l.Close()
	appendN(t, l, 40, 1, 0, 1000, 1<<20-333) // odd sizes: ends mid-page
	handed := func() (from, size int64) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.active().wbFrom, l.active().size
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		from, size := handed()
		if from%pageSize != 0 || from > size {
			t.Fatalf("handed over up to %d of %d bytes: want whole pages within the data", from, size)
		}
		if size-from < cfg.WritebackBytes {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handed over up to %d of %d bytes: want within %d bytes of the data", from, size, cfg.WritebackBytes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if from, _ := handed(); from == 0 {
		t.Fatal("nothing handed over")
	}
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1, 1, 0, 2000, 100)
	l.takeWriteback()
	if from, size := handed(); from > size || from%pageSize != 0 {
		t.Fatalf("after a truncation: handed over up to %d of %d bytes", from, size)
	}
}

// TestWriteBehindOff: with WritebackBytes 0 (log.writeback.bytes=0) nothing
// is handed to the kernel however much is appended.
func TestWriteBehindOff(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 64 << 20
	cfg.WritebackBytes = 0
	l := openTest(t, t.TempDir(), cfg, Options{})
	defer l.Close()
	appendN(t, l, 40, 1, 0, 1000, 1<<20-333)
	time.Sleep(200 * time.Millisecond) // a kick, had there been one, reaches the flusher
	l.mu.Lock()
	from := l.active().wbFrom
	l.mu.Unlock()
	if from != 0 {
		t.Fatalf("handed over up to %d bytes with write-behind off", from)
	}
}
