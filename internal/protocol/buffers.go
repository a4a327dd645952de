package protocol

import (
	"math/bits"
	"sync"
)

// Large byte buffers (response frames, Fetch record bytes) are pooled by
// size class so that a consumer's next Fetch neither allocates nor zeroes
// (page-faults) tens of MiB. Classes are quarter octaves from 64 KiB to
// 128 MiB: class c holds buffers whose capacity is at least classSize(c),
// so a buffer is at most 25 % larger than asked for. The pools are
// sync.Pools: nothing is pinned while the load is idle, the GC frees them.
const (
	minPooledShift = 16 // 64 KiB: smaller buffers are allocated
	maxPooledShift = 27 // 128 MiB: larger ones are not kept
	classesPerOct  = 4
	numClasses     = (maxPooledShift-minPooledShift)*classesPerOct + 1
)

var bufferPools [numClasses]sync.Pool // *[]byte

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
	bufferPools[classAtMost(cap(buf))].Put(&buf)
}
