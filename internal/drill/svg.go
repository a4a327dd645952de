package drill

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/minibroker/minibroker/internal/timeplot"
)

// Series names and colours of the drill's picture: per cluster, records
// acknowledged (solid) and consumed (dashed).
var (
	clusterColor = map[string]color.Color{
		"A":  color.RGBA{0x1f, 0x77, 0xb4, 0xff},
		"B":  color.RGBA{0xd6, 0x27, 0x28, 0xff},
		"A2": color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	}
	clusterName = map[string]string{"A": "A", "B": "B", "A2": "A after the failback"}
)

// WriteSVG draws the report's timeline with gonum/plot: the records
// acknowledged and consumed on each cluster, counted per second of the
// run and drawn as steps over that second; the stop command and the
// first produce and consume on B as marked lines; every gap, duplicate
// and lost record as a mark on the time axis; the counts in a footer.
func (rep *Report) WriteSVG(w io.Writer) error {
	// Whole seconds from the start; the last one runs past the end of
	// the drill (marked), so its count covers less than a second.
	span := float64(max(rep.EndMs-rep.StartMs, 1)) / 1000
	bins := int(math.Ceil(span))
	edges := make([]float64, bins+1)
	for i := range edges {
		edges[i] = float64(i)
	}
	type key struct{ kind, cluster string }
	counts := map[key][]float64{}
	for _, e := range rep.Timeline {
		if e.Kind != "acked" && e.Kind != "consumed" {
			continue
		}
		k := key{e.Kind, e.Cluster}
		if counts[k] == nil {
			counts[k] = make([]float64, bins)
		}
		if i := int((e.AtMs - rep.StartMs) / 1000); i >= 0 && i < bins {
			counts[k][i]++
		}
	}

	fig := &timeplot.Figure{
		XLabel: "time since the drill started (s)",
		XMax:   float64(bins),
		Width:  vg.Points(680),
		Height: vg.Points(340),
	}
	p := timeplot.NewPanel("records per second (count in each 1 s)")
	dashes := []vg.Length{vg.Points(5), vg.Points(3)}
	for _, cl := range []string{"A", "B", "A2"} {
		if counts[key{"acked", cl}] == nil && counts[key{"consumed", cl}] == nil {
			continue
		}
		for _, kind := range []string{"acked", "consumed"} {
			ls := draw.LineStyle{Color: clusterColor[cl], Width: vg.Points(1.8)}
			if kind == "consumed" {
				ls.Dashes = dashes
			}
			if c := counts[key{kind, cl}]; c != nil {
				timeplot.AddSteps(p, []plotter.XYs{activeSpan(edges, c)}, ls)
			}
		}
		fig.AddLegend(clusterName[cl], &plotter.Line{LineStyle: draw.LineStyle{Color: clusterColor[cl], Width: vg.Points(1.8)}})
	}
	black := draw.LineStyle{Color: color.Black, Width: vg.Points(1.8)}
	fig.AddLegend("acknowledged to the producer", &plotter.Line{LineStyle: black})
	black.Dashes = dashes
	fig.AddLegend("read by the group", &plotter.Line{LineStyle: black})
	marks := func(name string, shape draw.GlyphDrawer, col color.Color, xs []float64) {
		if len(xs) == 0 {
			return
		}
		xys := make(plotter.XYs, len(xs))
		for i, x := range xs {
			xys[i] = plotter.XY{X: x}
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return
		}
		s.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: shape}
		p.Add(s)
		fig.AddLegend(fmt.Sprintf("%s: %d", name, len(xs)), s)
	}
	sec := func(ms int64) float64 { return float64(ms-rep.StartMs) / 1000 }
	var gaps, dups, lost []float64
	for _, e := range rep.Timeline {
		switch e.Kind {
		case "gap":
			gaps = append(gaps, sec(e.AtMs))
		case "duplicate":
			dups = append(dups, sec(e.AtMs))
		}
	}
	for _, s := range append(append([]int64{}, rep.LostAtFailover...), rep.LostOnB...) {
		at, ok := rep.ackAt[s]
		if !ok {
			at = rep.StopAtMs
		}
		lost = append(lost, sec(at))
	}
	marks("lost (at its ack)", draw.CrossGlyph{}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, lost)
	marks("never read (gap)", draw.BoxGlyph{}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, gaps)
	marks("read again (duplicate)", draw.RingGlyph{}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, dups)
	p.Y.Max *= 1.05

	events := []timeplot.Event{{X: sec(rep.StopAtMs), Label: "mirror stop", Color: color.Black}}
	if rep.RTOProduceMs >= 0 {
		events = append(events, timeplot.Event{X: sec(rep.StopAtMs + rep.RTOProduceMs),
			Label: fmt.Sprintf("first produce on B (+%d ms)", rep.RTOProduceMs), Color: color.RGBA{0x2c, 0x80, 0x2c, 0xff}})
	}
	if rep.RTOConsumeMs >= 0 {
		events = append(events, timeplot.Event{X: sec(rep.StopAtMs + rep.RTOConsumeMs),
			Label: fmt.Sprintf("first consume on B (+%d ms)", rep.RTOConsumeMs), Color: color.RGBA{0x80, 0x30, 0xa0, 0xff}})
	}
	events = append(events, timeplot.Event{X: span, Label: "end of the drill"})
	status := "PASSED"
	if !rep.Passed {
		status = "FAILED"
	}
	// The footer's problems are wrapped to the width; the first few only.
	footer := []string{fmt.Sprintf("lost at failover %d (predicted ≤ %d %s), lost on %s %d, gaps %d, duplicates %d, out of order %d",
		len(rep.LostAtFailover), rep.PredictedLoss, orDefault(rep.PredictedUnit, "offsets"), clusterName[orDefault(rep.final, "B")],
		len(rep.LostOnB), len(rep.Gaps), len(rep.Duplicates), len(rep.OutOfOrder))}
	for i, pr := range rep.Problems {
		if i == 4 {
			footer = append(footer, fmt.Sprintf("… and %d more problems (see the report)", len(rep.Problems)-i))
			break
		}
		footer = append(footer, "problem: "+shorten(pr, 160))
	}
	fig.Title = fmt.Sprintf("drill of mirror %s (topics %s): %s", rep.Mirror, strings.Join(rep.Topics, ", "), status)
	fig.Panels = []*plot.Plot{p}
	fig.Events = events
	fig.Footer = footer
	return fig.WriteSVG(w)
}

// activeSpan is the steps of v from its first non-zero second to the
// second after its last (the drop to zero), so that a series does not
// run along the axis where its cluster had no traffic.
func activeSpan(edges, v []float64) plotter.XYs {
	first, last := -1, -1
	for i, x := range v {
		if x != 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	last = min(last+1, len(v)-1)
	return timeplot.Steps(edges[first:last+2], v[first:last+1])
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
