//go:build linux

package log

import (
	"bytes"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestDropBehind: with write-behind and drop-behind on, once the flusher
// has caught up the active segment's pages more than DropBehindBytes
// behind what was written back are out of the page cache, the last
// DropBehindBytes are still in it, and every record reads back as it was
// appended. With drop-behind off (the negative control) the early pages
// stay cached. Residency is the kernel's answer (mincore of the segment
// mapped read-only).
func TestDropBehind(t *testing.T) {
	const keep = 4 << 20
	for _, tc := range []struct {
		name string
		keep int64
	}{{"on", keep}, {"off", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			l, cfg := openDropBehind(t, 64<<20, tc.keep)
			defer l.Close()
			batches := appendN(t, l, 24, 1, 0, 1000, 1<<20-333)
			l.mu.Lock()
			path, size := l.active().logPath, l.active().size
			l.mu.Unlock()
			early := func() float64 { return residentShare(t, path, 0, 8<<20) }
			if tc.keep > 0 {
				// The drop follows the wait for the window before the
				// last one: poll until the flusher has caught up.
				waitFor(t, func() bool { return early() < 0.1 })
				if got := residentShare(t, path, size-keep+(1<<20), size-(1<<20)); got < 0.5 {
					t.Errorf("%.2f of the last %d bytes cached: want them kept", got, keep)
				}
			} else {
				waitFor(t, writtenBack(l, cfg))
				if got := early(); got < 0.5 {
					t.Errorf("drop-behind off: %.2f of the first 8 MiB cached, want them kept", got)
				}
			}
			readsBack(t, l, batches)
		})
	}
}

// TestDropBehindRolled: a partition keeps about its last DropBehindBytes
// cached, not that much of every segment it rolled: once the active
// segment passes DropBehindBytes, the tail the segment before it kept is
// dropped too.
func TestDropBehindRolled(t *testing.T) {
	l, cfg := openDropBehind(t, 8<<20, 2<<20)
	defer l.Close()
	caughtUp := writtenBack(l, cfg)
	// Batches of about 1 MiB: 3 rolled segments of 8 and an active one
	// of 4, whose written-back pages already pass DropBehindBytes. The
	// write-behind may have taken those 4 MiB as one range; the next two
	// appends, each once it has caught up, make it wait for that range
	// and drop behind it.
	batches := appendN(t, l, 28, 1, 0, 1000, 1<<20-333)
	// Only fsynced segments are dropped: wait for the rolls' flushes.
	waitFor(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.flushed >= l.active().base
	})
	for range 2 {
		waitFor(t, caughtUp)
		batches = append(batches, appendN(t, l, 1, 1, 0, 1000, 1<<20-333)...)
	}
	waitFor(t, caughtUp)
	l.mu.Lock()
	var rolled []string
	for _, s := range l.segments[:len(l.segments)-1] {
		rolled = append(rolled, s.logPath)
	}
	l.mu.Unlock()
	if len(rolled) != 3 {
		t.Fatalf("%d rolled segments, want 3", len(rolled))
	}
	for _, path := range rolled {
		waitFor(t, func() bool { return residentShare(t, path, 0, cfg.SegmentBytes-(1<<20)) < 0.1 })
	}
	readsBack(t, l, batches)
}

// TestDropBehindAcrossRoll: a roll does not stop the drop. While the
// new segment has written back less than DropBehindBytes, the pages of
// the segment the roll closed that are further than that from the log's
// end are dropped too, so the new segment's first pages reuse their
// memory. Negative control (dropStopsAtRoll): the closed segment's last
// DropBehindBytes stay cached until the new segment passes
// DropBehindBytes.
func TestDropBehindAcrossRoll(t *testing.T) {
	for _, tc := range []struct {
		name  string
		knobs knobs
	}{{"slides", knobs{}}, {"stops at the roll", knobs{dropStopsAtRoll: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			// Segments of 8 MiB keep 7 batches of about 1 MiB; keeping
			// 6 MiB, the closed segment dropped only its first MiB or
			// so before the roll.
			l, cfg := openDropBehind(t, 8<<20, 6<<20, tc.knobs)
			defer l.Close()
			caughtUp := writtenBack(l, cfg)
			// One batch at a time, each once the write-behind has
			// caught up: every window of the closed segment but its
			// last is written back before the roll, so the pages the
			// slide reaches are clean whenever it reaches them.
			var batches [][]byte
			for range 12 {
				waitFor(t, caughtUp)
				batches = append(batches, appendN(t, l, 1, 1, 0, 1000, 1<<20-333)...)
			}
			waitFor(t, caughtUp)
			l.mu.Lock()
			if len(l.segments) != 2 {
				l.mu.Unlock()
				t.Fatalf("%d segments, want 2", len(l.segments))
			}
			closed, active := l.segments[0].logPath, l.active().size
			l.mu.Unlock()
			if active >= 6<<20 {
				t.Fatalf("active segment %d bytes: the test needs less than DropBehindBytes in it", active)
			}
			// About 5 MiB into the new segment, of which at least 3
			// written back: the drop point is at most 3 MiB before the
			// closed segment's end, about 4 MiB into it.
			middle := func() float64 { return residentShare(t, closed, 3<<19, 7<<19) }
			if !tc.knobs.dropStopsAtRoll {
				waitFor(t, func() bool { return middle() < 0.1 })
			} else if got := middle(); got < 0.5 {
				t.Errorf("%.2f of the closed segment's [1.5, 3.5) MiB cached, want them kept", got)
			}
			readsBack(t, l, batches)
		})
	}
}

// TestDropBehindHeldByReader: a reader a little further behind the end
// than DropBehindBytes holds the drop behind where it reads, so the pages
// it reads next stay cached; once it stops reading, the drop catches up
// and drops what it held. The observable is the drop's cursor
// (droppedTo): residency ahead of a reader is the kernel's readahead's
// (read_ahead_kb) as much as the drop's. Negative control
// (dropIgnoresReaders): the drop passes the reader.
func TestDropBehindHeldByReader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		knobs knobs
	}{{"held", knobs{}}, {"readers ignored", knobs{dropIgnoresReaders: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			const keep = 2 << 20
			l, cfg := openDropBehind(t, 64<<20, keep, tc.knobs)
			defer l.Close()
			caughtUp := writtenBack(l, cfg)
			cursor := func() (droppedTo, size int64) {
				l.mu.Lock()
				defer l.mu.Unlock()
				return l.active().droppedTo, l.active().size
			}
			// Batches of about 1 MiB, one record each, one at a time; from
			// the 9th on, before each, a reader reads the batch 6 behind
			// the end: about 6 MiB, three times DropBehindBytes.
			var batches [][]byte
			next := int64(0) // where the batch after the one read last starts
			for i := range 18 {
				waitFor(t, caughtUp)
				if i >= 8 {
					off := int64(i - 6)
					if _, err := l.Read(off, 1<<20, true); err != nil {
						t.Fatal(err)
					}
					next = int64(len(bytes.Join(batches[:off+1], nil)))
				}
				batches = append(batches, appendN(t, l, 1, 1, 0, 1000, 1<<20-333)...)
			}
			waitFor(t, caughtUp)
			droppedTo, size := cursor()
			if tc.knobs.dropIgnoresReaders {
				if droppedTo <= next {
					t.Fatalf("readers ignored: dropped to %d, not past the reader's next read at %d", droppedTo, next)
				}
				return
			}
			if droppedTo > next {
				t.Fatalf("dropped to %d, past the reader's next read at %d (end %d)", droppedTo, next, size)
			}
			// The reader stops: past the hold, the next appends drop what
			// it held, up to DropBehindBytes and a window or two behind.
			time.Sleep(2*holdWindow + 100*time.Millisecond)
			for range 2 {
				waitFor(t, caughtUp)
				batches = append(batches, appendN(t, l, 1, 1, 0, 1000, 1<<20-333)...)
			}
			waitFor(t, caughtUp)
			droppedTo, size = cursor()
			if droppedTo < size-keep-3*cfg.WritebackBytes {
				t.Fatalf("hold over: dropped to %d of %d, want within %d of the end", droppedTo, size, keep+3*cfg.WritebackBytes)
			}
			l.mu.Lock()
			path := l.active().logPath
			l.mu.Unlock()
			if got := residentShare(t, path, next, droppedTo); got > 0.1 {
				t.Errorf("%.2f of the held pages still cached after the hold", got)
			}
			readsBack(t, l, batches)
		})
	}
}

// readsBack fails t unless l reads back exactly the batches appended.
func readsBack(t *testing.T, l *Log, batches [][]byte) {
	t.Helper()
	if got, want := readAll(t, l), bytes.Join(batches, nil); !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes differing from the %d appended", len(got), len(want))
	}
}

// writtenBack reports whether the write-behind has caught up with l's
// active segment: less than a window appended and not handed over.
func writtenBack(l *Log, cfg Config) func() bool {
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.active().size-l.active().wbFrom < cfg.WritebackBytes
	}
}

// openDropBehind opens a log in a temp dir with segments of segmentBytes,
// a 1 MiB write-behind window, drop-behind keeping keep bytes and the
// knobs k, if any; it
// skips the test on tmpfs, whose pages cannot be dropped.
func openDropBehind(t *testing.T, segmentBytes, keep int64, k ...knobs) (*Log, Config) {
	t.Helper()
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type == unix.TMPFS_MAGIC {
		t.Skipf("%s is on tmpfs (or statfs failed: %v): its pages cannot be dropped", dir, err)
	}
	cfg := testConfig()
	cfg.SegmentBytes = segmentBytes
	cfg.WritebackBytes = 1 << 20
	cfg.DropBehindBytes = keep
	var opts Options
	if len(k) > 0 {
		opts.private = k[0]
	}
	return openTest(t, dir, cfg, opts), cfg
}

// residentShare is the share of the pages of [from, to) of the file at
// path that are in the page cache.
func residentShare(t *testing.T, path string, from, to int64) float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	from &^= pageSize - 1 // mmap's offset is whole pages
	mem, err := unix.Mmap(int(f.Fd()), from, int(to-from), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	vec := make([]byte, (len(mem)+pageSize-1)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	in := 0
	for _, v := range vec {
		in += int(v & 1)
	}
	return float64(in) / float64(len(vec))
}
