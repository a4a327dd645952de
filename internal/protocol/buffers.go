package protocol

import (
	"math/bits"
	"runtime"
	"sync"
)

// Large byte buffers (response frames, Fetch record bytes) are pooled by
// size class so that a consumer's next Fetch neither allocates nor zeroes
// (page-faults) tens of MiB. Classes are quarter octaves from 64 KiB to
// 128 MiB: class c holds buffers whose capacity is at least classSize(c),
// so a buffer is at most 25 % larger than asked for.
//
// Each class keeps released buffers in a spare list first (up to
// spareBudget bytes over all classes), then in a sync.Pool. A sync.Pool is
// emptied after two GCs, and a consumer's own allocations (kgo's response
// buffers, its records) trigger a GC every response or two, so most large
// buffers were lost between two Fetches. Spare lists survive GCs while
// they are used: at each GC a class not used since the previous one drops
// its spares, so an idle broker pins nothing after two GCs (the runtime
// forces one every two minutes).
const (
	minPooledShift = 16 // 64 KiB: smaller buffers are allocated
	maxPooledShift = 27 // 128 MiB: larger ones are not kept
	classesPerOct  = 4
	numClasses     = (maxPooledShift-minPooledShift)*classesPerOct + 1
	spareBudget    = 256 << 20
)

var (
	bufferPools [numClasses]sync.Pool // *[]byte
	spares      [numClasses]spareList

	spareMu    sync.Mutex // guards spareBytes
	spareBytes int
)

// spareList is one class's spare buffers, newest last.
type spareList struct {
	mu   sync.Mutex // guards the fields below
	bufs [][]byte
	used bool // taken from or added to since the last GC
}

func (l *spareList) pop() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.used = true
	n := len(l.bufs)
	if n == 0 {
		return nil
	}
	b := l.bufs[n-1]
	l.bufs[n-1] = nil
	l.bufs = l.bufs[:n-1]
	releaseSpareBytes(cap(b))
	return b
}

// push keeps b unless the budget is spent (false).
func (l *spareList) push(b []byte) bool {
	if !reserveSpareBytes(cap(b)) {
		return false
	}
	l.mu.Lock()
	l.bufs = append(l.bufs, b)
	l.used = true
	l.mu.Unlock()
	return true
}

// trim drops the spares of a class not used since the last call.
func (l *spareList) trim() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.used {
		l.used = false
		return
	}
	for i, b := range l.bufs {
		releaseSpareBytes(cap(b))
		l.bufs[i] = nil
	}
	l.bufs = nil
}

func reserveSpareBytes(n int) bool {
	spareMu.Lock()
	defer spareMu.Unlock()
	if spareBytes+n > spareBudget {
		return false
	}
	spareBytes += n
	return true
}

func releaseSpareBytes(n int) {
	spareMu.Lock()
	spareBytes -= n
	spareMu.Unlock()
}

// gcSentinel is allocated once per GC cycle; its cleanup, run after the GC
// that finds it unreachable, trims the spare lists and arms the next one.
// It holds a pointer so that it is not a tiny allocation (whose cleanup
// may never run).
type gcSentinel struct{ _ *byte }

func init() { armSpareTrim() }

func armSpareTrim() {
	runtime.AddCleanup(&gcSentinel{}, func(struct{}) {
		for i := range spares {
			spares[i].trim()
		}
		armSpareTrim()
	}, struct{}{})
}

// classSize is the capacity of the buffers class c hands out.
func classSize(c int) int {
	oct, q := c/classesPerOct, c%classesPerOct
	base := 1 << (minPooledShift + oct)
	return base + q*(base/classesPerOct)
}

// classAtLeast is the smallest class whose size is >= n (n > 64 KiB,
// n <= 128 MiB).
func classAtLeast(n int) int {
	c := classAtMost(n)
	if classSize(c) < n {
		c++
	}
	return c
}

// classAtMost is the largest class whose size is <= n (n >= 64 KiB).
func classAtMost(n int) int {
	shift := bits.Len(uint(n)) - 1 // 2^shift <= n
	if shift >= maxPooledShift {
		return numClasses - 1
	}
	base := 1 << shift
	q := (n - base) / (base / classesPerOct)
	return (shift-minPooledShift)*classesPerOct + q
}

// getBuffer returns an empty slice with capacity >= n, pooled when n is
// over 64 KiB. Its bytes are not zeroed.
func getBuffer(n int) []byte {
	if n <= 1<<minPooledShift || n > 1<<maxPooledShift {
		return make([]byte, 0, n)
	}
	c := classAtLeast(n)
	if b := spares[c].pop(); b != nil {
		return b[:0]
	}
	if p, _ := bufferPools[c].Get().(*[]byte); p != nil {
		return (*p)[:0]
	}
	return make([]byte, 0, classSize(c))
}

// putBuffer hands buf to the pools; the caller must not use it again.
// Buffers of 64 KiB or less are left to the GC.
func putBuffer(buf []byte) {
	if cap(buf) < 1<<minPooledShift || cap(buf) > 1<<maxPooledShift+1<<(maxPooledShift-2) {
		return
	}
	buf = buf[:0]
	c := classAtMost(cap(buf))
	if spares[c].push(buf) {
		return
	}
	bufferPools[c].Put(&buf)
}
