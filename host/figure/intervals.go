package figure

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The groups of an Interval: rows of one group share a colour and a
// marker.
const (
	// IntervalReplicate is one replicate's estimate (a filled circle).
	IntervalReplicate = 0
	// IntervalSummary is the estimate across replicates (a filled
	// diamond).
	IntervalSummary = 1
	// IntervalPaper is the paper's estimate (a hollow ring).
	IntervalPaper = 2
)

// groupNames name the groups in errors.
var groupNames = [...]string{"per replicate", "summary", "paper"}

// Interval is one row of a forest plot: an estimate with its interval.
type Interval struct {
	// Label names the row on the y axis, e.g. "replicate 0".
	Label string
	// Mean is the estimate, Lo and Hi its interval's ends: Lo <= Mean <=
	// Hi, all finite.
	Mean, Lo, Hi float64
	// Group is IntervalReplicate, IntervalSummary or IntervalPaper.
	Group int
}

// Intervals is a forest plot for IntervalsPlot: one row an estimate with
// its interval.
type Intervals struct {
	// Title is the figure's title.
	Title string
	// XLabel labels the x axis, e.g. "disc-7 IoU: ensemble - deterministic".
	XLabel string
	// Rows are the estimates, top to bottom.
	Rows []Interval
	// Zero draws a dashed vertical reference line at x = 0 (and keeps 0
	// in the x range).
	Zero bool
}

// IntervalsWidth is the forest plot's width; its height grows with the
// rows (see IntervalsPlot).
const IntervalsWidth = 8 * vg.Inch

// Layout constants of the forest plot.
const (
	intervalsMargin = vg.Inch / 8
	// intervalsRow is the height of one row: 45 pixels at DPI.
	intervalsRow = vg.Inch * 3 / 10
	// intervalsPad is the margin left and right of the intervals, a
	// fraction of their span.
	intervalsPad = 0.05
	// intervalsProbe is the height of the canvas on which the plot's
	// padding (title, x axis) is measured; any height that leaves a data
	// area will do.
	intervalsProbe = 10 * vg.Inch
)

// The marks of the forest plot.
var (
	// intervalLine is the width of an interval's bar.
	intervalLine = vg.Points(1.5)
	// intervalRadius is the radius of a replicate's circle and of the
	// paper's ring; a summary's diamond reaches diamondScale times as far
	// from its centre (the same area as the circle would have nearly).
	intervalRadius = vg.Points(3.5)
	diamondScale   = vg.Length(1.3)
	// zeroLine is the dashed reference line at x = 0.
	zeroLine = draw.LineStyle{
		Color:  color.NRGBA{R: 0x60, G: 0x60, B: 0x60, A: 0xff},
		Width:  vg.Points(1),
		Dashes: []vg.Length{vg.Points(4), vg.Points(3)},
	}
	// separator is the thin line between rows of different groups.
	separator = draw.LineStyle{Color: color.NRGBA{R: 0xb4, G: 0xb4, B: 0xb4, A: 0xff}, Width: vg.Points(0.75)}
)

// groupColours are the groups' colours: cividis sampled as methodColours
// samples it for two methods (0.15 for the replicates, 0.85 for the
// summary), and black for the paper, as PerClassBars draws the paper's
// values.
func groupColours() [3]color.Color {
	c := methodColours(2)
	return [3]color.Color{c[0], c[1], color.Black}
}

// IntervalsPlot writes a forest plot to w as a PNG at 150 dpi,
// IntervalsWidth (8 in) wide and 0.3 in a row high, plus the margins, the
// title and the x axis (a whole number of pixels): one row an Interval, top to bottom, labelled on the y axis, its estimate a
// marker on a horizontal bar from Lo to Hi. Replicates are filled circles
// and the summary a filled diamond (black outline), in cividis (see
// groupColours); the paper is a hollow black ring. A thin grey line
// separates consecutive rows of different groups. The x range covers
// every Lo and Hi (and 0 when Zero) with a margin of 5 % of their span
// each side; Zero adds a dashed vertical line at 0.
//
// Bad input (no rows, an empty label, an unknown group, a Mean, Lo or Hi
// NaN or Inf, Lo > Mean or Mean > Hi, a range too wide to plot) is an
// error naming the row, and nothing is written.
func IntervalsPlot(w io.Writer, f Intervals) error {
	fig, err := newIntervalsFigure(f)
	if err != nil {
		return err
	}
	return render(w, IntervalsWidth, fig.height, fig.draw)
}

// IntervalsPlotFile writes IntervalsPlot's PNG to path, atomically.
func IntervalsPlotFile(path string, f Intervals) error {
	return writeFile(path, func(w io.Writer) error { return IntervalsPlot(w, f) })
}

// validate checks f (see IntervalsPlot).
func (f *Intervals) validate() error {
	if len(f.Rows) == 0 {
		return fmt.Errorf("no Rows: want at least one interval")
	}
	for i, r := range f.Rows {
		if r.Label == "" {
			return fmt.Errorf("Rows[%d] has an empty Label: want the row's name", i)
		}
		if r.Group < 0 || r.Group >= len(groupNames) {
			return fmt.Errorf("Rows[%d] (%s) has Group %d: want %d (%s), %d (%s) or %d (%s)", i, r.Label, r.Group,
				IntervalReplicate, groupNames[IntervalReplicate], IntervalSummary, groupNames[IntervalSummary],
				IntervalPaper, groupNames[IntervalPaper])
		}
		for _, v := range []struct {
			name string
			x    float64
		}{{"Mean", r.Mean}, {"Lo", r.Lo}, {"Hi", r.Hi}} {
			if math.IsNaN(v.x) || math.IsInf(v.x, 0) {
				return fmt.Errorf("Rows[%d] (%s) has %s %v: every value must be finite", i, r.Label, v.name, v.x)
			}
		}
		if !(r.Lo <= r.Mean && r.Mean <= r.Hi) {
			return fmt.Errorf("Rows[%d] (%s) has Lo %g, Mean %g, Hi %g: want Lo <= Mean <= Hi", i, r.Label, r.Lo, r.Mean, r.Hi)
		}
	}
	if _, _, ok := f.xRange(); !ok {
		lo, hi := f.span()
		return fmt.Errorf("the intervals span [%g, %g]: too wide a range to plot", lo, hi)
	}
	return nil
}

// span returns the least Lo and the greatest Hi of the rows, widened to
// hold 0 when Zero.
func (f *Intervals) span() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	if f.Zero {
		lo, hi = 0, 0
	}
	for _, r := range f.Rows {
		lo, hi = math.Min(lo, r.Lo), math.Max(hi, r.Hi)
	}
	return lo, hi
}

// xRange is the x axis's range: span with intervalsPad of its width each
// side. A span of one point is widened to half its magnitude each side
// (at least 0.5). ok is false when the range (or its width) overflows.
func (f *Intervals) xRange() (min, max float64, ok bool) {
	lo, hi := f.span()
	if lo == hi {
		w := math.Max(math.Abs(lo), 1) / 2
		lo, hi = lo-w, hi+w
	}
	pad := intervalsPad*hi - intervalsPad*lo // no overflow in hi - lo
	min, max = lo-pad, hi+pad
	ok = !math.IsInf(min, 0) && !math.IsInf(max, 0) && !math.IsInf(max-min, 0)
	return min, max, ok
}

// intervalsFigure is an Intervals' plot.
type intervalsFigure struct {
	plot   *plot.Plot
	rows   *intervalRows
	height vg.Length // the figure's
	slack  vg.Length // added to the bottom margin to make height whole pixels
}

// newIntervalsFigure validates f and builds its plot: row i (from the top)
// is at y = n - 1 - i, the y axis spans [-0.5, n - 0.5].
func newIntervalsFigure(f Intervals) (*intervalsFigure, error) {
	if err := f.validate(); err != nil {
		if f.Title != "" {
			return nil, fmt.Errorf("figure: interval plot %q: %w", f.Title, err)
		}
		return nil, fmt.Errorf("figure: interval plot: %w", err)
	}
	p := newPlot()
	p.Title.Text = f.Title
	p.X.Label.Text = f.XLabel
	p.X.Min, p.X.Max, _ = f.xRange()
	n := len(f.Rows)
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	ticks := make(plot.ConstantTicks, n)
	for i, r := range f.Rows {
		ticks[i] = plot.Tick{Value: rowY(i, n), Label: r.Label}
	}
	p.Y.Tick.Marker = ticks
	rows := &intervalRows{f: f, colours: groupColours()}
	p.Add(rows)
	fig := &intervalsFigure{plot: p, rows: rows}
	fixed := fig.fixedHeight()
	fig.height = fixed + vg.Length(n)*intervalsRow
	px := vg.Inch / DPI
	whole := vg.Length(math.Ceil(float64(fig.height/px))) * px
	fig.slack, fig.height = whole-fig.height, whole
	return fig, nil
}

// fixedHeight is the height of the figure less its rows: the margins and
// the plot's padding above and below the data area (the title, the x
// axis), which do not depend on the canvas's height.
func (f *intervalsFigure) fixedHeight() vg.Length {
	c := f.layout(draw.New(vgimg.NewWith(vgimg.UseWH(IntervalsWidth, intervalsProbe), vgimg.UseDPI(DPI))))
	d := f.plot.DataCanvas(c)
	return intervalsProbe - (d.Max.Y - d.Min.Y)
}

// rowY is the y of row i of n (row 0 at the top).
func rowY(i, n int) float64 { return float64(n - 1 - i) }

// intervalRows draws the rows of an Intervals.
type intervalRows struct {
	f       Intervals
	colours [3]color.Color
}

// Plot draws the group separators and the zero line, then each row's bar
// and marker over them.
func (g *intervalRows) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(g.f.Rows)
	for i := 1; i < n; i++ {
		if g.f.Rows[i].Group != g.f.Rows[i-1].Group {
			y := trY(rowY(i, n) + 0.5)
			c.StrokeLine2(separator, c.Min.X, y, c.Max.X, y)
		}
	}
	if g.f.Zero {
		x := trX(0)
		c.StrokeLine2(zeroLine, x, c.Min.Y, x, c.Max.Y)
	}
	for i, r := range g.f.Rows {
		y := trY(rowY(i, n))
		col := g.colours[r.Group]
		bar := draw.LineStyle{Color: col, Width: intervalLine}
		c.StrokeLine2(bar, trX(r.Lo), y, trX(r.Hi), y)
		drawMarker(&c, r.Group, col, vg.Point{X: trX(r.Mean), Y: y})
	}
}

// drawMarker draws group's marker in col at pt: a filled circle, a
// filled diamond outlined in black, or a ring hollow (white) inside.
func drawMarker(c *draw.Canvas, group int, col color.Color, pt vg.Point) {
	switch group {
	case IntervalReplicate:
		c.DrawGlyph(draw.GlyphStyle{Color: col, Radius: intervalRadius, Shape: draw.CircleGlyph{}}, pt)
	case IntervalSummary:
		r := diamondScale * intervalRadius
		pts := []vg.Point{
			{X: pt.X, Y: pt.Y + r}, {X: pt.X + r, Y: pt.Y},
			{X: pt.X, Y: pt.Y - r}, {X: pt.X - r, Y: pt.Y},
		}
		c.FillPolygon(col, pts)
		c.StrokeLines(outline, append(pts, pts[0]))
	case IntervalPaper:
		c.DrawGlyph(draw.GlyphStyle{Color: color.White, Radius: intervalRadius, Shape: draw.CircleGlyph{}}, pt)
		var ring vg.Path
		ring.Move(vg.Point{X: pt.X + intervalRadius, Y: pt.Y})
		ring.Arc(pt, intervalRadius, 0, 2*math.Pi)
		ring.Close()
		c.SetLineStyle(draw.LineStyle{Color: col, Width: vg.Points(1)})
		c.Stroke(ring)
	}
}

// layout returns the plot's canvas on dc: dc less the margin (and, at the
// bottom, the slack that rounds the height to whole pixels), so that the
// data area is intervalsRow a row.
func (f *intervalsFigure) layout(dc draw.Canvas) draw.Canvas {
	return draw.Crop(dc, intervalsMargin, -intervalsMargin, intervalsMargin+f.slack, -intervalsMargin)
}

// draw lays the figure out on dc and draws it.
func (f *intervalsFigure) draw(dc draw.Canvas) {
	f.plot.Draw(f.layout(dc))
}
