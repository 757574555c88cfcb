package train

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

func TestNiceStep(t *testing.T) {
	cases := []struct{ raw, want float64 }{
		{0.7, 1}, {1, 1}, {1.3, 2}, {3, 5}, {7, 10}, {12, 20}, {0.023, 0.05}, {450, 500}, {0.001, 0.001},
	}
	for _, c := range cases {
		if got := niceStep(c.raw); math.Abs(got-c.want) > 1e-12*c.want {
			t.Errorf("niceStep(%v) = %v, want %v", c.raw, got, c.want)
		}
	}
}

func TestAxisTicksAndLabels(t *testing.T) {
	cases := []struct {
		lo, hi float64
		n      int
		round  bool
		want   string
	}{
		{0.13, 0.71, 5, true, "0.0 0.2 0.4 0.6 0.8"},
		{1, 24, 6, false, "5 10 15 20"},
		{3, 3, 5, true, "2.0 2.5 3.0 3.5 4.0"}, // a flat series still gets an axis around it
		{math.Inf(1), math.Inf(-1), 5, true, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{0, 250000, 5, true, "0 5e+04 1e+05 1.5e+05 2e+05 2.5e+05"},
	}
	for _, c := range cases {
		a := newAxis(c.lo, c.hi, c.n, c.round)
		var labels []string
		for _, v := range a.ticks {
			labels = append(labels, a.label(v))
		}
		if got := strings.Join(labels, " "); got != c.want {
			t.Errorf("axis(%v, %v): ticks %s, want %s", c.lo, c.hi, got, c.want)
		}
	}
}

func TestLineChartPlacesPointsAndEscapes(t *testing.T) {
	c := LineChart{Title: `loss <"&">`, XLabel: "step", YLabel: "y", Width: 400, Height: 200,
		Series:  []Series{{Name: "a<b", X: []float64{0, 1, 2, 3}, Y: []float64{0, 1, math.NaN(), 2}}},
		Markers: []Marker{{X: 1.5, Label: "</text><script>"}}}
	svg := c.SVG()
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	var texts []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, svg)
		}
		if cd, ok := tok.(xml.CharData); ok {
			texts = append(texts, string(cd))
		}
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{`loss <"&">`, "a<b", "</text><script>"} {
		if !strings.Contains(all, want) {
			t.Errorf("text %q not in the chart's text nodes %q", want, all)
		}
	}
	// The NaN splits the line: (0,0)-(1,1) is one polyline; (3,2) alone is a dot only. The plot is
	// 400-64-16 = 320 px wide over x 0…3 and 200-44-44 = 112 px tall over y 0…2.
	want := fmt.Sprintf(`points="%s,%s %s,%s"`, num(64), num(156), num(64+320.0/3), num(156-56))
	if !strings.Contains(svg, want) || strings.Count(svg, "<polyline") != 1 {
		t.Errorf("want one polyline with %s in\n%s", want, svg)
	}
	if strings.Count(svg, "<circle") != 3 {
		t.Errorf("want 3 dots (finite points), got %d", strings.Count(svg, "<circle"))
	}
}
