package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minibroker/minibroker/internal/timeplot"
)

// timeline render draws recorded samples: a, b and c scraped every 250 ms
// for 60 s, 200 records/s, a down from 20 s to 30 s and catching up with
// a burst when it is back. The SVG parses, names the clusters and the
// lag's two kinds in the legend, labels the axes with their units and
// every event, marks the burst above the cut axis, and draws every
// measurement as steps (no sloped segment in a cluster's colour); a's
// lines break where it did not answer.
func TestRenderTimeline(t *testing.T) {
	dir := t.TempDir()
	var samples bytes.Buffer
	enc := json.NewEncoder(&samples)
	const t0 = 1_000_000
	for round := 0; round < 240; round++ {
		ms := int64(t0 + round*250)
		end := float64(round * 50)
		for _, c := range []string{"a", "b", "c"} {
			s := sample{Ms: ms, Round: round, Cluster: c, Up: true, LogEnd: end}
			if c == "a" && round >= 80 && round < 120 {
				s = sample{Ms: ms, Round: round, Cluster: c}
			}
			if c == "a" && round >= 120 && round < 130 {
				s.LogEnd = 3000 // back, behind, catching up at once
			}
			if c == "c" {
				s.Lag = 10
			}
			enc.Encode(s)
		}
	}
	samplesFile, eventsFile, out := filepath.Join(dir, "samples.jsonl"), filepath.Join(dir, "events.txt"), filepath.Join(dir, "t.svg")
	if err := os.WriteFile(samplesFile, samples.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	events := fmt.Sprintf("%d up\n%d kill a\n%d a back\n%d end\n", t0, t0+20_000, t0+30_000, t0+59_750)
	if err := os.WriteFile(eventsFile, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := renderTimeline(samplesFile, eventsFile, out, "test demo"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	texts, paths := svgContents(t, raw)
	for _, want := range []string{"test demo", "cluster a", "cluster b", "cluster c", "lag: behind the longest log",
		"lag: reported by the mirror", "appended (records/s)", "lag (records)", "time since the first scrape (s)",
		"1 up", "2 kill a", "3 a back", "4 end"} {
		if !slices.Contains(texts, want) {
			t.Errorf("no text %q in %q", want, texts)
		}
	}
	if !slices.ContainsFunc(texts, func(s string) bool { return strings.HasPrefix(s, "appended above ") }) {
		t.Errorf("the catch-up burst is not marked above the axis: %q", texts)
	}
	for _, col := range []string{"#1f77b4", "#d62728", "#2ca02c"} {
		for _, pts := range paths[col] {
			for i := 1; i < len(pts); i++ {
				if pts[i][0] != pts[i-1][0] && pts[i][1] != pts[i-1][1] {
					t.Fatalf("%s: a sloped segment %v → %v", col, pts[i-1], pts[i])
				}
			}
		}
	}
	// b: the legend's line and one run of each of its three series; a:
	// two runs of each (and more where the burst is cut at the axis).
	if na, nb := len(paths["#1f77b4"]), len(paths["#d62728"]); nb != 4 || na < nb+3 {
		t.Errorf("a has %d paths, b %d; want 4 for b and 3 more for a", na, nb)
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
