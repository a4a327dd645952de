package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"sort"
	"strings"
)

// series is one cluster's curve: x in ms since the start, y a value.
type series struct {
	name   string
	colour string
	dashed bool
	points [][2]float64
}

var clusterColours = map[string]string{"a": "#1f77b4", "b": "#d62728", "c": "#2ca02c"}

func renderTimeline(samplesPath, eventsPath, out, title string) error {
	f, err := os.Open(samplesPath)
	if err != nil {
		return err
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
	if len(all) == 0 {
		return fmt.Errorf("%s: no samples", samplesPath)
	}
	var events []event
	if eventsPath != "" {
		if events, err = readEvents(eventsPath); err != nil {
			return err
		}
	}
	t0 := all[0].Ms
	names := []string{}
	rate, lag, reported := map[string]*series{}, map[string]*series{}, map[string]*series{}
	history := map[string][]sample{} // since the cluster last answered
	furthest := map[int]float64{}    // per round: the longest log end of any cluster
	for _, s := range all {
		if s.Up {
			furthest[s.Round] = math.Max(furthest[s.Round], s.LogEnd)
		}
	}
	gap := [2]float64{math.NaN(), math.NaN()}
	for _, s := range all {
		if _, ok := rate[s.Cluster]; !ok {
			names = append(names, s.Cluster)
			c := clusterColours[s.Cluster]
			if c == "" {
				c = "#7f7f7f"
			}
			rate[s.Cluster] = &series{name: s.Cluster, colour: c}
			lag[s.Cluster] = &series{name: s.Cluster, colour: c}
			reported[s.Cluster] = &series{name: s.Cluster, colour: c, dashed: true}
		}
		if !s.Up { // a cluster that does not answer has no curve there
			rate[s.Cluster].points = append(rate[s.Cluster].points, gap)
			lag[s.Cluster].points = append(lag[s.Cluster].points, gap)
			reported[s.Cluster].points = append(reported[s.Cluster].points, gap)
			delete(history, s.Cluster)
			continue
		}
		x := float64(s.Ms-t0) / 1000
		h := append(history[s.Cluster], s)
		for len(h) > 1 && s.Ms-h[1].Ms >= 1000 { // rate over the last second
			h = h[1:]
		}
		history[s.Cluster] = h
		if p := h[0]; s.Ms-p.Ms >= 500 {
			r := (s.LogEnd - p.LogEnd) / (float64(s.Ms-p.Ms) / 1000)
			rate[s.Cluster].points = append(rate[s.Cluster].points, [2]float64{x, math.Max(r, 0)})
		}
		lag[s.Cluster].points = append(lag[s.Cluster].points, [2]float64{x, furthest[s.Round] - s.LogEnd})
		reported[s.Cluster].points = append(reported[s.Cluster].points, [2]float64{x, s.Lag})
	}
	for _, n := range names { // the dashed curves are drawn in the lag panel too
		lag[n+" reported"] = reported[n]
	}
	xmax := float64(all[len(all)-1].Ms-t0) / 1000
	var b strings.Builder
	const W, H = 960, 560
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="16" text-anchor="middle">%s</text>`+"\n", W/2, html.EscapeString(title))
	top := panel{x: 70, y: 50, w: W - 100, h: 190, xmax: xmax, label: "records/s appended (log end offset, per second)"}
	bottom := panel{x: 70, y: 300, w: W - 100, h: 190, xmax: xmax,
		label: "lag: records behind the longest log of the three (solid); minibroker_mirror_lag_records (dashed)"}
	top.draw(&b, names, rate)
	var lagNames []string
	for _, n := range names {
		lagNames = append(lagNames, n, n+" reported")
	}
	bottom.draw(&b, lagNames, lag)
	for i, e := range events {
		x := top.px(float64(e.ms-t0) / 1000)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="4,3"/>`+"\n", x, top.y, x, bottom.y+bottom.h)
		y := bottom.y + bottom.h + 14 + (i%3)*14
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" fill="#444">%d %s</text>`+"\n", x+2, y, i+1, html.EscapeString(e.label))
	}
	for i, n := range names {
		fmt.Fprintf(&b, `<rect x="%d" y="34" width="12" height="4" fill="%s"/><text x="%d" y="40">cluster %s</text>`+"\n", W-300+i*90, rate[n].colour, W-284+i*90, n)
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

type panel struct {
	x, y, w, h int
	xmax, ymax float64
	clipped    bool
	label      string
}

func (p *panel) px(x float64) float64 { return float64(p.x) + x/p.xmax*float64(p.w) }
func (p *panel) py(y float64) float64 {
	return float64(p.y+p.h) - math.Min(y, p.ymax)/p.ymax*float64(p.h)
}

func (p *panel) draw(b *strings.Builder, names []string, s map[string]*series) {
	// The scale fits the bulk of the values: a catch-up burst (thousands
	// of records in a second) would flatten everything else, so values
	// above 3 × the 90th percentile are clipped at the top (and the label
	// says so).
	var vals []float64
	for _, n := range names {
		for _, pt := range s[n].points {
			if !math.IsNaN(pt[1]) && pt[1] > 0 {
				vals = append(vals, pt[1])
			}
		}
	}
	sort.Float64s(vals)
	p.ymax = 1
	if len(vals) > 0 {
		p.ymax = vals[len(vals)-1]
		if cap := 3 * vals[len(vals)*9/10]; cap < p.ymax {
			p.ymax, p.clipped = cap, true
		}
	}
	p.ymax = niceCeil(p.ymax * 1.05)
	if p.clipped {
		p.label += " — peaks clipped"
	}
	fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", p.x, p.y-8, html.EscapeString(p.label))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", p.x, p.y, p.w, p.h)
	for i := 0; i <= 4; i++ {
		v := p.ymax * float64(i) / 4
		y := p.py(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n",
			p.x, y, p.x+p.w, y, p.x-4, y+4, v)
	}
	step := niceCeil(p.xmax / 10)
	for t := 0.0; t <= p.xmax; t += step {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%gs</text>`+"\n", p.px(t), p.y+p.h+14, t)
	}
	for _, n := range names {
		var path strings.Builder
		pen := false
		for _, pt := range s[n].points {
			if math.IsNaN(pt[0]) {
				pen = false
				continue
			}
			cmd := "L"
			if !pen {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f,%.1f ", cmd, p.px(pt[0]), p.py(pt[1]))
			pen = true
		}
		dash := ""
		if s[n].dashed {
			dash = ` stroke-dasharray="5,3"`
		}
		fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`+"\n", strings.TrimSpace(path.String()), s[n].colour, dash)
	}
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
