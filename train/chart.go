package train

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// LineChart is a line chart drawn as a standalone inline SVG element: axes with ticks, labels,
// a legend, several series and labelled vertical markers (stage boundaries). It needs no script,
// no font file and no network, so a report that embeds it stays one self-contained file.
type LineChart struct {
	Title, XLabel, YLabel string
	Width, Height         int // pixels; 0 = 560 × 260
	Series                []Series
	Markers               []Marker
}

// Series is one line. Points whose X or Y is not finite are left out, breaking the line there.
type Series struct {
	Name string
	X, Y []float64
}

// Marker is a dashed vertical line at X, labelled at the top of the plot.
type Marker struct {
	X     float64
	Label string
}

// seriesColors are distinguishable on white and in greyscale print, in order of use.
var seriesColors = []string{"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2"}

// chart margins around the plot area, in pixels.
const (
	marginLeft, marginRight = 64, 16
	marginTop, marginBottom = 44, 44
)

// SVG renders the chart. Every text in it is escaped.
func (c LineChart) SVG() string {
	w, h := c.Width, c.Height
	if w <= 0 || h <= 0 {
		w, h = 560, 260
	}
	xs, ys := c.domain()
	p := plot{x0: marginLeft, y0: marginTop, w: float64(w - marginLeft - marginRight), h: float64(h - marginTop - marginBottom), xs: xs, ys: ys}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		w, h, w, h, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="16" class="title">%s</text>`, marginLeft, esc(c.Title))
	c.writeLegend(&b)
	p.writeAxes(&b, c.XLabel, c.YLabel)
	for _, m := range c.Markers {
		p.writeMarker(&b, m)
	}
	for i, s := range c.Series {
		p.writeSeries(&b, s, seriesColors[i%len(seriesColors)])
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func (c LineChart) writeLegend(b *strings.Builder) {
	x := float64(marginLeft)
	for i, s := range c.Series {
		color := seriesColors[i%len(seriesColors)]
		fmt.Fprintf(b, `<rect x="%s" y="25" width="14" height="4" fill="%s"/><text x="%s" y="31" class="legend">%s</text>`,
			num(x), color, num(x+18), esc(s.Name))
		x += 18 + 7*float64(len([]rune(s.Name))) + 16 // a rough text width: the legend needs no precision
	}
}

// domain is the range of both axes over all finite points and markers, widened to round ticks.
func (c LineChart) domain() (xs, ys axis) {
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for i := range min(len(s.X), len(s.Y)) {
			if finite(s.X[i]) && finite(s.Y[i]) {
				xlo, xhi = math.Min(xlo, s.X[i]), math.Max(xhi, s.X[i])
				ylo, yhi = math.Min(ylo, s.Y[i]), math.Max(yhi, s.Y[i])
			}
		}
	}
	for _, m := range c.Markers {
		if finite(m.X) {
			xlo, xhi = math.Min(xlo, m.X), math.Max(xhi, m.X)
		}
	}
	return newAxis(xlo, xhi, 6, false), newAxis(ylo, yhi, 5, true)
}

// axis maps data values onto [0, 1] between round bounds and lists its ticks.
type axis struct {
	lo, hi, step float64
	ticks        []float64
}

// newAxis picks a round tick step giving about n ticks over [lo, hi]; with round, the bounds move
// out to whole steps (a y axis), else they stay at the data (an x axis of steps).
func newAxis(lo, hi float64, n int, round bool) axis {
	switch {
	case !finite(lo) || !finite(hi):
		lo, hi = 0, 1
	case lo == hi:
		pad := math.Max(math.Abs(lo)*0.1, 1)
		lo, hi = lo-pad, hi+pad
	}
	step := niceStep((hi - lo) / float64(n))
	if round {
		lo, hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	}
	a := axis{lo: lo, hi: hi, step: step}
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		a.ticks = append(a.ticks, v)
	}
	return a
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag*(1+1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

func (a axis) frac(v float64) float64 { return (v - a.lo) / (a.hi - a.lo) }

// label prints a tick value with as many decimals as the step needs.
func (a axis) label(v float64) string {
	// One format per axis: large or tiny scales in exponent form, the rest with fixed decimals.
	if math.Max(math.Abs(a.lo), math.Abs(a.hi)) >= 1e5 || a.step < 1e-3 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	decimals := max(0, int(-math.Floor(math.Log10(a.step)+1e-9)))
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// plot is the chart's drawing area in pixels.
type plot struct {
	x0, y0, w, h float64
	xs, ys       axis
}

func (p plot) px(x float64) float64 { return p.x0 + p.xs.frac(x)*p.w }
func (p plot) py(y float64) float64 { return p.y0 + (1-p.ys.frac(y))*p.h }

func (p plot) writeAxes(b *strings.Builder, xLabel, yLabel string) {
	bottom, right := p.y0+p.h, p.x0+p.w
	for _, t := range p.ys.ticks {
		y := num(p.py(t))
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" class="grid"/><text x="%s" y="%s" class="tick" text-anchor="end">%s</text>`,
			num(p.x0), y, num(right), y, num(p.x0-6), num(p.py(t)+4), p.ys.label(t))
	}
	for _, t := range p.xs.ticks {
		x := num(p.px(t))
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" class="axis"/><text x="%s" y="%s" class="tick" text-anchor="middle">%s</text>`,
			x, num(bottom), x, num(bottom+5), x, num(bottom+17), p.xs.label(t))
	}
	fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" class="axis"/>`, num(p.x0), num(bottom), num(right), num(bottom))
	fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" class="axis"/>`, num(p.x0), num(p.y0), num(p.x0), num(bottom))
	fmt.Fprintf(b, `<text x="%s" y="%s" class="label" text-anchor="middle">%s</text>`, num(p.x0+p.w/2), num(bottom+36), esc(xLabel))
	fmt.Fprintf(b, `<text x="14" y="%s" class="label" text-anchor="middle" transform="rotate(-90 14 %s)">%s</text>`,
		num(p.y0+p.h/2), num(p.y0+p.h/2), esc(yLabel))
}

func (p plot) writeMarker(b *strings.Builder, m Marker) {
	if !finite(m.X) {
		return
	}
	x := num(p.px(m.X))
	fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" class="marker"/><text x="%s" y="%s" class="marker-label">%s</text>`,
		x, num(p.y0), x, num(p.y0+p.h), num(p.px(m.X)+3), num(p.y0+10), esc(m.Label))
}

// writeSeries draws the finite runs of s as polylines, with dots when there are few points (a
// single point would otherwise be invisible).
func (p plot) writeSeries(b *strings.Builder, s Series, color string) {
	n := min(len(s.X), len(s.Y))
	var run []string
	flush := func() {
		if len(run) > 1 {
			fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.8" points="%s"><title>%s</title></polyline>`,
				color, strings.Join(run, " "), esc(s.Name))
		}
		run = run[:0]
	}
	for i := range n {
		if !finite(s.X[i]) || !finite(s.Y[i]) {
			flush()
			continue
		}
		run = append(run, num(p.px(s.X[i]))+","+num(p.py(s.Y[i])))
		if n <= 40 {
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.4" fill="%s"/>`, num(p.px(s.X[i])), num(p.py(s.Y[i])), color)
		}
	}
	flush()
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// num prints a pixel coordinate briefly.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// esc escapes text for HTML and XML alike.
func esc(s string) string { return html.EscapeString(s) }
