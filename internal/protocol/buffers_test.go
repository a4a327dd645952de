package protocol

import (
	"runtime"
	"testing"
	"time"
)

func TestBufferClasses(t *testing.T) {
	for c := range numClasses {
		n := classSize(c)
		if classAtLeast(n) != c || classAtMost(n) != c {
			t.Fatalf("class %d size %d: at least %d, at most %d", c, n, classAtLeast(n), classAtMost(n))
		}
		if c > 0 && classSize(c-1) >= n {
			t.Fatalf("class sizes not increasing at %d", c)
		}
	}
	for _, n := range []int{1<<16 + 1, 1 << 20, 1<<20 + 1, 16<<20 + 300, 100 << 20, 1 << 27} {
		c := classAtLeast(n)
		if s := classSize(c); s < n || s > n+n/4 {
			t.Errorf("classAtLeast(%d) = size %d", n, s)
		}
		if s := classSize(classAtMost(n)); s > n {
			t.Errorf("classAtMost(%d) = size %d", n, s)
		}
	}
}

func TestGetBuffer(t *testing.T) {
	for _, n := range []int{0, 100, 1 << 16, 1<<16 + 1, 5 << 20, 200 << 20} {
		b := getBuffer(n)
		if len(b) != 0 || cap(b) < n {
			t.Fatalf("getBuffer(%d): len %d cap %d", n, len(b), cap(b))
		}
		putBuffer(append(b, 1))
	}
	// A buffer filed under the class its capacity reaches serves any size
	// of that class.
	putBuffer(make([]byte, 0, 3<<20))
	if b := getBuffer(3 << 20); cap(b) < 3<<20 {
		t.Fatalf("cap %d", cap(b))
	}
}

func TestRequestBuffers(t *testing.T) {
	r := &Request{}
	small := r.Buffer(100)
	large := r.Buffer(2 << 20)
	if cap(small) < 100 || cap(large) < 2<<20 || len(r.buffers) != 1 {
		t.Fatalf("caps %d %d, %d kept", cap(small), cap(large), len(r.buffers))
	}
	r.Release()
	if len(r.buffers) != 0 {
		t.Fatalf("%d kept after Release", len(r.buffers))
	}
	r.Release() // twice is harmless
}

// A released large buffer survives a GC as a spare (a sync.Pool alone
// would lose it after two), and the spares of a class nobody uses are
// dropped after GCs: an idle broker pins nothing.
func TestSpareBuffersAcrossGCs(t *testing.T) {
	const n = 3 << 20
	c := classAtLeast(n)
	b := getBuffer(n)
	b = append(b, 7)
	putBuffer(b)
	runtime.GC()
	if got := getBuffer(n); cap(got) < n || &got[:1][0] != &b[0] {
		t.Fatalf("the spare was not kept across a GC")
	}
	putBuffer(b)
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		spares[c].mu.Lock()
		left := len(spares[c].bufs)
		spares[c].mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spares still held after GCs with no use", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The spares never hold more than spareBudget bytes.
func TestSpareBudget(t *testing.T) {
	const n = 100 << 20
	var bufs [][]byte
	for range 4 {
		bufs = append(bufs, getBuffer(n))
	}
	for _, b := range bufs {
		putBuffer(b)
	}
	spareMu.Lock()
	held := spareBytes
	spareMu.Unlock()
	if held > spareBudget {
		t.Fatalf("%d bytes held, budget %d", held, spareBudget)
	}
	for range 4 {
		getBuffer(n) // empty the class for the other tests
	}
}
