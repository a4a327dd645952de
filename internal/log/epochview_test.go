package log

import (
	"slices"
	"testing"
)

// TestEpochViewAnswersAsTheTruncatedLog: a view of the log truncated (in
// the view) to each batch boundary answers EndOffsetFor and Entries exactly as
// the log itself answers EndOffsetForEpoch and EpochEntries after a real
// TruncateTo to that offset; the view never changes the log.
func TestEpochViewAnswersAsTheTruncatedLog(t *testing.T) {
	build := func() *Log {
		l := openTest(t, t.TempDir(), testConfig(), Options{})
		appendN(t, l, 5, 2, 0, 0, 10) // e0 at 0
		appendN(t, l, 5, 2, 2, 0, 10) // e2 at 10
		appendN(t, l, 5, 2, 5, 0, 10) // e5 at 20
		return l
	}
	l := build()
	defer l.Close()
	v := l.EpochView()
	if v.LogStart() != 0 || v.End() != 30 || !slices.Equal(v.Entries(), l.EpochEntries()) || v.Empty() {
		t.Fatalf("view %d..%d %v", v.LogStart(), v.End(), v.Entries())
	}
	// Batches of two records: the cuts are batch boundaries, where a
	// truncation leaves the log ending exactly at the cut.
	for _, cut := range []int64{30, 28, 22, 20, 18, 12, 10, 8, 2, 0} {
		tv := v.TruncatedTo(cut)
		real := build()
		if err := real.TruncateTo(cut); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tv.Entries(), real.EpochEntries()) {
			t.Errorf("cut %d: view entries %v, log %v", cut, tv.Entries(), real.EpochEntries())
		}
		for e := int32(-1); e <= 6; e++ {
			ve, vo := tv.EndOffsetFor(e)
			le, lo := real.EndOffsetForEpoch(e)
			if ve != le || vo != lo {
				t.Errorf("cut %d epoch %d: view %d,%d log %d,%d", cut, e, ve, vo, le, lo)
			}
		}
		if tv.Empty() != (cut == 0) {
			t.Errorf("cut %d: empty %v", cut, tv.Empty())
		}
		real.Close()
	}
	if got := l.EpochEntries(); !slices.Equal(got, []EpochEntry{{0, 0}, {2, 10}, {5, 20}}) || l.LogEndOffset() != 30 {
		t.Fatalf("the view changed the log: %v end %d", got, l.LogEndOffset())
	}
	if !slices.Equal(v.Entries(), []EpochEntry{{0, 0}, {2, 10}, {5, 20}}) {
		t.Fatalf("truncating a view changed it: %v", v.Entries())
	}
}
