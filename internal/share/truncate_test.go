package share

import "testing"

// A log truncation at end: a SPSO above it comes down to it with an
// empty window; a window reaching past it loses the offsets at or past
// it (they are delivered again as new records); a window below it is
// untouched.
func TestPartitionTruncate(t *testing.T) {
	c, _ := newCoord(t, 1)
	tp := TP{topicA, 0}
	c.Prepare("g", tp, cfg(), LogView{Limit: 10})
	c.Acquire("g", tp, "m", 10, 0, 10, log(0, 10)) // 0..9 acquired
	if n, err := c.Truncate(map[TP]int64{tp: 6}); err != nil || n != 1 {
		t.Fatalf("truncate at 6: %d %v", n, err)
	}
	p := c.groups["g"].parts[tp]
	if p.Start() != 0 || p.End() != 6 {
		t.Fatalf("after the cut at 6: start %d end %d, want 0 and 6", p.Start(), p.End())
	}
	if s, _ := p.StateOf(7); s != Available {
		t.Fatalf("offset 7 past the cut is %v", s)
	}
	if n, _ := c.Truncate(map[TP]int64{tp: 8}); n != 0 {
		t.Fatal("a cut past the window changed it")
	}
	p.Reset(20)
	if n, _ := c.Truncate(map[TP]int64{tp: 11}); n != 1 || p.Start() != 11 || p.InFlight() != 0 {
		t.Fatalf("SPSO 20 cut at 11: start %d, %d in flight", p.Start(), p.InFlight())
	}
	if n, _ := c.Truncate(map[TP]int64{{topicA, 1}: 0}); n != 0 {
		t.Fatal("another partition's cut changed something")
	}
}
