package figure

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func TestBarsLayout(t *testing.T) {
	// Inside the figure's margin: the chart on the left, the legend on
	// the right of the chart's data area, beside it.
	f, err := newBarsFigure(testBars())
	if err != nil {
		t.Fatal(err)
	}
	dc := layoutCanvas(BarsWidth, BarsHeight)
	chart, legends := f.layout(dc)
	if len(legends) != 1 {
		t.Fatalf("%d legend columns for 3 entries, want 1", len(legends))
	}
	legend := legends[0]
	data := f.plot.DataCanvas(chart)
	for _, c := range []draw.Canvas{chart, legend} {
		if c.Min.X < dc.Min.X+barsMargin || c.Max.X > dc.Max.X-barsMargin ||
			c.Min.Y < dc.Min.Y+barsMargin || c.Max.Y > dc.Max.Y-barsMargin {
			t.Errorf("canvas %v outside the figure %v less its margin %v", c.Rectangle, dc.Rectangle, barsMargin)
		}
	}
	if legend.Min.X <= data.Max.X || legend.Min.X <= chart.Max.X {
		t.Errorf("legend from x %v overlaps the chart (to %v, data to %v)", legend.Min.X, chart.Max.X, data.Max.X)
	}
	if legend.Max.Y != data.Max.Y || legend.Min.Y != data.Min.Y {
		t.Errorf("legend y [%v, %v], want the data area's [%v, %v]", legend.Min.Y, legend.Max.Y, data.Min.Y, data.Max.Y)
	}
	// The classes' groups are centred on 0..C-1 with half a unit beside
	// the outer ones.
	if f.plot.X.Min != -0.5 || f.plot.X.Max != float64(len(testBars().Classes))-0.5 {
		t.Errorf("x range [%g, %g], want [-0.5, C-0.5]", f.plot.X.Min, f.plot.X.Max)
	}
	// y ticks every 0.1, labelled every 0.2.
	var labels []string
	for _, tk := range f.plot.Y.Tick.Marker.Ticks(0, 1) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0.0 0.2 0.4 0.6 0.8 1.0" {
		t.Errorf("y tick labels %q", got)
	}
	if n := len(f.plot.Y.Tick.Marker.Ticks(0, 1)); n != 11 {
		t.Errorf("%d y ticks, want 11", n)
	}
}

func TestBarsGeometry(t *testing.T) {
	// Method m's bar of class c spans [c - 0.4 + m w, c - 0.4 + (m+1) w],
	// w = 0.8 / M: read from the pixels, not from span.
	b := testBars()
	_, img := renderBars(t, b)
	f, m := barsMapper(t, b)
	w := 0.8 / 3
	white := [4]int{255, 255, 255, 255}
	for c := range b.Classes {
		for meth := range b.Methods {
			if b.Values[meth][c] < 0.1 {
				continue
			}
			x := float64(c) - 0.4 + (float64(meth)+0.5)*w
			pt := m.at(x, 0.05)
			if got := rgba8(img.At(pt.X, pt.Y)); !near(got, rgba8(f.bars.fills[meth]), 1) {
				t.Errorf("class %d, method %d: pixel at x %.3f is %v, want the method's colour", c, meth, x, got)
			}
		}
		// The gaps between groups are empty.
		for _, x := range []float64{float64(c) - 0.45, float64(c) + 0.45} {
			pt := m.at(x, 0.05)
			if got := rgba8(img.At(pt.X, pt.Y)); !near(got, white, 0) {
				t.Errorf("gap at x %.2f: pixel %v, want white", x, got)
			}
		}
	}
}

func TestBarsErrorBarCaps(t *testing.T) {
	// Method 1, class 2: 0.65 ± 0.1, centred at x = 2. The bar is a line
	// at the centre from 0.55 to 0.75 with caps a quarter of the bar's
	// width each side at both ends.
	b := testBars()
	b.SD = [][]float64{{0, 0, 0, 0}, {0, 0, 0.1, 0}, {0, 0, 0, 0}}
	_, img := renderBars(t, b)
	_, m := barsMapper(t, b)
	// Over the bar (y below 0.65) the line must be darker than the bar's
	// grey fill (about 125 a channel); over white, half grey will do.
	dark := func(pt image.Point) bool {
		limit := 3 * 128
		if pt.Y > m.at(0, 0.65).Y {
			limit = 260
		}
		for dy := -1; dy <= 1; dy++ {
			if c := rgba8(img.At(pt.X, pt.Y+dy)); c[0]+c[1]+c[2] < limit {
				return true
			}
		}
		return false
	}
	w := 0.8 / 3
	for _, y := range []float64{0.55, 0.75} {
		for _, dx := range []float64{-0.2 * w, 0.2 * w} {
			if pt := m.at(2+dx, y); !dark(pt) {
				t.Errorf("no cap at x %.3f, y %g (pixel %v)", 2+dx, y, pt)
			}
		}
		for _, dx := range []float64{-0.35 * w, 0.35 * w} {
			if pt := m.at(2+dx, 0.75+0.01); dark(pt) {
				t.Errorf("cap reaches x %.3f, beyond a quarter of the bar's width (pixel %v)", 2+dx, pt)
			}
		}
	}
	if pt := m.at(2, 0.72); !dark(image.Point{pt.X, pt.Y}) && !dark(image.Point{pt.X - 1, pt.Y}) && !dark(image.Point{pt.X + 1, pt.Y}) {
		t.Errorf("no error bar line at x 2, y 0.72")
	}
}

func TestBarsPaperLegend(t *testing.T) {
	// Paper values that are all NaN draw nothing in the chart but add the
	// legend's "paper" entry: the chart's pixels are those of no Paper,
	// the legend's are not. (Method labels wider than "paper", so that
	// the legend column, as wide as its widest entry, keeps its width.)
	b := testBars()
	b.Methods = []string{"method a", "method b", "method c"}
	_, plain := renderBars(t, b)
	nan := math.NaN()
	b.Paper = [][]float64{{nan, nan, nan, nan}, {nan, nan, nan, nan}, {nan, nan, nan, nan}}
	_, withPaper := renderBars(t, b)
	f, _ := barsMapper(t, b)
	chart, legends := f.layout(layoutCanvas(BarsWidth, BarsHeight))
	legend := legends[0]
	h := BarsHeight.Dots(DPI)
	region := func(c draw.Canvas) image.Rectangle {
		return image.Rect(int(c.Min.X.Dots(DPI)), int(h-c.Max.Y.Dots(DPI)), int(c.Max.X.Dots(DPI)), int(h-c.Min.Y.Dots(DPI)))
	}
	diff := func(r image.Rectangle) int {
		n := 0
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				if rgba8(plain.At(x, y)) != rgba8(withPaper.At(x, y)) {
					n++
				}
			}
		}
		return n
	}
	if n := diff(region(chart)); n != 0 {
		t.Errorf("%d chart pixels differ with all-NaN paper values, want none", n)
	}
	if n := diff(region(legend)); n == 0 {
		t.Error("the legend is the same with paper values as without: no \"paper\" entry")
	}
	// The entry is there with paper values: more ink in the legend.
	ink := func(img image.Image, r image.Rectangle) int {
		n := 0
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				if rgba8(img.At(x, y)) != [4]int{255, 255, 255, 255} {
					n++
				}
			}
		}
		return n
	}
	if a, b := ink(plain, region(legend)), ink(withPaper, region(legend)); !(b > a) {
		t.Errorf("legend ink %d with paper values, %d without: want more with", b, a)
	}
}

// thumbImage draws th into the box [20, 60] x [20, 40] pt of a 100 pt
// square canvas and returns the image and the box's centre in pixels.
func thumbImage(th plot.Thumbnailer) (image.Image, image.Point) {
	img := vgimg.NewWith(vgimg.UseWH(100, 100), vgimg.UseDPI(DPI))
	c := draw.New(img)
	box := draw.Crop(c, 20, -40, 20, -60)
	th.Thumbnail(&box)
	px := func(l vg.Length) int { return int(l.Dots(DPI)) }
	return img.Image(), image.Point{X: px(40), Y: px(100) - px(30)}
}

func TestThumbnails(t *testing.T) {
	// The ring: hollow, centred in its box, of radius ringRadius.
	img, ctr := thumbImage(ringThumb{})
	if got := rgba8(img.At(ctr.X, ctr.Y)); got != [4]int{255, 255, 255, 255} {
		t.Errorf("ring centre %v, want white", got)
	}
	r := int(ringRadius.Dots(DPI))
	for _, d := range []image.Point{{0, r}, {0, -r}, {r, 0}, {-r, 0}} {
		found := false
		for e := -1; e <= 1; e++ {
			p := ctr.Add(d).Add(image.Point{X: e * sign(d.X), Y: e * sign(d.Y)})
			c := rgba8(img.At(p.X, p.Y))
			found = found || c[0]+c[1]+c[2] < 3*128
		}
		if !found {
			t.Errorf("no ring at offset %v from the box's centre", d)
		}
	}
	// The rectangle: filled over its box, outlined when asked.
	red := color.NRGBA{R: 255, A: 255}
	img, ctr = thumbImage(rectThumb{Fill: red, Line: outline})
	if got := rgba8(img.At(ctr.X, ctr.Y)); got != rgba8(red) {
		t.Errorf("rectangle centre %v, want the fill", got)
	}
	left := int(vg.Length(20).Dots(DPI))
	edge := func(img image.Image) [4]int { return rgba8(img.At(left, ctr.Y)) }
	if c := edge(img); c[0] > 128 {
		t.Errorf("outlined rectangle's left edge %v, want dark", c)
	}
	img, _ = thumbImage(rectThumb{Fill: red})
	if c := edge(img); c[0] < 200 {
		t.Errorf("rectangle without outline: left edge %v, want the fill", c)
	}
}

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func TestAlignX(t *testing.T) {
	// A plot with a y label and a long last tick label has wider padding
	// on both sides than a bare one; after alignX their data areas share
	// both edges, and the wider one's canvas is unchanged.
	wide := newPlot()
	wide.Y.Label.Text = "a long y label"
	wide.X.Min, wide.X.Max = 0, 1
	wide.X.Tick.Marker = plot.ConstantTicks{{Value: 1, Label: "a long label at the right end"}}
	bare := newPlot()
	bare.X.Min, bare.X.Max = 0, 1
	bare.X.Tick.Marker = plot.ConstantTicks{{Value: 0.5, Label: "x"}}
	bare.Y.Tick.Marker = plot.ConstantTicks(nil)
	c := layoutCanvas(8*vg.Inch, 4*vg.Inch)
	cs := []draw.Canvas{c, c}
	ps := []*plot.Plot{bare, wide}
	dw, db := wide.DataCanvas(c), bare.DataCanvas(c)
	if !(dw.Min.X > db.Min.X+1 && dw.Max.X < db.Max.X-1) {
		t.Fatalf("test plots do not differ in padding on both sides: wide [%v, %v], bare [%v, %v]", dw.Min.X, dw.Max.X, db.Min.X, db.Max.X)
	}
	alignX(ps, cs)
	a, b := ps[0].DataCanvas(cs[0]), ps[1].DataCanvas(cs[1])
	if math.Abs(float64(a.Min.X-b.Min.X)) > 0.01 || math.Abs(float64(a.Max.X-b.Max.X)) > 0.01 {
		t.Errorf("after alignX: data x [%v, %v] and [%v, %v]", a.Min.X, a.Max.X, b.Min.X, b.Max.X)
	}
	if cs[1] != c {
		t.Errorf("the wider plot's canvas moved: %v, was %v", cs[1].Rectangle, c.Rectangle)
	}
}

func TestWriteFileRelativeDir(t *testing.T) {
	// A bare file name is written through a temporary file in the working
	// directory, not in TMPDIR (here missing).
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	t.Chdir(t.TempDir())
	if err := PerClassBarsFile("bars.png", testBars()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("bars.png")
	if err != nil {
		t.Fatal(err)
	}
	decode(t, b, BarsWidth, BarsHeight)
	if ents, _ := os.ReadDir("."); len(ents) != 1 {
		t.Errorf("%d files in the directory, want bars.png alone", len(ents))
	}
}

// inkOutside draws fn, a figure of w x h, into a canvas 1 in larger on
// every side and counts the pixels outside the figure's own rectangle
// that are not white: what the PNG of w x h would have cut off.
func inkOutside(w, h vg.Length, fn func(dc draw.Canvas)) int {
	img := vgimg.NewWith(vgimg.UseWH(w+2*vg.Inch, h+2*vg.Inch), vgimg.UseDPI(DPI))
	dc := draw.New(img)
	dc.Rectangle = vg.Rectangle{Min: vg.Point{X: vg.Inch, Y: vg.Inch}, Max: vg.Point{X: vg.Inch + w, Y: vg.Inch + h}}
	px := func(l vg.Length) int { return int(math.Round(l.Dots(DPI))) }
	fn(dc)
	im := img.Image()
	b := im.Bounds()
	inside := image.Rect(px(vg.Inch), px(vg.Inch), px(vg.Inch+w), px(vg.Inch+h)) // y from the top: symmetric margins
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if !(image.Point{x, y}).In(inside) && rgba8(im.At(x, y)) != [4]int{255, 255, 255, 255} {
				n++
			}
		}
	}
	return n
}

func TestBarsLegendInside(t *testing.T) {
	// Long method labels and many methods: nothing is drawn outside the
	// figure (drawn into a larger canvas, no ink beyond its edges), the
	// legend's columns lie right of the chart's data area and inside the
	// margin, and each column holds no more entries than fit its height.
	long := "mc-dropout (p = 0.1, 50 draws) / integrated gradients (64 steps, zero baseline) / mean over draws"
	for _, tc := range []struct {
		name    string
		methods []string
	}{
		{"three short", []string{"a", "b", "c"}},
		{"one long", []string{"ensemble / occlusion", long, "laplace / saliency"}},
		{"thirty", func() []string {
			var m []string
			for i := range 30 {
				m = append(m, fmt.Sprintf("posterior %02d / explainer with a long name", i))
			}
			return m
		}()},
	} {
		b := testBars()
		b.Methods = tc.methods
		b.Values = make([][]float64, len(tc.methods))
		for m := range b.Values {
			b.Values[m] = []float64{0.1, 0.5, 0.9, 0.3}
		}
		b.Paper = make([][]float64, len(tc.methods))
		for m := range b.Paper {
			b.Paper[m] = []float64{0.2, 0.4, 0.6, 0.8}
		}
		f, err := newBarsFigure(b)
		if err != nil {
			t.Fatal(err)
		}
		if n := inkOutside(BarsWidth, BarsHeight, f.draw); n != 0 {
			t.Errorf("%s: %d pixels drawn outside the figure", tc.name, n)
		}
		dc := layoutCanvas(BarsWidth, BarsHeight)
		chart, legends := f.layout(dc)
		data := f.plot.DataCanvas(chart)
		rows := f.legendRows(data.Max.Y - data.Min.Y)
		if want := (len(f.names) + rows - 1) / rows; len(legends) != want {
			t.Errorf("%s: %d legend columns, want ceil(%d entries / %d a column) = %d", tc.name, len(legends), len(f.names), rows, want)
		}
		if h := legendHeight(f.legend, rows); h > data.Max.Y-data.Min.Y {
			t.Errorf("%s: a column of %d entries is %v high, the data area %v", tc.name, rows, h, data.Max.Y-data.Min.Y)
		}
		prev := data.Max.X
		for i, c := range legends {
			if c.Min.X <= prev || c.Max.X > dc.Max.X-barsMargin+1e-9 {
				t.Errorf("%s: legend column %d x [%v, %v], want right of %v and inside %v", tc.name, i, c.Min.X, c.Max.X, prev, dc.Max.X-barsMargin)
			}
			prev = c.Max.X
		}
		for i, n := range f.names {
			if w := f.legend.ThumbnailWidth + f.legend.TextStyle.Width(" "+n); w > barsMaxLegend+1e-9 {
				t.Errorf("%s: entry %d %q is %v wide, above %v", tc.name, i, n, w, barsMaxLegend)
			}
			if tc.methods != nil && i < len(tc.methods) && f.legend.TextStyle.Width(tc.methods[i]) < barsMaxLegend/2 && n != tc.methods[i] {
				t.Errorf("%s: short label %q shown as %q", tc.name, tc.methods[i], n)
			}
		}
	}
}

func TestFitText(t *testing.T) {
	// A label that fits is kept; one that does not keeps its start and
	// its end around "…" and fits.
	sty := newLegend().TextStyle
	if got := fitText(sty, "short", vg.Inch); got != "short" {
		t.Errorf("fitText(short) = %q", got)
	}
	s := "abcdefghijklmnopqrstuvwxyz0123456789"
	got := fitText(sty, s, sty.Width(s)/2)
	head, tail, ok := strings.Cut(got, "…")
	if !ok || !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) || head == "" || tail == "" {
		t.Errorf("fitText cut %q to %q: want a head and a tail of it around …", s, got)
	}
	if sty.Width(got) > sty.Width(s)/2 {
		t.Errorf("fitText result %q is %v wide, above %v", got, sty.Width(got), sty.Width(s)/2)
	}
}
