package figure

import (
	"bytes"
	"image"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// testIntervals is a forest plot of 5 replicates (means of both signs),
// the summary and the paper, with the zero line. Every Lo and Hi is at
// least 0.01 from 0 and from every mean, so bars, markers and the zero
// line do not touch where the tests look.
func testIntervals() Intervals {
	f := Intervals{Title: "test", XLabel: "IoU difference", Zero: true}
	for i, m := range []float64{0.03, -0.02, 0.05, 0.015, -0.035} {
		f.Rows = append(f.Rows, Interval{Label: "replicate " + strconv.Itoa(i), Mean: m, Lo: m - 0.025, Hi: m + 0.02, Group: IntervalReplicate})
	}
	f.Rows = append(f.Rows,
		Interval{Label: "across replicates", Mean: 0.008, Lo: -0.012, Hi: 0.03, Group: IntervalSummary},
		Interval{Label: "paper", Mean: 0.06, Lo: 0.04, Hi: 0.08, Group: IntervalPaper})
	return f
}

func renderIntervals(t *testing.T, f Intervals) ([]byte, image.Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := IntervalsPlot(&buf, f); err != nil {
		t.Fatal(err)
	}
	fig, _, _ := intervalsMapper(t, f)
	return buf.Bytes(), decode(t, buf.Bytes(), IntervalsWidth, fig.height)
}

// intervalsMapper lays f's plot out as IntervalsPlot does.
func intervalsMapper(t *testing.T, f Intervals) (*intervalsFigure, pixelMapper, draw.Canvas) {
	t.Helper()
	fig, err := newIntervalsFigure(f)
	if err != nil {
		t.Fatal(err)
	}
	c := fig.layout(layoutCanvas(IntervalsWidth, fig.height))
	return fig, newMapper(fig.plot, c, fig.height), fig.plot.DataCanvas(c)
}

// dataPixels is the pixel rectangle of a data area in an image height
// high.
func dataPixels(d draw.Canvas, height vg.Length) image.Rectangle {
	h := height.Dots(DPI)
	return image.Rect(int(d.Min.X.Dots(DPI)), int(h-d.Max.Y.Dots(DPI)), int(d.Max.X.Dots(DPI)), int(h-d.Min.Y.Dots(DPI)))
}

// zeroColumn returns the pixel column of the data area that holds the
// most pixels of the zero line's colour, and their number.
func zeroColumn(img image.Image, r image.Rectangle) (col, count int) {
	want := rgba8(zeroLine.Color)
	for x := r.Min.X; x < r.Max.X; x++ {
		n := 0
		for y := r.Min.Y; y < r.Max.Y; y++ {
			if near(rgba8(img.At(x, y)), want, 2) {
				n++
			}
		}
		if n > count {
			col, count = x, n
		}
	}
	return col, count
}

func TestIntervalsZeroLine(t *testing.T) {
	f := testIntervals()
	_, img := renderIntervals(t, f)
	fig, m, data := intervalsMapper(t, f)
	r := dataPixels(data, fig.height)
	// The column found in the pixels is where x = 0 maps.
	col, n := zeroColumn(img, r)
	if want := m.at(0, 0).X; col != want {
		t.Errorf("the dashed line is in pixel column %d, x = 0 maps to %d", col, want)
	}
	// Dashed: on 4 pt, off 3 pt, so about 4/7 of the column away from the
	// bars is the line's colour, the rest white.
	var on, off, total int
	white := [4]int{255, 255, 255, 255}
	rad := int(intervalRadius.Dots(DPI)) + 2
	for y := r.Min.Y; y < r.Max.Y; y++ {
		skip := false
		for i := range f.Rows {
			skip = skip || abs(y-m.at(0, rowY(i, len(f.Rows))).Y) <= rad
		}
		if skip {
			continue
		}
		total++
		switch c := rgba8(img.At(col, y)); {
		case near(c, rgba8(zeroLine.Color), 2):
			on++
		case near(c, white, 0):
			off++
		}
	}
	frac := float64(on) / float64(total)
	want := float64(zeroLine.Dashes[0] / (zeroLine.Dashes[0] + zeroLine.Dashes[1]))
	if math.Abs(frac-want) > 0.15 || off == 0 {
		t.Errorf("the zero line covers %d of %d pixels of its column away from the bars (%.2f, want about %.2f dashed), %d white", on, total, frac, want, off)
	}
	// Without Zero: no pixel of the line's colour in any column.
	f.Zero = false
	_, img = renderIntervals(t, f)
	if _, n0 := zeroColumn(img, r); n0 > n/10 {
		t.Errorf("Zero false: a column holds %d pixels of the zero line's colour (%d with Zero)", n0, n)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// markerRun returns the centre and width of the widest run of pixels of
// colour col in pixel row y of r.
func markerRun(img image.Image, r image.Rectangle, y int, col [4]int) (centre, width int) {
	start := -1
	for x := r.Min.X; x <= r.Max.X; x++ {
		in := x < r.Max.X && near(rgba8(img.At(x, y)), col, 2)
		switch {
		case in && start < 0:
			start = x
		case !in && start >= 0:
			if x-start > width {
				centre, width = (start+x-1)/2, x-start
			}
			start = -1
		}
	}
	return centre, width
}

func TestIntervalsMarkers(t *testing.T) {
	f := testIntervals()
	_, img := renderIntervals(t, f)
	fig, m, data := intervalsMapper(t, f)
	r := dataPixels(data, fig.height)
	zero, _ := zeroColumn(img, r)
	n := len(f.Rows)
	rad := intervalRadius.Dots(DPI)
	white := [4]int{255, 255, 255, 255}
	var left, right int
	for i, row := range f.Rows {
		pt := m.at(row.Mean, rowY(i, n))
		col := rgba8(fig.rows.colours[row.Group])
		// Half a radius above the bar (thinner than that) only the
		// marker is drawn: found in the pixels, it is centred on Mean,
		// on Mean's side of the zero line.
		y := pt.Y - int(rad/2)
		if row.Group == IntervalPaper {
			// The ring is hollow: white inside (the bar stops at it), its
			// colour at its radius.
			for _, p := range []image.Point{{pt.X, y}, pt} {
				if got := rgba8(img.At(p.X, p.Y)); got != white {
					t.Errorf("row %d (%s): pixel %v inside the ring %v, want white", i, row.Label, p, got)
				}
			}
			dark := false
			for dy := -1; dy <= 1; dy++ {
				c := rgba8(img.At(pt.X, pt.Y-int(rad)+dy))
				dark = dark || c[0]+c[1]+c[2] < 3*128
			}
			if !dark {
				t.Errorf("row %d (%s): no ring at radius %.1f px above %v", i, row.Label, rad, pt)
			}
			continue
		}
		centre, width := markerRun(img, r, y, col)
		if abs(centre-pt.X) > 1 || width < int(rad/2) {
			t.Errorf("row %d (%s): marker found at pixel column %d, %d px wide; Mean %g maps to %d", i, row.Label, centre, width, row.Mean, pt.X)
		}
		if (row.Mean < 0) != (centre < zero) {
			t.Errorf("row %d (%s): Mean %g, marker at column %d, zero line at %d: on the wrong side", i, row.Label, row.Mean, centre, zero)
		}
		if row.Mean < 0 {
			left++
		} else {
			right++
		}
		// The shapes: a point at 0.55 r diagonally from a circle's
		// centre is inside it; at 0.65 of a diamond's reach it is
		// outside the diamond.
		switch row.Group {
		case IntervalReplicate:
			d := int(0.55 * rad)
			if got := rgba8(img.At(pt.X+d, pt.Y-d)); !near(got, col, 2) {
				t.Errorf("row %d (%s): %v at (+%d, -%d) px from the centre, want the circle's %v", i, row.Label, got, d, d, col)
			}
		case IntervalSummary:
			d := int(0.65 * float64(diamondScale) * rad)
			if got := rgba8(img.At(pt.X+d, pt.Y-d)); got != white {
				t.Errorf("row %d (%s): %v at (+%d, -%d) px from the centre, want white outside the diamond", i, row.Label, got, d, d)
			}
			if got := rgba8(img.At(pt.X, pt.Y-int(0.6*float64(diamondScale)*rad))); !near(got, col, 2) {
				t.Errorf("row %d (%s): %v above the centre, want the diamond's %v", i, row.Label, got, col)
			}
		}
	}
	if left == 0 || right == 0 {
		t.Fatalf("test data has %d means left of 0, %d right: want both", left, right)
	}
}

func TestIntervalsBars(t *testing.T) {
	// A bar runs from Lo to Hi in its group's colour along the row's
	// centre, and no further.
	f := testIntervals()
	_, img := renderIntervals(t, f)
	fig, m, _ := intervalsMapper(t, f)
	n := len(f.Rows)
	for i, row := range f.Rows {
		col := rgba8(fig.rows.colours[row.Group])
		lo, hi := m.at(row.Lo, rowY(i, n)), m.at(row.Hi, rowY(i, n))
		for _, x := range []int{lo.X + 2, hi.X - 2} {
			if got := rgba8(img.At(x, lo.Y)); !near(got, col, 2) {
				t.Errorf("row %d (%s): pixel (%d, %d) inside the bar is %v, want %v", i, row.Label, x, lo.Y, got, col)
			}
		}
		for _, x := range []int{lo.X - 4, hi.X + 4} {
			if got := rgba8(img.At(x, lo.Y)); near(got, col, 40) {
				t.Errorf("row %d (%s): pixel (%d, %d) beyond the bar's end is %v, near its colour", i, row.Label, x, lo.Y, got)
			}
		}
	}
	// The groups' colours differ; replicates and summary are cividis as
	// methodColours samples it for two methods.
	mc := methodColours(2)
	c := fig.rows.colours
	if rgba8(c[0]) != rgba8(mc[0]) || rgba8(c[1]) != rgba8(mc[1]) {
		t.Errorf("group colours %v, %v, want methodColours(2) %v, %v", rgba8(c[0]), rgba8(c[1]), rgba8(mc[0]), rgba8(mc[1]))
	}
	for i := range c {
		for j := range i {
			if rgba8(c[i]) == rgba8(c[j]) {
				t.Errorf("groups %d and %d share a colour", i, j)
			}
		}
	}
}

func TestIntervalsSeparators(t *testing.T) {
	// A grey line halfway between consecutive rows of different groups,
	// none between rows of one group; looked for right of every bar and
	// marker, in the x margin.
	f := testIntervals()
	_, img := renderIntervals(t, f)
	fig, m, _ := intervalsMapper(t, f)
	n := len(f.Rows)
	x := m.at(fig.plot.X.Max-intervalsPad/2*(0.08-(-0.06)), 0).X
	if hi := m.at(0.08, 0).X + int(intervalRadius.Dots(DPI)); x <= hi {
		t.Fatalf("column %d is not right of the bars (to %d)", x, hi)
	}
	seps := 0
	for i := 1; i < n; i++ {
		y := m.at(0, rowY(i, n)+0.5).Y
		grey := false
		for dy := -1; dy <= 1; dy++ {
			c := rgba8(img.At(x, y+dy))
			grey = grey || c[0]+c[1]+c[2] < 3*220
		}
		if differ := f.Rows[i].Group != f.Rows[i-1].Group; grey != differ {
			t.Errorf("between rows %d and %d (groups %d, %d): separator %v at pixel (%d, %d)", i-1, i, f.Rows[i-1].Group, f.Rows[i].Group, grey, x, y)
		}
		if grey {
			seps++
		}
	}
	if seps != 2 {
		t.Errorf("%d separators, want 2 (replicates | summary | paper)", seps)
	}
}

func TestIntervalsHeightAndLabels(t *testing.T) {
	// The figure grows by intervalsRow a row, and so does its data area:
	// rows keep their height however many there are. The y tick labels
	// read the rows' labels top to bottom.
	rowPx := intervalsRow.Dots(DPI)
	var prevH, prevData float64
	for _, k := range []int{1, 2, 7, 20} {
		f := testIntervals()
		for len(f.Rows) < k {
			f.Rows = append(f.Rows, Interval{Label: "extra " + strconv.Itoa(len(f.Rows)), Mean: 0.01, Lo: 0, Hi: 0.02})
		}
		f.Rows = f.Rows[:k]
		_, img := renderIntervals(t, f) // decode checks the size
		fig, m, data := intervalsMapper(t, f)
		h, dh := float64(img.Bounds().Dy()), data.Max.Y.Dots(DPI)-data.Min.Y.Dots(DPI)
		if prevH > 0 {
			grow := float64(k - prevK(k))
			if math.Abs(h-prevH-grow*rowPx) > 1 || math.Abs(dh-prevData-grow*rowPx) > 0.01 {
				t.Errorf("%d rows: image %g px high, data area %.2f; with %d rows %g and %.2f: want %g px more a row", k, h, dh, prevK(k), prevH, prevData, rowPx)
			}
		}
		prevH, prevData = h, dh
		if want := float64(k) * rowPx; math.Abs(dh-want) > 0.01 || h != math.Round(h) {
			t.Errorf("%d rows: data area %.2f px high, want %g (%g px a row); image %g px", k, dh, want, rowPx, h)
		}
		if k > 1 {
			if d := float64(m.at(0, rowY(1, k)).Y - m.at(0, rowY(0, k)).Y); math.Abs(d-rowPx) > 1 {
				t.Errorf("%d rows: rows %g px apart, want %g", k, d, rowPx)
			}
		}
		ticks := fig.plot.Y.Tick.Marker.Ticks(fig.plot.Y.Min, fig.plot.Y.Max)
		sort.Slice(ticks, func(i, j int) bool { return ticks[i].Value > ticks[j].Value })
		for i, tk := range ticks {
			if i >= k || tk.Label != f.Rows[i].Label {
				t.Errorf("%d rows: tick %d from the top %q, want %q", k, i, tk.Label, f.Rows[min(i, k-1)].Label)
			}
		}
		if len(ticks) != k {
			t.Errorf("%d rows: %d y ticks", k, len(ticks))
		}
	}
}

// prevK is the row count tested before k in TestIntervalsHeightAndLabels.
func prevK(k int) int {
	return map[int]int{2: 1, 7: 2, 20: 7}[k]
}

func TestIntervalsXRange(t *testing.T) {
	check := func(name string, f Intervals) {
		t.Helper()
		fig, _, _ := intervalsMapper(t, f)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range f.Rows {
			lo, hi = math.Min(lo, r.Lo), math.Max(hi, r.Hi)
		}
		if f.Zero {
			lo, hi = math.Min(lo, 0), math.Max(hi, 0)
		}
		min, max := fig.plot.X.Min, fig.plot.X.Max
		if !(min < lo && max > hi) {
			t.Errorf("%s: x range [%g, %g] does not hold [%g, %g] inside", name, min, max, lo, hi)
		}
		if hi > lo {
			pad := intervalsPad * (hi - lo)
			if math.Abs(lo-min-pad) > 1e-12*pad || math.Abs(max-hi-pad) > 1e-12*pad {
				t.Errorf("%s: x range [%g, %g], want [%g, %g] less and plus %g", name, min, max, lo, hi, pad)
			}
		}
	}
	f := testIntervals()
	check("mixed signs", f)
	// All positive: 0 is in range with Zero, not without.
	for i := range f.Rows {
		f.Rows[i].Mean += 1
		f.Rows[i].Lo += 1
		f.Rows[i].Hi += 1
	}
	check("positive, Zero", f)
	f.Zero = false
	check("positive", f)
	if fig, _, _ := intervalsMapper(t, f); fig.plot.X.Min <= 0 {
		t.Errorf("positive intervals without Zero: x from %g, want > 0", fig.plot.X.Min)
	}
	// One point v: widened by w = max(|v|, 1) / 2 each side, then padded
	// by intervalsPad of the 2 w.
	for _, v := range []float64{2, -4, 0, 0.25} {
		f := Intervals{Zero: v == 0, Rows: []Interval{{Label: "a", Mean: v, Lo: v, Hi: v}}}
		fig, _, _ := intervalsMapper(t, f)
		w := math.Max(math.Abs(v), 1) / 2
		d := w + intervalsPad*2*w
		if min, max := fig.plot.X.Min, fig.plot.X.Max; math.Abs(min-(v-d)) > 1e-12 || math.Abs(max-(v+d)) > 1e-12 {
			t.Errorf("one point %g: x range [%g, %g], want [%g, %g]", v, min, max, v-d, v+d)
		}
	}
	// The whole float64 range does not fit.
	big := Intervals{Title: "test", Rows: []Interval{{Label: "a", Lo: -math.MaxFloat64 / 2, Hi: math.MaxFloat64 / 2}}}
	if err := IntervalsPlot(&bytes.Buffer{}, big); err == nil || !strings.Contains(err.Error(), "too wide a range") {
		t.Errorf("range ±MaxFloat64/2: error %v, want too wide", err)
	}
	big.Rows[0].Lo, big.Rows[0].Hi = -math.MaxFloat64/4, math.MaxFloat64/4
	if err := IntervalsPlot(&bytes.Buffer{}, big); err != nil {
		t.Errorf("range ±MaxFloat64/4: %v", err)
	}
}

func TestIntervalsDeterministic(t *testing.T) {
	f := testIntervals()
	x, _ := renderIntervals(t, f)
	y, _ := renderIntervals(t, f)
	if !bytes.Equal(x, y) {
		t.Fatal("the same plot gave different PNG bytes")
	}
	path := filepath.Join(t.TempDir(), "intervals.png")
	if err := IntervalsPlotFile(path, f); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, x) {
		t.Errorf("IntervalsPlotFile wrote other bytes than IntervalsPlot (%v)", err)
	}
}

func TestIntervalsErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name string
		edit func(f *Intervals)
		want string
	}{
		{"no rows", func(f *Intervals) { f.Rows = nil }, "no Rows"},
		{"empty label", func(f *Intervals) { f.Rows[2].Label = "" }, "Rows[2] has an empty Label"},
		{"negative group", func(f *Intervals) { f.Rows[1].Group = -1 }, "Rows[1] (replicate 1) has Group -1: want 0 (per replicate), 1 (summary) or 2 (paper)"},
		{"group 3", func(f *Intervals) { f.Rows[6].Group = 3 }, "Rows[6] (paper) has Group 3"},
		{"NaN mean", func(f *Intervals) { f.Rows[0].Mean = nan }, "Rows[0] (replicate 0) has Mean NaN"},
		{"Inf lo", func(f *Intervals) { f.Rows[3].Lo = -inf }, "Rows[3] (replicate 3) has Lo -Inf"},
		{"Inf hi", func(f *Intervals) { f.Rows[5].Hi = inf }, "Rows[5] (across replicates) has Hi +Inf"},
		{"lo above mean", func(f *Intervals) { f.Rows[4].Lo = 0 }, "Rows[4] (replicate 4) has Lo 0, Mean -0.035, Hi -0.015"},
		{"mean above hi", func(f *Intervals) { f.Rows[6].Hi = 0.05 }, "Rows[6] (paper) has Lo 0.04, Mean 0.06, Hi 0.05"},
		{"too wide", func(f *Intervals) { f.Rows[0].Lo, f.Rows[1].Hi = -math.MaxFloat64, math.MaxFloat64 }, "the intervals span"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := testIntervals()
			tc.edit(&f)
			var buf bytes.Buffer
			err := IntervalsPlot(&buf, f)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `interval plot "test"`) {
				t.Fatalf("error %v, want one naming the plot and %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written on error", buf.Len())
			}
			path := filepath.Join(t.TempDir(), "i.png")
			if err := IntervalsPlotFile(path, f); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("IntervalsPlotFile: error %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("IntervalsPlotFile left %s on error", path)
			}
		})
	}
	// The edges that are fine: an interval of one point, a mean at an
	// end, one row, no title or x label, every group alone.
	for _, edit := range []func(f *Intervals){
		func(f *Intervals) { f.Rows[0].Lo, f.Rows[0].Hi = f.Rows[0].Mean, f.Rows[0].Mean },
		func(f *Intervals) { f.Rows[1].Lo = f.Rows[1].Mean },
		func(f *Intervals) { f.Rows = f.Rows[6:] },
		func(f *Intervals) { f.Title, f.XLabel = "", "" },
		func(f *Intervals) {
			for i := range f.Rows {
				f.Rows[i].Group = IntervalSummary
			}
		},
	} {
		f := testIntervals()
		edit(&f)
		if err := IntervalsPlot(&bytes.Buffer{}, f); err != nil {
			t.Errorf("valid plot: %v", err)
		}
	}
	f := testIntervals()
	f.Title = ""
	f.Rows = nil
	if err := IntervalsPlot(&bytes.Buffer{}, f); err == nil || !strings.HasPrefix(err.Error(), "figure: interval plot: no Rows") {
		t.Errorf("untitled plot: error %v", err)
	}
}

func TestIntervalsLayout(t *testing.T) {
	// The plot's canvas is the figure less its margin, and at the bottom
	// the slack (under a pixel) that makes the height whole pixels.
	f := testIntervals()
	fig, _, _ := intervalsMapper(t, f)
	dc := layoutCanvas(IntervalsWidth, fig.height)
	c := fig.layout(dc)
	px := vg.Inch / DPI
	if !(fig.slack >= 0 && fig.slack < px) {
		t.Errorf("slack %v, want [0, 1 px)", fig.slack)
	}
	want := dc.Rectangle
	want.Min.X += intervalsMargin
	want.Max.X -= intervalsMargin
	want.Min.Y += intervalsMargin + fig.slack
	want.Max.Y -= intervalsMargin
	if c.Rectangle != want {
		t.Errorf("plot canvas %v, want the figure %v less the margin %v (and %v at the bottom)", c.Rectangle, dc.Rectangle, intervalsMargin, fig.slack)
	}
}
