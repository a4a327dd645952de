// Package timeplot draws the timelines of the failover demo
// (cmd/minibroker-demo) and of the drill (internal/drill) with gonum/plot:
// one or more panels over a shared time axis, a legend in rows under the
// title, and the run's events as vertical lines whose labels sit in a band
// above the panels, laid out so that no label overlaps another or is
// crossed by another event's line. Counts measured over an interval are
// drawn as steps over that interval (Steps), never as a line joining
// one interval's value to the next, which would draw a rate nobody
// measured.
package timeplot

import (
	"bytes"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Sans is the typeface of every text: Liberation Sans, which gonum/plot
// carries and measures text with. The SVG names it with Arial and
// Helvetica as fallbacks (metric-compatible faces, so a viewer without
// Liberation lays the labels out at the widths they were measured at).
var Sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// Event is one moment of the run: a vertical line at X (in the panels'
// X units) labelled Label.
type Event struct {
	X     float64
	Label string
	Color color.Color // nil: grey
}

// NewPanel returns a plot for a Figure, its texts in Sans, a grid, the
// Y axis labelled and starting at 0.
func NewPanel(ylabel string) *plot.Plot {
	p := plot.New()
	p.Y.Label.Text = ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(Sans, 10)
		a.Tick.Label.Font = font.From(Sans, 9)
	}
	p.Y.Label.Padding = vg.Points(3)
	p.Add(plotter.NewGrid())
	p.Y.Min = 0
	return p
}

// Figure is the whole picture: a title, the legend in rows below it,
// the panels one above the other over [XMin, XMax] (the last one
// carries XLabel), the events and a few footer lines (wrapped to the
// width).
type Figure struct {
	Title      string
	XLabel     string
	XMin, XMax float64
	Panels     []*plot.Plot
	Legend     []LegendEntry
	Events     []Event
	Footer     []string
	Width      vg.Length // 0: 720 pt
	Height     vg.Length // 0: 480 pt
}

// LegendEntry is a name and the thumbnails drawn before it (a line
// plotter's thumbnail is a short line of its style).
type LegendEntry struct {
	Name   string
	Thumbs []plot.Thumbnailer
}

// AddLegend appends an entry to the legend.
func (f *Figure) AddLegend(name string, thumbs ...plot.Thumbnailer) {
	f.Legend = append(f.Legend, LegendEntry{name, thumbs})
}

// WriteSVG draws the figure as an SVG document.
func (f *Figure) WriteSVG(w io.Writer) error {
	width, height := f.Width, f.Height
	if width == 0 {
		width = vg.Points(720)
	}
	if height == 0 {
		height = vg.Points(480)
	}
	c := vgsvg.New(width, height)
	f.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	out := strings.ReplaceAll(buf.String(), "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
	_, err := io.WriteString(w, out)
	return err
}

const pad = vg.Length(6)

// slack widens every measured text: a viewer without Liberation Sans or a
// metric-compatible face draws the SVG's texts in its own sans-serif,
// often DejaVu Sans, about a tenth wider.
const slack = 1.15

// Draw draws the figure on c.
func (f *Figure) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	c = draw.Crop(c, pad, -pad, pad, -pad)

	if f.Title != "" {
		sty := textStyle(13)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y}, f.Title)
		c.Max.Y -= sty.Height(f.Title) + pad
	}
	if len(f.Legend) > 0 {
		c.Max.Y = f.drawLegend(c) - pad
	}
	if len(f.Footer) > 0 {
		sty := textStyle(9)
		sty.YAlign = draw.YBottom
		lh := sty.Height("Mg") + 2
		var lines []string
		for _, l := range f.Footer {
			lines = append(lines, wrap(l, sty, c.Size().X)...)
		}
		for i, line := range lines {
			y := c.Min.Y + vg.Length(len(lines)-1-i)*lh
			c.FillText(sty, vg.Point{X: c.Min.X, Y: y}, line)
		}
		c.Min.Y += vg.Length(len(lines))*lh + pad
	}
	body := c
	plots := make([][]*plot.Plot, len(f.Panels))
	for i, p := range f.Panels {
		p.X.Min, p.X.Max = f.XMin, f.XMax
		p.X.Tick.Marker = timeTicks{}
		p.X.Label.Text = ""
		if i == len(f.Panels)-1 {
			p.X.Label.Text = f.XLabel
		}
		plots[i] = []*plot.Plot{p}
	}
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: 3 * pad}

	// The events' labels go in a band above the panels. The band's height
	// depends on how many rows the labels need, which depends on the X
	// transform only: lay them out once on a provisional layout, then for
	// real in the band left above the panels.
	sty := textStyle(9)
	var labels []placed
	if len(f.Events) > 0 && len(plots) > 0 {
		cs := plot.Align(plots, tiles, body)
		dc := plots[0][0].DataCanvas(cs[0][0])
		x, _ := plots[0][0].Transforms(&dc)
		labels = layout(f.Events, x, sty, c.Min.X, c.Max.X)
		rows := 0
		for _, l := range labels {
			rows = max(rows, l.row+1)
		}
		body.Max.Y -= vg.Length(rows)*rowHeight(sty) + pad
	}
	cs := plot.Align(plots, tiles, body)
	for i, p := range f.Panels {
		p.Draw(cs[i][0])
		dc := p.DataCanvas(cs[i][0])
		x, _ := p.Transforms(&dc)
		for _, e := range f.Events {
			if e.X < f.XMin || e.X > f.XMax {
				continue
			}
			dc.StrokeLine2(eventLine(e), x(e.X), dc.Min.Y, x(e.X), dc.Max.Y)
		}
	}
	if len(labels) > 0 {
		dc := plots[0][0].DataCanvas(cs[0][0])
		rh := rowHeight(sty)
		for _, l := range labels {
			bottom := dc.Max.Y + pad + vg.Length(l.row)*rh
			c.StrokeLine2(eventLine(l.ev), l.x, dc.Max.Y, l.x, bottom+rh-1)
			s := sty
			s.Color = l.ev.Color
			if s.Color == nil {
				s.Color = color.Gray{Y: 0x40}
			}
			s.YAlign = draw.YBottom
			c.FillText(s, vg.Point{X: l.box[0], Y: bottom + 1}, l.ev.Label)
		}
	}
}

// drawLegend draws the legend's entries in rows across the top of c
// and returns the y of the rows' bottom.
func (f *Figure) drawLegend(c draw.Canvas) vg.Length {
	sty := textStyle(9)
	sty.YAlign = draw.YBottom
	const thumbW, gap = vg.Length(22), vg.Length(14)
	rh := sty.Height("Mg") + 3
	x, y := c.Min.X, c.Max.Y-rh
	for _, e := range f.Legend {
		w := thumbW + 4 + sty.Width(e.Name)*slack
		if x > c.Min.X && x+w > c.Max.X {
			x, y = c.Min.X, y-rh
		}
		thumb := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: y + 1}, Max: vg.Point{X: x + thumbW, Y: y + rh - 2}}}
		for _, t := range e.Thumbs {
			t.Thumbnail(&thumb)
		}
		c.FillText(sty, vg.Point{X: x + thumbW + 4, Y: y + 1}, e.Name)
		x += w + gap
	}
	return y
}

// wrap breaks s into lines no wider than w.
func wrap(s string, sty text.Style, w vg.Length) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		next := word
		if line != "" {
			next = line + " " + word
		}
		if line != "" && sty.Width(next)*slack > w {
			lines = append(lines, line)
			next = word
		}
		line = next
	}
	return append(lines, line)
}

func textStyle(size vg.Length) text.Style {
	return text.Style{Color: color.Black, Font: font.From(Sans, size), Handler: plot.DefaultTextHandler}
}

func rowHeight(sty text.Style) vg.Length { return sty.Height("Mg") + 3 }

func eventLine(e Event) draw.LineStyle {
	col := e.Color
	if col == nil {
		col = color.Gray{Y: 0x80}
	}
	return draw.LineStyle{Color: col, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
}

// placed is an event's label: its line's x, its row in the band (0 is
// the row nearest the panels) and the x extent of its text.
type placed struct {
	ev  Event
	x   vg.Length
	row int
	box [2]vg.Length
}

// layout places the events' labels in rows (0 is the row nearest the
// panels) so that no two labels of a row overlap and no line crosses a
// label: an event's line runs from the panels up to its label's row, so
// a label that covers the x of another event must be in a higher row
// than that event's label. A label goes right of its line, or left of it
// where it would run past maxX (and then so do the labels of its
// left-hand neighbours that would face it, each covering the other's
// line). Each label then takes the lowest row above the labels whose
// lines it covers where it overlaps no label.
func layout(events []Event, x func(float64) vg.Length, sty text.Style, minX, maxX vg.Length) []placed {
	const gap = 4
	n := len(events)
	ls := make([]placed, n)
	px := make([]vg.Length, n)
	w := make([]vg.Length, n)
	left := make([]bool, n)
	for i, e := range events {
		px[i], w[i] = x(e.X), sty.Width(e.Label)*slack
		left[i] = px[i]+2+w[i] > maxX && px[i]-2-w[i] >= minX
	}
	box := func(i int) [2]vg.Length {
		if left[i] {
			return [2]vg.Length{px[i] - 2 - w[i], px[i] - 2}
		}
		return [2]vg.Length{px[i] + 2, px[i] + 2 + w[i]}
	}
	covers := func(i, j int) bool { b := box(i); return i != j && b[0]-1 <= px[j] && px[j] <= b[1]+1 }
	for changed := true; changed; {
		changed = false
		for i := range n {
			for j := range n {
				if !left[i] && left[j] && covers(i, j) && covers(j, i) && px[i]-2-w[i] >= minX {
					left[i], changed = true, true
				}
			}
		}
	}
	// Place each label after those whose lines it covers; among the
	// ready ones the rightmost first, so that a cluster of close events
	// makes a staircase.
	done := make([]bool, n)
	for range n {
		next := -1
		for i := range n {
			if done[i] {
				continue
			}
			ready := true
			for j := range n {
				if !done[j] && covers(i, j) {
					ready = false
				}
			}
			if ready && (next < 0 || px[i] > px[next]) {
				next = i
			}
		}
		if next < 0 { // a cycle (labels facing each other at the left edge): break it
			for i := range n {
				if !done[i] {
					next = i
					break
				}
			}
		}
		i, b := next, box(next)
		row := 0
		for j := range n {
			if done[j] && covers(i, j) {
				row = max(row, ls[j].row+1)
			}
		}
		for overlap := true; overlap; {
			overlap = false
			for j := range n {
				if done[j] && ls[j].row == row && b[0] < ls[j].box[1]+gap && ls[j].box[0] < b[1]+gap {
					overlap = true
					row++
					break
				}
			}
		}
		ls[i] = placed{ev: events[i], x: px[i], row: row, box: b}
		done[i] = true
	}
	return ls
}

// Steps returns the corners of a step line that holds v[i] from
// edges[i] to edges[i+1]; len(edges) must be len(v)+1. The corners are
// explicit (the line is drawn straight between them): gonum/plot clips a
// line at the axis before it draws its steps, which would move a step
// that runs past the axis to where the slope from the step before would
// cross it. A value equal to the one before it adds no corner.
func Steps(edges, v []float64) plotter.XYs {
	if len(v) == 0 {
		return nil
	}
	xys := plotter.XYs{{X: edges[0], Y: v[0]}}
	for i := 1; i < len(v); i++ {
		if v[i] != v[i-1] {
			xys = append(xys, plotter.XY{X: edges[i], Y: v[i-1]}, plotter.XY{X: edges[i], Y: v[i]})
		}
	}
	return append(xys, plotter.XY{X: edges[len(v)], Y: v[len(v)-1]})
}

// AddSteps adds runs (each a Steps result; the gaps between them are
// times with no measurement) to p as step lines in style ls, and returns
// a line of that style for the legend.
func AddSteps(p *plot.Plot, runs []plotter.XYs, ls draw.LineStyle) *plotter.Line {
	for _, r := range runs {
		if len(r) == 0 {
			continue
		}
		l, err := plotter.NewLine(r)
		if err != nil {
			continue // a NaN or Inf: not drawn
		}
		l.LineStyle = ls
		p.Add(l)
	}
	return &plotter.Line{LineStyle: ls}
}

// timeTicks marks the time axis every 1, 2, 5, 10, 15, 30, 60, … units,
// the smallest step that gives at most 12 labelled ticks, with unlabelled
// ticks between them when the step allows.
type timeTicks struct{}

func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	steps := []float64{1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if (hi-lo)/s <= 12 {
			step = s
			break
		}
	}
	minor := 0.0
	switch step {
	case 2, 10, 20, 60, 120, 600:
		minor = step / 2
	case 5, 15, 30, 300, 900, 1800, 3600:
		minor = step / 5
		if step == 15 || step == 30 {
			minor = step / 3
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+1e-9; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	if minor > 0 {
		for v := math.Ceil(lo/minor) * minor; v <= hi+1e-9; v += minor {
			if math.Mod(v, step) != 0 {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}
