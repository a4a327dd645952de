package share

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A connection's close ends the share sessions opened on it and releases
// their records; a session reopened on another connection is not ended
// by the old one's close, and a connection is watched once.
func TestConnClosedReleasesSessions(t *testing.T) {
	c, _ := newCoord(t, 1)
	tp := TP{topicA, 0}
	connA, connB := new(int), new(int)
	open := func(member string, conn any) bool {
		t.Helper()
		if _, e := c.UpdateSession("g", member, 0, []TP{tp}, nil, false); e != nil {
			t.Fatal(e)
		}
		return c.BindSession("g", member, conn)
	}
	if !open("m1", connA) {
		t.Fatal("a new connection is not watched")
	}
	if open("m2", connA) {
		t.Fatal("a connection watched twice")
	}
	c.Prepare("g", tp, cfg(), LogView{Limit: 10})
	if got, _ := c.Acquire("g", tp, "m1", 3, 0, 10, log(0, 10)); len(got) == 0 {
		t.Fatal("nothing acquired")
	}
	if got, _ := c.Acquire("g", tp, "m2", 3, 3, 10, log(0, 10)); len(got) == 0 {
		t.Fatal("nothing acquired")
	}
	// m2 reopens its session on connB: connA's close leaves it.
	if !open("m2", connB) {
		t.Fatal("connB not watched")
	}
	c.ConnClosed(connA)
	if from, _ := c.Prepare("g", tp, cfg(), LogView{Limit: 10}); from != 0 {
		t.Fatalf("after connA closed fetch offset %d, want 0 (m1's released)", from)
	}
	if _, e := c.UpdateSession("g", "m1", 1, nil, nil, false); e != kerr.ShareSessionNotFound {
		t.Fatalf("m1's session after its connection closed: %v", e)
	}
	if _, e := c.UpdateSession("g", "m2", 1, nil, nil, false); e != nil {
		t.Fatalf("m2's session on connB: %v", e)
	}
	c.ConnClosed(connB)
	if _, e := c.UpdateSession("g", "m2", 2, nil, nil, false); e != kerr.ShareSessionNotFound {
		t.Fatalf("m2's session after connB closed: %v", e)
	}
}
