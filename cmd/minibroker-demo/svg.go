package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/minibroker/minibroker/internal/timeplot"
)

var clusterColours = map[string]color.Color{
	"a": color.RGBA{0x1f, 0x77, 0xb4, 0xff},
	"b": color.RGBA{0xd6, 0x27, 0x28, 0xff},
	"c": color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
}

// renderTimeline draws the samples of `timeline record` and the demo's
// events as an SVG with gonum/plot: above, the records each cluster
// appended per second; below, each cluster's lag. Every value is drawn as
// a step over the interval it was measured on (a rate between two
// scrapes at least a second apart; a gauge from its scrape to the next),
// and a cluster that did not answer has no curve there.
func renderTimeline(samplesPath, eventsPath, out, title string) error {
	all, err := readSamples(samplesPath)
	if err != nil {
		return err
	}
	var events []event
	if eventsPath != "" {
		if events, err = readEvents(eventsPath); err != nil {
			return err
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	err = timelineFigure(all, events, title).WriteSVG(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func readSamples(path string) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []sample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s sample
		if json.Unmarshal(sc.Bytes(), &s) == nil {
			all = append(all, s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%s: no samples", path)
	}
	return all, nil
}

// clusterSeries is one cluster's measurements, as runs of steps (a run
// ends where the cluster stopped answering).
type clusterSeries struct {
	rate, behind, reported []plotter.XYs
}

func timelineFigure(all []sample, events []event, title string) *timeplot.Figure {
	t0 := all[0].Ms
	sec := func(ms int64) float64 { return float64(ms-t0) / 1000 }
	furthest := map[int]float64{} // per round: the longest log end of any cluster
	for _, s := range all {
		if s.Up {
			furthest[s.Round] = math.Max(furthest[s.Round], s.LogEnd)
		}
	}
	var names []string
	byCluster := map[string][]sample{}
	for _, s := range all {
		if byCluster[s.Cluster] == nil {
			names = append(names, s.Cluster)
		}
		byCluster[s.Cluster] = append(byCluster[s.Cluster], s)
	}
	xmax := sec(all[len(all)-1].Ms)
	series := map[string]*clusterSeries{}
	for _, n := range names {
		cs := &clusterSeries{}
		series[n] = cs
		ss := byCluster[n]
		for i := 0; i < len(ss); {
			if !ss[i].Up {
				i++
				continue
			}
			j := i
			for j < len(ss) && ss[j].Up {
				j++
			}
			run := ss[i:j]
			// A gauge holds from its scrape to the next one (the last
			// until the next scrape of any cluster would have come).
			var edges, behind, reported []float64
			for k, s := range run {
				edges = append(edges, sec(s.Ms))
				behind = append(behind, furthest[s.Round]-s.LogEnd)
				reported = append(reported, s.Lag)
				if k == len(run)-1 {
					end := xmax
					if j < len(ss) {
						end = sec(ss[j].Ms)
					}
					edges = append(edges, end)
				}
			}
			cs.behind = append(cs.behind, timeplot.Steps(edges, behind))
			cs.reported = append(cs.reported, timeplot.Steps(edges, reported))
			// The rate between scrapes at least a second apart, drawn
			// over the interval between them.
			edges, rate := []float64{sec(run[0].Ms)}, []float64(nil)
			from := run[0]
			for _, s := range run[1:] {
				if s.Ms-from.Ms < 1000 {
					continue
				}
				r := (s.LogEnd - from.LogEnd) / (float64(s.Ms-from.Ms) / 1000)
				rate = append(rate, math.Max(r, 0)) // a truncation appends nothing
				edges = append(edges, sec(s.Ms))
				from = s
			}
			if len(rate) > 0 {
				cs.rate = append(cs.rate, timeplot.Steps(edges, rate))
			}
			i = j
		}
	}

	solid := func(n string) draw.LineStyle {
		c := clusterColours[n]
		if c == nil {
			c = color.Gray{Y: 0x7f}
		}
		return draw.LineStyle{Color: c, Width: vg.Points(1.5)}
	}
	dashed := func(n string) draw.LineStyle {
		ls := solid(n)
		ls.Width = vg.Points(1.2)
		ls.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		return ls
	}

	fig := &timeplot.Figure{
		Title:  title,
		XLabel: "time since the first scrape (s)",
		XMax:   xmax,
		Footer: []string{
			"Scraped from each broker's /metrics every 250 ms. Appended: growth of minibroker_partition_log_end_offset between scrapes ≥ 1 s apart. " +
				"Behind: the longest log end of the three minus the cluster's own. Reported: minibroker_mirror_lag_records. Both summed over the topic's partitions.",
		},
		Width:  vg.Points(720),
		Height: vg.Points(500),
	}
	top := timeplot.NewPanel("appended (records/s)")
	bottom := timeplot.NewPanel("lag (records)")
	var rates, lags []plotter.XYs
	reportedZero := true
	for _, n := range names {
		fig.AddLegend("cluster "+n, timeplot.AddSteps(top, series[n].rate, solid(n)))
		timeplot.AddSteps(bottom, series[n].behind, solid(n))
		timeplot.AddSteps(bottom, series[n].reported, dashed(n))
		rates = append(rates, series[n].rate...)
		lags = append(lags, series[n].behind...)
		lags = append(lags, series[n].reported...)
		reportedZero = reportedZero && !hasNonZero(series[n].reported)
	}
	black := draw.LineStyle{Color: color.Black, Width: vg.Points(1.5)}
	fig.AddLegend("lag: behind the longest log", &plotter.Line{LineStyle: black})
	black.Dashes = dashed("").Dashes
	reported := "lag: reported by the mirror"
	if reportedZero {
		reported += " (0 throughout)"
	}
	fig.AddLegend(reported, &plotter.Line{LineStyle: black})
	for _, pn := range []struct {
		p    *plot.Plot
		runs []plotter.XYs
		what string
	}{{top, rates, "appended"}, {bottom, lags, "lag"}} {
		if mark, limit, peak := scale(pn.p, pn.runs); mark != nil {
			fig.AddLegend(fmt.Sprintf("%s above %g (peak %.0f)", pn.what, limit, peak), mark)
		}
	}
	fig.Panels = []*plot.Plot{top, bottom}
	for i, e := range events {
		fig.Events = append(fig.Events, timeplot.Event{X: sec(e.ms), Label: fmt.Sprintf("%d %s", i+1, e.label)})
	}
	return fig
}

func hasNonZero(runs []plotter.XYs) bool {
	for _, r := range runs {
		for _, p := range r {
			if p.Y != 0 {
				return true
			}
		}
	}
	return false
}

// scale fits the plot's Y axis to the bulk of the values: a catch-up
// burst (thousands of records in a second) would flatten everything
// else, so the axis stops at 3 × the 90th percentile of the non-zero
// values (weighted by how long each held; rounded up) when the peak is
// higher, and each step above it is marked with a triangle at the top:
// the marks are returned for the legend, with the axis limit and the
// peak.
func scale(p *plot.Plot, runs []plotter.XYs) (mark *plotter.Scatter, limit, peak float64) {
	type held struct{ v, d float64 }
	var vals []held
	total := 0.0
	for _, r := range runs {
		for i := 0; i+1 < len(r); i++ {
			if r[i].Y > 0 {
				vals = append(vals, held{r[i].Y, r[i+1].X - r[i].X})
				total += r[i+1].X - r[i].X
			}
		}
	}
	if len(vals) == 0 {
		p.Y.Max = 1
		return nil, 0, 0
	}
	slices.SortFunc(vals, func(a, b held) int { return cmp.Compare(a.v, b.v) })
	peak = vals[len(vals)-1].v
	p90, sum := peak, 0.0
	for _, h := range vals {
		if sum += h.d; sum >= 0.9*total {
			p90 = h.v
			break
		}
	}
	limit = niceCeil(3 * p90)
	if peak <= limit {
		p.Y.Max = peak * 1.05
		return nil, 0, peak
	}
	p.Y.Max = limit
	var above plotter.XYs
	for _, r := range runs {
		for i := 0; i+1 < len(r); i++ {
			if r[i].Y > limit {
				above = append(above, plotter.XY{X: (r[i].X + r[i+1].X) / 2, Y: limit})
			}
		}
	}
	mark, err := plotter.NewScatter(above)
	if err != nil {
		return nil, 0, peak
	}
	mark.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3), Shape: draw.TriangleGlyph{}}
	p.Add(mark)
	return mark, limit, peak
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}
