package figure

import (
	"bufio"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/uaxai/uaxai/internal/atomicfile"
)

// DPI is the resolution of every figure: an 8 in wide figure is 1200
// pixels wide.
const DPI = 150

// The figures' sizes.
const (
	QualitativeWidth  = 8 * vg.Inch
	QualitativeHeight = 10 * vg.Inch
	BarsWidth         = 10 * vg.Inch
	BarsHeight        = 5 * vg.Inch
)

// maskGrey is the colour of ground-truth mask shading.
var maskGrey = color.NRGBA{R: 0xc8, G: 0xc8, B: 0xc8, A: 0xff}

// sans is the typeface of every text (Liberation Sans, built into gonum
// plot, so the bytes do not depend on the machine's fonts).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot returns a plot whose texts are Liberation Sans: title 11 pt,
// axis labels 9 pt, tick labels 8 pt.
func newPlot() *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = font.From(sans, 11)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 9)
		a.Tick.Label.Font = font.From(sans, 8)
	}
	p.Legend.TextStyle.Font = font.From(sans, 9)
	return p
}

// newLegend returns a legend in 9 pt Liberation Sans, its entries 3 pt
// apart.
func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = font.From(sans, 9)
	l.Padding = vg.Points(3)
	return l
}

// render draws a width x height figure at DPI with fn and writes it to w
// as PNG.
func render(w io.Writer, width, height vg.Length, fn func(dc draw.Canvas)) (err error) {
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(DPI))
	defer func() {
		// gonum/plot panics on a layout it cannot draw (labels wider
		// than the figure leave a plot area of negative size): a figure
		// that fails is an error, never a crash of the run.
		if r := recover(); r != nil {
			err = fmt.Errorf("figure: drawing failed: %v", r)
		}
	}()
	fn(draw.New(img))
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		return fmt.Errorf("figure: writing PNG: %w", err)
	}
	return nil
}

// writeFile writes what draw writes to path atomically (a reader never sees
// half a PNG). draw's error comes first, before anything is renamed.
func writeFile(path string, draw func(io.Writer) error) error {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := atomicfile.Temp(dir, name, func(w *bufio.Writer) error { return draw(w) })
	if err != nil {
		return fmt.Errorf("figure: %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("figure: %s: %w", path, err)
	}
	atomicfile.SyncDir(dir)
	return nil
}

// checkFinite returns an error naming name[i] for the first NaN or Inf of
// x.
func checkFinite(name string, x []float64) error {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s[%d] is %v: every value must be finite", name, i, v)
		}
	}
	return nil
}

// checkSeries checks that x has n values, all finite; want names what n
// is (e.g. "the length of Wave").
func checkSeries(name string, x []float64, n int, want string) error {
	if len(x) != n {
		return fmt.Errorf("%s has %d values, want %d (%s)", name, len(x), n, want)
	}
	return checkFinite(name, x)
}

// minMax returns the least and greatest value of the rows (at least one
// value in all).
func minMax(rows ...[]float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		for _, v := range r {
			lo = math.Min(lo, v)
			hi = math.Max(hi, v)
		}
	}
	return lo, hi
}

// formatValue is v in 3 significant digits, as tick labels show values.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }

// alignX shifts the left and right edges of each canvas in cs so that the
// data areas of the plots ps (the same length) share their left and right
// x. The canvases must start with the same left and right edges (one
// column of rows); each plot's padding (axis labels, tick labels) does
// not depend on the canvas's width, so one pass suffices.
func alignX(ps []*plot.Plot, cs []draw.Canvas) {
	var left, right vg.Length
	l := make([]vg.Length, len(ps))
	r := make([]vg.Length, len(ps))
	for i, p := range ps {
		d := p.DataCanvas(cs[i])
		l[i], r[i] = d.Min.X-cs[i].Min.X, cs[i].Max.X-d.Max.X
		left, right = max(left, l[i]), max(right, r[i])
	}
	for i := range ps {
		cs[i].Min.X += left - l[i]
		cs[i].Max.X -= right - r[i]
	}
}

// alignY returns c with its bottom and top moved so that p's data area
// has the bottom and top of data, the data area of another plot.
func alignY(p *plot.Plot, c draw.Canvas, data draw.Canvas) draw.Canvas {
	d := p.DataCanvas(c)
	c.Min.Y += data.Min.Y - d.Min.Y
	c.Max.Y += data.Max.Y - d.Max.Y
	return c
}

// blankTicks is a Ticker with the ticks of plot.DefaultTicks and no
// labels: the rows of a figure that share the bottom row's time axis.
type blankTicks struct{}

// Ticks returns the default ticks of [min, max] without labels.
func (blankTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		ts[i].Label = ""
	}
	return ts
}

// rectThumb is a legend thumbnail: a rectangle filled with Fill and, if
// Line.Width > 0, outlined.
type rectThumb struct {
	Fill color.Color
	Line draw.LineStyle
}

// Thumbnail draws the rectangle over the thumbnail's canvas.
func (t rectThumb) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y},
	}
	c.FillPolygon(t.Fill, pts)
	if t.Line.Width > 0 {
		c.StrokeLines(t.Line, append(pts, pts[0]))
	}
}

// legendWidth is the width a legend of entries named names needs: the
// thumbnail, a space and the longest name (the extent plot.Legend.Draw
// fills from the left of its canvas with Left set).
func legendWidth(l plot.Legend, names []string) vg.Length {
	var w vg.Length
	for _, n := range names {
		w = max(w, l.ThumbnailWidth+l.TextStyle.Width(" "+n))
	}
	return w
}

// legendHeight is the height of a legend of n entries in style l.
func legendHeight(l plot.Legend, n int) vg.Length {
	if n == 0 {
		return 0
	}
	h := l.TextStyle.Rectangle("Ág").Max.Y
	return vg.Length(n)*h + vg.Length(n-1)*l.Padding
}

// fitText returns s, or s cut in the middle with "…" so that it is at
// most width wide in sty: the start and the end of a long method label
// are what tell it from the others.
func fitText(sty draw.TextStyle, s string, width vg.Length) string {
	if sty.Width(s) <= width {
		return s
	}
	r := []rune(s)
	for k := len(r) - 1; k > 0; k-- {
		head := (k + 1) / 2
		t := string(r[:head]) + "…" + string(r[len(r)-(k-head):])
		if sty.Width(t) <= width {
			return t
		}
	}
	return "…"
}

// flatRel is the relative spread below which a map is drawn as constant:
// the maps come from float32 arithmetic (machine epsilon 1.19e-7), so
// values that differ by less than about eight roundings of their size
// differ by rounding, not by relevance.
const flatRel = 1e-6

// isFlat reports whether [lo, hi] is a constant map's range:
// hi - lo <= flatRel max(|lo|, |hi|) (hence also hi == lo).
func isFlat(lo, hi float64) bool {
	return hi/2-lo/2 <= flatRel/2*max(math.Abs(lo), math.Abs(hi))
}

// rangeLabels formats lo < hi with the fewest significant digits (at
// least 3) that tell them apart, so that a colour bar's ends never read
// the same ("0.8971" and "0.8972", not "0.897" twice).
func rangeLabels(lo, hi float64) (string, string) {
	for d := 3; d < 17; d++ {
		a, b := strconv.FormatFloat(lo, 'g', d, 64), strconv.FormatFloat(hi, 'g', d, 64)
		if a != b {
			return a, b
		}
	}
	return strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64)
}

// MaxLabel is the most characters of a channel name a figure prints; a
// longer one is cut with "…", after runs of spaces are made one.
const MaxLabel = 16

// shortLabels returns names as a figure prints them (nil for nil): each
// trimmed, its runs of white space made one space, and cut to MaxLabel
// characters with "…" (COMTRADE channel names pad with spaces: "SBUS A
// V-node").
func shortLabels(names []string) []string {
	if names == nil {
		return nil
	}
	out := make([]string, len(names))
	for i, n := range names {
		r := []rune(strings.Join(strings.Fields(n), " "))
		if len(r) > MaxLabel {
			r = append(r[:MaxLabel-1], '…')
		}
		out[i] = string(r)
	}
	return out
}
