package timeplot

import (
	"bytes"
	"encoding/xml"
	"image/color"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// badLayout says what is wrong with a label layout: two labels of a row
// that overlap, a label crossed by the line of an event labelled higher,
// a label past the edges.
func badLayout(ls []placed, minX, maxX vg.Length) string {
	for i, a := range ls {
		if a.box[0] < minX || a.box[1] > maxX {
			return a.ev.Label + " runs past the edge"
		}
		for j, b := range ls {
			if i == j {
				continue
			}
			if a.row == b.row && a.box[0] < b.box[1] && b.box[0] < a.box[1] {
				return a.ev.Label + " overlaps " + b.ev.Label
			}
			if b.row > a.row && a.box[0] <= b.x && b.x <= a.box[1] {
				return "the line of " + b.ev.Label + " crosses " + a.ev.Label
			}
		}
	}
	return ""
}

// TestLayout: labels of close events (a few points apart, as the stop
// command and the first produce after it), of events at both edges and
// of many events get rows where none overlaps another, none is crossed
// by a line and none runs past the edges. The checker is not blind: all
// labels on one row, as a hand-drawn picture puts them, fail it.
func TestLayout(t *testing.T) {
	sty := textStyle(9)
	x := func(v float64) vg.Length { return vg.Length(50 + v*5) } // 0..100 → 50..550
	for _, tc := range []struct {
		name string
		xs   []float64
	}{
		{"close", []float64{40, 40.5, 41, 70}},
		{"edges", []float64{0, 0.2, 99.5, 100}},
		{"same time", []float64{50, 50, 50}},
		{"many", []float64{0, 5, 9, 10, 23, 23.5, 24, 40, 41, 42, 43, 60, 61, 80, 95, 99, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var evs []Event
			for i, v := range tc.xs {
				evs = append(evs, Event{X: v, Label: strconv.Itoa(i+1) + " event at " + strconv.FormatFloat(v, 'f', -1, 64)})
			}
			ls := layout(evs, x, sty, 0, 600)
			if len(ls) != len(evs) {
				t.Fatalf("%d labels for %d events", len(ls), len(evs))
			}
			if bad := badLayout(ls, 0, 600); bad != "" {
				t.Fatal(bad)
			}
			flat := slices.Clone(ls)
			for i := range flat {
				flat[i].row = 0
				flat[i].box = [2]vg.Length{flat[i].x + 2, flat[i].x + 2 + sty.Width(flat[i].ev.Label)}
			}
			if badLayout(flat, 0, 600) == "" {
				t.Fatal("one row of labels passes the checker")
			}
		})
	}
}

func TestSteps(t *testing.T) {
	got := Steps([]float64{0, 1, 2, 3, 4}, []float64{5, 5, 7, 0})
	want := plotter.XYs{{X: 0, Y: 5}, {X: 2, Y: 5}, {X: 2, Y: 7}, {X: 3, Y: 7}, {X: 3, Y: 0}, {X: 4, Y: 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("Steps = %v, want %v", got, want)
	}
}

// svgText is a text element of the SVG: where it starts and what it says.
type svgText struct {
	x, y  float64
	size  float64
	value string
}

// ParseSVG reads an SVG written by WriteSVG: it must be well-formed XML;
// it returns the width, the texts and each stroked path's points by
// stroke colour (as written: #RRGGBB).
func parseSVG(t *testing.T, b []byte) (width float64, texts []svgText, paths map[string][][][2]float64) {
	t.Helper()
	paths = map[string][][][2]float64{}
	dec := xml.NewDecoder(bytes.NewReader(b))
	var cur *svgText
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch el.Name.Local {
			case "svg":
				vb := strings.Fields(attr["viewBox"])
				if len(vb) == 4 {
					width, _ = strconv.ParseFloat(vb[2], 64)
				}
			case "text":
				tx, _ := strconv.ParseFloat(attr["x"], 64)
				ty, _ := strconv.ParseFloat(attr["y"], 64)
				st := svgText{x: tx, y: -ty}
				if _, after, ok := strings.Cut(attr["style"], "font-size:"); ok {
					st.size, _ = strconv.ParseFloat(strings.TrimSuffix(strings.Split(after, ";")[0], "px"), 64)
				}
				cur = &st
			case "path":
				_, after, ok := strings.Cut(attr["style"], "stroke:")
				if !ok {
					continue
				}
				col := strings.ToLower(strings.Split(after, ";")[0])
				var pts [][2]float64
				for _, cmd := range strings.FieldsFunc(attr["d"], func(r rune) bool { return r == 'M' || r == 'L' }) {
					xs, ys, ok := strings.Cut(cmd, ",")
					if !ok {
						continue
					}
					px, _ := strconv.ParseFloat(xs, 64)
					py, _ := strconv.ParseFloat(strings.TrimSuffix(ys, "Z"), 64)
					pts = append(pts, [2]float64{px, py})
				}
				paths[col] = append(paths[col], pts)
			}
		case xml.CharData:
			if cur != nil {
				cur.value += string(el)
			}
		case xml.EndElement:
			if el.Name.Local == "text" && cur != nil {
				texts = append(texts, *cur)
				cur = nil
			}
		}
	}
	return width, texts, paths
}

// TestWriteSVG: a two-panel figure with a legend, events and a footer is
// well-formed SVG whose texts include the legend's names, the axis labels
// and every event's label, each inside the picture (measured with the
// widest fallback face the slack allows for), and whose step lines have
// only horizontal and vertical segments.
func TestWriteSVG(t *testing.T) {
	blue := color.RGBA{0x1f, 0x77, 0xb4, 0xff}
	top, bottom := NewPanel("appended (records/s)"), NewPanel("lag (records)")
	fig := &Figure{Title: "test figure", XLabel: "time (s)", XMax: 100, Panels: []*plot.Plot{top, bottom},
		Footer: []string{strings.Repeat("a long footer line that must wrap ", 8)}}
	ls := draw.LineStyle{Color: blue, Width: 1}
	fig.AddLegend("cluster a", AddSteps(top, []plotter.XYs{Steps([]float64{0, 10, 20, 30}, []float64{1, 5, 2})}, ls))
	AddSteps(bottom, []plotter.XYs{Steps([]float64{50, 60, 100}, []float64{3, 0})}, ls)
	for i, v := range []float64{0, 1, 2, 50, 99, 100} {
		fig.Events = append(fig.Events, Event{X: v, Label: "event number " + strconv.Itoa(i+1)})
	}
	var buf bytes.Buffer
	if err := fig.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	width, texts, paths := parseSVG(t, buf.Bytes())
	if width != 720 {
		t.Fatalf("width %v, want 720", width)
	}
	want := map[string]bool{"test figure": false, "cluster a": false, "appended (records/s)": false, "lag (records)": false, "time (s)": false}
	for i := range fig.Events {
		want["event number "+strconv.Itoa(i+1)] = false
	}
	sty := textStyle(9)
	for _, tx := range texts {
		if _, ok := want[tx.value]; ok {
			want[tx.value] = true
		}
		w := float64(sty.Width(tx.value)) * tx.size / 9 * slack
		if tx.x < 0 || tx.x+w > width {
			t.Errorf("text %q from %.1f to %.1f, outside 0..%v", tx.value, tx.x, tx.x+w, width)
		}
	}
	for s, seen := range want {
		if !seen {
			t.Errorf("no text %q", s)
		}
	}
	lines := paths["#1f77b4"]
	if len(lines) < 3 { // the legend's thumbnail and a line per panel
		t.Fatalf("%d blue paths, want 3", len(lines))
	}
	for _, pts := range lines {
		for i := 1; i < len(pts); i++ {
			if pts[i][0] != pts[i-1][0] && pts[i][1] != pts[i-1][1] {
				t.Fatalf("a sloped segment %v → %v", pts[i-1], pts[i])
			}
		}
	}
}
