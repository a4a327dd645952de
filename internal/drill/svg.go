package drill

import (
	"fmt"
	"io"
	"strings"
)

// WriteSVG draws the report's timeline by hand: per second, the records
// acknowledged and consumed on each cluster (one line each), the stop
// command, the first produce and consume on B, and every gap and
// duplicate as a mark.
func (rep *Report) WriteSVG(w io.Writer) error {
	const width, height, left, top, bottom = 900, 360, 60, 40, 300
	secs := int((rep.EndMs-rep.StartMs)/1000) + 1
	type key struct{ kind, cluster string }
	counts := map[key][]int{}
	maxN := 1
	for _, e := range rep.Timeline {
		if e.Kind != "acked" && e.Kind != "consumed" {
			continue
		}
		k := key{e.Kind, e.Cluster}
		if counts[k] == nil {
			counts[k] = make([]int, secs)
		}
		i := int((e.AtMs - rep.StartMs) / 1000)
		if i >= 0 && i < secs {
			counts[k][i]++
			maxN = max(maxN, counts[k][i])
		}
	}
	x := func(ms int64) float64 {
		return left + float64(ms-rep.StartMs)/float64(max(rep.EndMs-rep.StartMs, 1))*(width-left-20)
	}
	y := func(n int) float64 { return bottom - float64(n)/float64(maxN)*(bottom-top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	status := "PASSED"
	if !rep.Passed {
		status = "FAILED: " + strings.Join(rep.Problems, "; ")
	}
	fmt.Fprintf(&b, `<text x="%d" y="20">drill of mirror %s: %s</text>`+"\n", left, esc(rep.Mirror), esc(status))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, bottom, width-20, bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, bottom)
	fmt.Fprintf(&b, `<text x="5" y="%d">%d/s</text><text x="5" y="%d">0</text>`+"\n", top+4, maxN, bottom)
	for s := 0; s < secs; s += max(secs/10, 1) {
		fmt.Fprintf(&b, `<text x="%.0f" y="%d">%ds</text>`+"\n", x(rep.StartMs+int64(s)*1000), bottom+15, s)
	}
	styles := []struct {
		k     key
		color string
		dash  string
	}{{key{"acked", "A"}, "#1f77b4", ""}, {key{"consumed", "A"}, "#1f77b4", "4,3"}, {key{"acked", "B"}, "#d62728", ""}, {key{"consumed", "B"}, "#d62728", "4,3"},
		{key{"acked", "A2"}, "#2ca02c", ""}, {key{"consumed", "A2"}, "#2ca02c", "4,3"}}
	for i, st := range styles {
		c := counts[st.k]
		if c != nil {
			var pts []string
			for s, n := range c {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(rep.StartMs+int64(s)*1000+500), y(n)))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-dasharray="%s" stroke-width="2" points="%s"/>`+"\n", st.color, st.dash, strings.Join(pts, " "))
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-dasharray="%s" stroke-width="2"/><text x="%d" y="%d">%s on %s</text>`+"\n",
			left+(i%4)*200, height-36+14*(i/4), left+(i%4)*200+30, height-36+14*(i/4), st.color, st.dash, left+(i%4)*200+35, height-32+14*(i/4), st.k.kind, st.k.cluster)
	}
	vline := func(ms int64, color, label string, row int) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/><text x="%.1f" y="%d" fill="%s">%s</text>`+"\n",
			x(ms), top, x(ms), bottom, color, x(ms)+3, top+12+14*row, color, esc(label))
	}
	vline(rep.StopAtMs, "black", "mirror stop", 0)
	if rep.RTOProduceMs >= 0 {
		vline(rep.StopAtMs+rep.RTOProduceMs, "green", fmt.Sprintf("first produce on B (+%d ms)", rep.RTOProduceMs), 1)
	}
	if rep.RTOConsumeMs >= 0 {
		vline(rep.StopAtMs+rep.RTOConsumeMs, "purple", fmt.Sprintf("first consume on B (+%d ms)", rep.RTOConsumeMs), 2)
	}
	for _, e := range rep.Timeline {
		switch e.Kind {
		case "duplicate":
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%d" r="3" fill="orange"><title>duplicate %d</title></circle>`+"\n", x(e.AtMs), bottom-6, e.Seq)
		case "gap":
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="5" height="5" fill="red"><title>gap %d</title></rect>`+"\n", x(e.AtMs)-6, bottom-14, e.Seq)
		}
	}
	for _, s := range append(append([]int64{}, rep.LostAtFailover...), rep.LostOnB...) {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="5" height="5" fill="red"><title>lost %d</title></rect>`+"\n", x(rep.StopAtMs)-6, bottom-24, s)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">lost at failover %d (predicted ≤ %d offsets), lost on B %d, gaps %d, duplicates %d, out of order %d</text>`+"\n",
		left, height-4, len(rep.LostAtFailover), rep.PredictedLoss, len(rep.LostOnB), len(rep.Gaps), len(rep.Duplicates), len(rep.OutOfOrder))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
