package timeplot

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// ReadSVG reads back an SVG this package wrote, for the tests that check
// a picture: the text of every text element in order, and the points of
// every stroked path keyed by its stroke colour (lower case).
func ReadSVG(b []byte) (texts []string, paths map[string][][][2]float64, err error) {
	paths = map[string][][][2]float64{}
	dec := xml.NewDecoder(bytes.NewReader(b))
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return texts, paths, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("SVG does not parse: %w", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			var style, d string
			for _, a := range el.Attr {
				switch a.Name.Local {
				case "style":
					style = a.Value
				case "d":
					d = a.Value
				}
			}
			inText = el.Name.Local == "text"
			if inText {
				texts = append(texts, "")
			}
			_, stroke, ok := strings.Cut(style, "stroke:")
			if el.Name.Local != "path" || !ok {
				continue
			}
			var pts [][2]float64
			for _, p := range strings.FieldsFunc(d, func(r rune) bool { return r == 'M' || r == 'L' || r == 'Z' }) {
				var x, y float64
				if _, err := fmt.Sscanf(p, "%g,%g", &x, &y); err == nil {
					pts = append(pts, [2]float64{x, y})
				}
			}
			col := strings.ToLower(strings.Split(stroke, ";")[0])
			paths[col] = append(paths[col], pts)
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(el)
			}
		case xml.EndElement:
			inText = false
		}
	}
}
