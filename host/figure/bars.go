package figure

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bars is a per-class score table for PerClassBars: one value per
// (method, class), in [0, 1].
type Bars struct {
	// Title is the figure's title.
	Title string
	// YLabel labels the y axis; "" means "IoU".
	YLabel string
	// Classes name the x positions, left to right.
	Classes []string
	// Methods name the bar groups' members (the legend), one colour each.
	Methods []string
	// Values[m][c] is method m's score on class c, in [0, 1].
	Values [][]float64
	// SD[m][c] is the standard deviation of Values[m][c] across splits,
	// >= 0, drawn as an error bar (optional: nil for none).
	SD [][]float64
	// Paper[m][c] is the paper's value for method m and class c, drawn
	// as a ring, NaN where the paper has none (optional: nil for none).
	Paper [][]float64
}

// PerClassBars writes a grouped bar chart of per-class scores (the
// paper's per-class IoU figure) to w as a 10 x 5 in PNG at 150 dpi:
// classes on the x axis (labels rotated 45°), one bar a method in each
// class's group, coloured by sampling cividis evenly between 0.15 and 0.85
// (the ends are too dark or too light beside black outlines and a white
// background), the y axis fixed to [0, 1] with horizontal grid lines. SD,
// when given, adds black error bars Values ± SD, clipped to [0, 1]; Paper,
// when given, adds a black ring at each of the paper's values. The legend
// (methods, and "paper") stands right of the chart, outside the bars and
// inside the image: its column is as wide as its longest entry (the chart
// narrows to make room), a label longer than 40 % of the figure's width
// is cut in the middle with "…", and entries that do not fit the chart's
// height go on in further columns.
//
// Bad input (no classes or methods, a row whose length is not the number
// of classes, a number of rows that is not the number of methods, a value
// NaN, Inf or outside [0, 1], an SD negative or not finite, a Paper value
// Inf or outside [0, 1]) is an error naming the series and index, and
// nothing is written.
func PerClassBars(w io.Writer, b Bars) error {
	f, err := newBarsFigure(b)
	if err != nil {
		return err
	}
	return render(w, BarsWidth, BarsHeight, f.draw)
}

// PerClassBarsFile writes PerClassBars' PNG to path, atomically.
func PerClassBarsFile(path string, b Bars) error {
	return writeFile(path, func(w io.Writer) error { return PerClassBars(w, b) })
}

// validate checks b (see PerClassBars).
func (b *Bars) validate() error {
	nc, nm := len(b.Classes), len(b.Methods)
	if nc == 0 {
		return fmt.Errorf("no Classes: want at least one class")
	}
	if nm == 0 {
		return fmt.Errorf("no Methods: want at least one method")
	}
	table := func(name string, t [][]float64, check func(v float64) string) error {
		if len(t) != nm {
			return fmt.Errorf("%s has %d rows, want %d (one a method)", name, len(t), nm)
		}
		for m, row := range t {
			if len(row) != nc {
				return fmt.Errorf("%s[%d] (%s) has %d values, want %d (one a class)", name, m, b.Methods[m], len(row), nc)
			}
			for c, v := range row {
				if why := check(v); why != "" {
					return fmt.Errorf("%s[%d][%d] (%s, %s) is %v: %s", name, m, c, b.Methods[m], b.Classes[c], v, why)
				}
			}
		}
		return nil
	}
	unit := func(v float64) string {
		if !(v >= 0 && v <= 1) { // also NaN
			return "want a finite value in [0, 1]"
		}
		return ""
	}
	if err := table("Values", b.Values, unit); err != nil {
		return err
	}
	if b.SD != nil {
		if err := table("SD", b.SD, func(v float64) string {
			if !(v >= 0) || math.IsInf(v, 1) {
				return "want a finite standard deviation >= 0"
			}
			return ""
		}); err != nil {
			return err
		}
	}
	if b.Paper != nil {
		if err := table("Paper", b.Paper, func(v float64) string {
			if math.IsNaN(v) {
				return "" // missing
			}
			if why := unit(v); why != "" {
				return why + ", or NaN where the paper has none"
			}
			return ""
		}); err != nil {
			return err
		}
	}
	return nil
}

// barsFigure is a Bars' plot and legend.
type barsFigure struct {
	plot   *plot.Plot
	legend plot.Legend // the style; entries are added by columns
	names  []string    // the legend's entries, fitted to barsMaxLegend
	thumbs []plot.Thumbnailer
	bars   *groupedBars
}

// Layout constants of the bar chart.
const (
	barsMargin    = vg.Inch / 8
	barsGap       = vg.Inch / 10      // between the chart and the legend, and its columns
	barsMaxLegend = BarsWidth * 2 / 5 // the widest legend entry
	barsGroup     = 0.8               // a class's group width, in x units
)

// newBarsFigure validates b and builds its plot.
func newBarsFigure(b Bars) (*barsFigure, error) {
	if err := b.validate(); err != nil {
		if b.Title != "" {
			return nil, fmt.Errorf("figure: bar chart %q: %w", b.Title, err)
		}
		return nil, fmt.Errorf("figure: bar chart: %w", err)
	}
	p := newPlot()
	p.Title.Text = b.Title
	p.Y.Label.Text = b.YLabel
	if p.Y.Label.Text == "" {
		p.Y.Label.Text = "IoU"
	}
	p.Y.Min, p.Y.Max = 0, 1
	var yt plot.ConstantTicks
	for k := 0; k <= 10; k++ {
		t := plot.Tick{Value: float64(k) / 10}
		if k%2 == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', 1, 64)
		}
		yt = append(yt, t)
	}
	p.Y.Tick.Marker = yt
	p.X.Min, p.X.Max = -0.5, float64(len(b.Classes))-0.5
	ticks := make(plot.ConstantTicks, len(b.Classes))
	for c, name := range b.Classes {
		ticks[c] = plot.Tick{Value: float64(c), Label: name}
	}
	p.X.Tick.Marker = ticks
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil
	p.Add(grid)

	g := &groupedBars{b: b, fills: methodColours(len(b.Methods))}
	p.Add(g)
	leg := newLegend()
	leg.Top = true
	leg.Left = true
	f := &barsFigure{plot: p, legend: leg, bars: g}
	text := barsMaxLegend - leg.ThumbnailWidth - leg.TextStyle.Width(" ")
	for m, name := range b.Methods {
		f.names = append(f.names, fitText(leg.TextStyle, name, text))
		f.thumbs = append(f.thumbs, rectThumb{Fill: g.fills[m], Line: outline})
	}
	if b.Paper != nil {
		f.names = append(f.names, "paper")
		f.thumbs = append(f.thumbs, ringThumb{})
	}
	return f, nil
}

// methodColours samples cividis at m = 0..n-1: u = 0.15 + 0.7 m / (n - 1),
// or 0.5 for one method.
func methodColours(n int) []color.Color {
	out := make([]color.Color, n)
	for m := range out {
		u := 0.5
		if n > 1 {
			u = 0.15 + 0.7*float64(m)/float64(n-1)
		}
		r, g, b := cividisRGB(u)
		out[m] = color.NRGBA{R: unit8(r), G: unit8(g), B: unit8(b), A: 0xff}
	}
	return out
}

// outline is the bars' and error bars' line.
var outline = draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}

// ringRadius is the radius of a paper value's ring.
var ringRadius = vg.Points(3.5)

// ringThumb is the legend thumbnail of the paper's values.
type ringThumb struct{}

// Thumbnail draws a ring at the thumbnail's centre.
func (ringThumb) Thumbnail(c *draw.Canvas) {
	ctr := vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2}
	c.DrawGlyph(ringStyle(), ctr)
}

// ringStyle is the glyph of a paper value.
func ringStyle() draw.GlyphStyle {
	return draw.GlyphStyle{Color: color.Black, Radius: ringRadius, Shape: draw.RingGlyph{}}
}

// groupedBars draws the bars, error bars and paper rings of a Bars: method
// m's bar of class c spans x in [c - 0.4 + m w, c - 0.4 + (m + 1) w], w =
// 0.8 / len(Methods), from 0 to Values[m][c].
type groupedBars struct {
	b     Bars
	fills []color.Color
}

// span is the x interval of method m's bar of class c.
func (g *groupedBars) span(m, c int) (x0, x1 float64) {
	w := barsGroup / float64(len(g.b.Methods))
	x0 = float64(c) - barsGroup/2 + float64(m)*w
	return x0, x0 + w
}

// Plot draws the bars, then the error bars, then the rings.
func (g *groupedBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for m, row := range g.b.Values {
		for cl, v := range row {
			x0, x1 := g.span(m, cl)
			pts := []vg.Point{
				{X: trX(x0), Y: trY(0)}, {X: trX(x0), Y: trY(v)},
				{X: trX(x1), Y: trY(v)}, {X: trX(x1), Y: trY(0)},
			}
			c.FillPolygon(g.fills[m], pts)
			c.StrokeLines(outline, append(pts, pts[0]))
		}
	}
	if g.b.SD != nil {
		for m, row := range g.b.SD {
			for cl, sd := range row {
				x0, x1 := g.span(m, cl)
				v := g.b.Values[m][cl]
				lo, hi := trY(max(0, v-sd)), trY(min(1, v+sd))
				xm, cap := trX((x0+x1)/2), (trX(x1)-trX(x0))/4
				c.StrokeLines(outline,
					[]vg.Point{{X: xm, Y: lo}, {X: xm, Y: hi}},
					[]vg.Point{{X: xm - cap, Y: lo}, {X: xm + cap, Y: lo}},
					[]vg.Point{{X: xm - cap, Y: hi}, {X: xm + cap, Y: hi}})
			}
		}
	}
	if g.b.Paper != nil {
		for m, row := range g.b.Paper {
			for cl, v := range row {
				if math.IsNaN(v) {
					continue
				}
				x0, x1 := g.span(m, cl)
				c.DrawGlyph(ringStyle(), vg.Point{X: trX((x0 + x1) / 2), Y: trY(v)})
			}
		}
	}
}

// legendColumns splits the legend's entries into columns of at most
// rows entries each, and returns each column's legend and width.
func (f *barsFigure) legendColumns(rows int) ([]plot.Legend, []vg.Length) {
	var ls []plot.Legend
	var ws []vg.Length
	for i := 0; i < len(f.names); i += rows {
		j := min(i+rows, len(f.names))
		l := f.legend
		for k := i; k < j; k++ {
			l.Add(f.names[k], f.thumbs[k])
		}
		ls = append(ls, l)
		ws = append(ws, legendWidth(f.legend, f.names[i:j]))
	}
	return ls, ws
}

// legendRows is how many legend entries fit one column of height h (at
// least one).
func (f *barsFigure) legendRows(h vg.Length) int {
	n := len(f.names)
	for n > 1 && legendHeight(f.legend, n) > h {
		n--
	}
	return n
}

// layout returns the plot's canvas and the canvas of each legend column
// on dc: the columns at the right of the figure less its margin, each as
// wide as its longest entry, over the height of the chart's data area;
// the chart fills the rest.
func (f *barsFigure) layout(dc draw.Canvas) (chart draw.Canvas, legends []draw.Canvas) {
	inner := draw.Crop(dc, barsMargin, -barsMargin, barsMargin, -barsMargin)
	data := f.plot.DataCanvas(inner) // its height does not depend on the width
	_, ws := f.legendColumns(f.legendRows(data.Max.Y - data.Min.Y))
	if len(ws) == 0 {
		return inner, nil
	}
	chart = inner
	x := inner.Max.X
	legends = make([]draw.Canvas, len(ws))
	for i := len(ws) - 1; i >= 0; i-- {
		c := inner
		c.Min.X, c.Max.X = x-ws[i], x
		c.Min.Y, c.Max.Y = data.Min.Y, data.Max.Y
		legends[i] = c
		x -= ws[i] + barsGap
	}
	chart.Max.X = x
	return chart, legends
}

// draw lays the figure out on dc and draws it.
func (f *barsFigure) draw(dc draw.Canvas) {
	chart, cs := f.layout(dc)
	f.plot.Draw(chart)
	ls, _ := f.legendColumns(f.legendRows(cs[0].Max.Y - cs[0].Min.Y))
	for i := range ls {
		ls[i].Draw(cs[i])
	}
}
