package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
)

// Chart is a line chart of report.html, drawn as inline SVG: the metric
// curves of a posterior and explainer (host/analysis), each line's y at
// the steps 1..len(Y), with an optional band [Lo, Hi] around it.
type Chart struct {
	Title, XLabel, YLabel string
	Lines                 []ChartLine
}

// ChartLine is one line of a Chart; Lo and Hi are both nil or both of
// Y's length. A non-finite value leaves a gap.
type ChartLine struct {
	Label     string
	Y, Lo, Hi []float64
}

// svg draws the chart: the lines in the palette's colours, each band a
// lighter area, the y axis from the lowest to the highest value shown,
// ticks at the ends and the middle, the legend below.
func (c *Chart) svg() template.HTML {
	const w, h, top, left, right = 640.0, 220.0, 30.0, 64.0, 16.0
	n := 0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range c.Lines {
		n = max(n, len(l.Y))
		for _, s := range [][]float64{l.Y, l.Lo, l.Hi} {
			for _, v := range s {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
	}
	if lo > hi { // nothing finite
		lo, hi = 0, 1
	}
	if hi == lo {
		lo, hi = lo-0.5, hi+0.5
	}
	H := top + h + 40 + 18*float64(len(c.Lines))
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" class="curves" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`, w, H, w, H)
	x := func(k int) float64 {
		if n <= 1 {
			return left
		}
		return left + (w-left-right)*float64(k)/float64(n-1)
	}
	y := func(v float64) float64 { return top + h*(hi-v)/(hi-lo) }
	for _, t := range []float64{lo, (lo + hi) / 2, hi} {
		fmt.Fprintf(&s, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" class="tick" text-anchor="end">%.3g</text>`, left, w-right, y(t), y(t), left-4, y(t)+4, t)
	}
	for _, k := range []int{0, (n - 1) / 2, n - 1} {
		if k >= 0 {
			fmt.Fprintf(&s, `<text x="%.1f" y="%.0f" class="tick" text-anchor="middle">%d</text>`, x(k), top+h+14, k+1)
		}
	}
	fmt.Fprintf(&s, `<text x="%.0f" y="%.0f" class="tick" text-anchor="middle">%s</text>`, (left+w-right)/2, top+h+30, template.HTMLEscapeString(c.XLabel))
	fmt.Fprintf(&s, `<text class="tick" transform="translate(12,%.0f) rotate(-90)" text-anchor="middle">%s</text>`, top+h/2, template.HTMLEscapeString(c.YLabel))
	for i, l := range c.Lines {
		col := palette[i%len(palette)]
		if l.Lo != nil {
			var pts []string
			for k, v := range l.Lo {
				if finite(v) && finite(l.Hi[k]) {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(k), y(v)))
				}
			}
			for k := len(l.Hi) - 1; k >= 0; k-- {
				if finite(l.Lo[k]) && finite(l.Hi[k]) {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(k), y(l.Hi[k])))
				}
			}
			if len(pts) > 2 {
				fmt.Fprintf(&s, `<polygon points="%s" fill="%s" fill-opacity="0.2" stroke="none"/>`, strings.Join(pts, " "), col)
			}
		}
		var d strings.Builder
		pen := "M"
		for k, v := range l.Y {
			if !finite(v) {
				pen = "M"
				continue
			}
			fmt.Fprintf(&d, "%s%.1f,%.1f ", pen, x(k), y(v))
			pen = "L"
		}
		fmt.Fprintf(&s, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"><title>%s</title></path>`, strings.TrimSpace(d.String()), col, template.HTMLEscapeString(l.Label))
		ly := top + h + 52 + 18*float64(i)
		fmt.Fprintf(&s, `<rect x="%.0f" y="%.1f" width="12" height="12" fill="%s"/><text x="%.0f" y="%.1f" class="tick">%s</text>`, left, ly-10, col, left+18, ly, template.HTMLEscapeString(l.Label))
	}
	fmt.Fprintf(&s, `<text x="%.0f" y="16" class="title">%s</text></svg>`, left, template.HTMLEscapeString(c.Title))
	return template.HTML(s.String())
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
