package drill

import (
	"bytes"
	"slices"
	"testing"

	"github.com/minibroker/minibroker/internal/timeplot"
)

// TestAnalyse: the report's arithmetic on a hand-made run. Records 1–4
// acknowledged on A, 5–6 on B; B holds 1, 2, 5 (3 and 4 lost at the
// failover, 6 lost on B); the group saw 1, 2 (twice) and 5.
func TestAnalyse(t *testing.T) {
	acked := map[int64]string{1: "A", 2: "A", 3: "A", 4: "A", 5: "B", 6: "B"}
	seen := map[int64]int{1: 1, 2: 2, 5: 1}
	onB := map[int64]bool{1: true, 2: true, 5: true}
	events := []Event{
		{AtMs: 100, Kind: "acked", Cluster: "A", Seq: 1},
		{AtMs: 500, Kind: "acked", Cluster: "B", Seq: 5},
		{AtMs: 700, Kind: "consumed", Cluster: "B", Seq: 5},
	}
	for _, predicted := range []int64{2, 1} {
		rep := &Report{final: "B", StopAtMs: 400, EndMs: 900, PredictedLoss: predicted}
		rep.analyse(acked, seen, onB, events)
		if !slices.Equal(rep.LostAtFailover, []int64{3, 4}) || !slices.Equal(rep.LostOnB, []int64{6}) {
			t.Fatalf("lost at failover %v, on B %v", rep.LostAtFailover, rep.LostOnB)
		}
		if rep.AckedOnA != 4 || rep.AckedOnB != 2 || rep.Consumed != 4 || len(rep.Gaps) != 0 {
			t.Fatalf("acked %d/%d consumed %d gaps %v", rep.AckedOnA, rep.AckedOnB, rep.Consumed, rep.Gaps)
		}
		if rep.RTOProduceMs != 100 || rep.RTOConsumeMs != 300 {
			t.Fatalf("RTO produce %d consume %d, want 100 and 300", rep.RTOProduceMs, rep.RTOConsumeMs)
		}
		// The loss on B always fails the drill; the loss at failover only
		// when the plan predicted fewer offsets.
		if rep.Passed || len(rep.Problems) != int(3-predicted) {
			t.Fatalf("predicted %d: passed %v, problems %q", predicted, rep.Passed, rep.Problems)
		}
	}

	// Nothing lost, one record never consumed: a gap, marked on the timeline.
	rep := &Report{final: "B", StopAtMs: 400, EndMs: 900}
	rep.analyse(map[int64]string{1: "A", 5: "B"}, map[int64]int{5: 1}, map[int64]bool{1: true, 5: true}, events)
	if !slices.Equal(rep.Gaps, []int64{1}) || rep.Passed {
		t.Fatalf("gaps %v passed %v", rep.Gaps, rep.Passed)
	}
	if last := rep.Timeline[len(rep.Timeline)-1]; last.Kind != "gap" || last.Seq != 1 {
		t.Fatalf("timeline ends with %+v, want the gap", last)
	}

	// A clean run passes.
	rep = &Report{final: "B", StopAtMs: 400, EndMs: 900}
	rep.analyse(map[int64]string{1: "A", 5: "B"}, map[int64]int{1: 1, 5: 1}, map[int64]bool{1: true, 5: true}, events)
	if !rep.Passed {
		t.Fatalf("clean run failed: %q", rep.Problems)
	}

	// The picture is well-formed SVG with the legend's names, the axis
	// labels with their units and the events' labels, and draws the
	// per-second counts as steps: each segment of A's and B's lines is
	// horizontal or vertical.
	var buf bytes.Buffer
	if err := rep.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	texts, paths := svgContents(t, buf.Bytes())
	for _, want := range []string{"A", "B", "acknowledged to the producer", "read by the group",
		"records per second (count in each 1 s)", "time since the drill started (s)",
		"mirror stop", "first produce on B (+100 ms)", "first consume on B (+300 ms)"} {
		if !slices.Contains(texts, want) {
			t.Errorf("no text %q in %q", want, texts)
		}
	}
	for _, col := range []string{"#1f77b4", "#d62728"} {
		if len(paths[col]) < 2 { // the legend's thumbnail and the counts
			t.Fatalf("%d paths of colour %s", len(paths[col]), col)
		}
		for _, pts := range paths[col] {
			for i := 1; i < len(pts); i++ {
				if pts[i][0] != pts[i-1][0] && pts[i][1] != pts[i-1][1] {
					t.Fatalf("%s: a sloped segment %v → %v", col, pts[i-1], pts[i])
				}
			}
		}
	}
}

// svgContents parses an SVG (timeplot.ReadSVG): the texts, and each
// stroked path's points by stroke colour.
func svgContents(t *testing.T, b []byte) (texts []string, paths map[string][][][2]float64) {
	t.Helper()
	texts, paths, err := timeplot.ReadSVG(b)
	if err != nil {
		t.Fatal(err)
	}
	return texts, paths
}

// TestResumeWindow: a record read on A and again on B is explained only
// when its offset lies between the commit the mirror synced to B and the
// group's last commit on A; every other duplicate is not, and fails the
// drill.
func TestResumeWindow(t *testing.T) {
	tp := target{"t", 0}
	w := resumeWindow{from: "A", synced: map[target]int64{tp: 10}, last: map[target]int64{tp: 15}}
	for _, c := range []struct {
		first readAt
		off   int64
		want  bool
	}{
		{readAt{"A", 10}, 10, true},  // the synced commit: read again
		{readAt{"A", 14}, 14, true},  // the last one before A's commit
		{readAt{"A", 15}, 15, false}, // at or past the last commit on A: not the move's re-read
		{readAt{"A", 9}, 9, false},   // before the synced commit: B should not have read it again
		{readAt{"B", 12}, 12, false}, // read twice on B itself
		{readAt{"A", 12}, 13, false}, // a different offset: not the same record's copy
	} {
		if got := w.explains(c.first, tp, c.off); got != c.want {
			t.Errorf("first %+v at %d: explained %v, want %v", c.first, c.off, got, c.want)
		}
	}
	// No window (the first phase): nothing is explained.
	if (resumeWindow{}).explains(readAt{"A", 1}, tp, 1) {
		t.Fatal("a duplicate with no failover is explained")
	}
	// An unexplained duplicate fails a drill that is otherwise clean.
	events := []Event{{AtMs: 500, Kind: "acked", Cluster: "B", Seq: 5}, {AtMs: 700, Kind: "consumed", Cluster: "B", Seq: 5}}
	rep := &Report{final: "B", StopAtMs: 400, EndMs: 900, Unexplained: []int64{1}, Duplicates: []int64{1}}
	rep.analyse(map[int64]string{1: "A", 5: "B"}, map[int64]int{1: 2, 5: 1}, map[int64]bool{1: true, 5: true}, events)
	if rep.Passed || len(rep.Problems) != 1 {
		t.Fatalf("passed %v, problems %q", rep.Passed, rep.Problems)
	}
	// The same duplicate explained by the move passes.
	rep = &Report{final: "B", StopAtMs: 400, EndMs: 900, ReadAgain: 1, Duplicates: []int64{1}}
	rep.analyse(map[int64]string{1: "A", 5: "B"}, map[int64]int{1: 2, 5: 1}, map[int64]bool{1: true, 5: true}, events)
	if !rep.Passed {
		t.Fatalf("problems %q", rep.Problems)
	}
}
