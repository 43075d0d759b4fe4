package figure

import (
	"bytes"
	"image"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testBars is a chart of 4 classes and 3 methods, no SD, no paper values.
func testBars() Bars {
	return Bars{
		Title:   "test",
		Classes: []string{"normal", "sag", "swell", "sag with oscillatory transient"},
		Methods: []string{"a", "b", "c"},
		Values: [][]float64{
			{0.10, 0.55, 0.30, 0.95},
			{0.80, 0.20, 0.65, 0.05},
			{0.45, 0.90, 0.00, 0.60},
		},
	}
}

func renderBars(t *testing.T, b Bars) ([]byte, image.Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := PerClassBars(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), decode(t, buf.Bytes(), BarsWidth, BarsHeight)
}

// barsMapper lays b's chart out as PerClassBars does.
func barsMapper(t *testing.T, b Bars) (*barsFigure, pixelMapper) {
	t.Helper()
	f, err := newBarsFigure(b)
	if err != nil {
		t.Fatal(err)
	}
	chart, _ := f.layout(layoutCanvas(BarsWidth, BarsHeight))
	return f, newMapper(f.plot, chart, BarsHeight)
}

// barTop scans the pixel column of the centre of method m's bar of class
// c upward from y = 0 while the pixels have the bar's colour, and returns
// the first pixel row that has not (the outline at the top).
func barTop(img image.Image, f *barsFigure, m pixelMapper, meth, class int) int {
	x0, x1 := f.bars.span(meth, class)
	pt := m.at((x0+x1)/2, 0)
	fill := rgba8(f.bars.fills[meth])
	y := pt.Y - 2 // above the axis line and the outline
	for y > 0 && near(rgba8(img.At(pt.X, y)), fill, 1) {
		y--
	}
	return y
}

func TestPerClassBarsHeights(t *testing.T) {
	b := testBars()
	_, img := renderBars(t, b)
	f, m := barsMapper(t, b)
	type bar struct {
		v   float64
		top int
	}
	var bars []bar
	for meth, row := range b.Values {
		for c, v := range row {
			if v == 0 {
				continue // no fill to scan
			}
			top := barTop(img, f, m, meth, c)
			// The bar ends where y = v maps, within the outline.
			if want := m.at(0, v).Y; top < want-2 || top > want+1 {
				t.Errorf("method %d, class %d (%.2f): bar top at pixel row %d, want %d", meth, c, v, top, want)
			}
			bars = append(bars, bar{v, top})
		}
	}
	// Heights are ordered like the values (a higher bar's top is a smaller
	// pixel row).
	for _, a := range bars {
		for _, c := range bars {
			if a.v > c.v && !(a.top < c.top) {
				t.Errorf("value %.2f has its top at row %d, value %.2f at %d", a.v, a.top, c.v, c.top)
			}
		}
	}
	// Methods have distinct colours, sampled from cividis.
	for i := range f.bars.fills {
		for j := range i {
			if rgba8(f.bars.fills[i]) == rgba8(f.bars.fills[j]) {
				t.Errorf("methods %d and %d share a colour", i, j)
			}
		}
	}
	if f.plot.Y.Min != 0 || f.plot.Y.Max != 1 || f.plot.Y.Label.Text != "IoU" {
		t.Errorf("y axis [%g, %g] %q, want [0, 1] IoU", f.plot.Y.Min, f.plot.Y.Max, f.plot.Y.Label.Text)
	}
	b.YLabel = "RMA"
	if f, _ := barsMapper(t, b); f.plot.Y.Label.Text != "RMA" {
		t.Errorf("y label %q, want RMA", f.plot.Y.Label.Text)
	}
}

func TestMethodColours(t *testing.T) {
	// Evenly spaced in cividis between 0.15 and 0.85; one method in the
	// middle.
	for _, n := range []int{1, 2, 5} {
		cols := methodColours(n)
		for m, c := range cols {
			u := 0.5
			if n > 1 {
				u = 0.15 + 0.7*float64(m)/float64(n-1)
			}
			r, g, b := cividisRGB(u)
			want := [4]int{int(unit8(r)), int(unit8(g)), int(unit8(b)), 255}
			if got := rgba8(c); got != want {
				t.Errorf("%d methods: colour %d = %v, want cividis(%g) = %v", n, m, got, u, want)
			}
		}
	}
}

func TestPerClassBarsOverlays(t *testing.T) {
	b := testBars()
	b.SD = [][]float64{
		{0.05, 0.1, 0.1, 0.2},
		{0.1, 0.1, 0.1, 0.1},
		{0.1, 0.05, 0, 0.1},
	}
	nan := math.NaN()
	b.Paper = [][]float64{
		{0.7, nan, nan, nan},
		{nan, 0.9, nan, nan},
		{nan, nan, nan, nan},
	}
	_, img := renderBars(t, b)
	f, m := barsMapper(t, b)
	dark := func(x, y int) bool {
		for dx := -1; dx <= 1; dx++ {
			if c := rgba8(img.At(x+dx, y)); c[0]+c[1]+c[2] < 3*128 {
				return true
			}
		}
		return false
	}
	centre := func(meth, c int) float64 { x0, x1 := f.bars.span(meth, c); return (x0 + x1) / 2 }
	// The error bar of method 1, class 0 (0.8 ± 0.1): a dark line above the
	// bar to 0.9, nothing above that.
	x := centre(1, 0)
	if pt := m.at(x, 0.85); !dark(pt.X, pt.Y) {
		t.Errorf("no error bar at 0.85 above the bar of 0.8 ± 0.1 (pixel %v)", pt)
	}
	if pt := m.at(x, 0.95); dark(pt.X, pt.Y) {
		t.Errorf("something dark at 0.95, above the error bar's end 0.9 (pixel %v)", pt)
	}
	// Method 0, class 3 (0.95 ± 0.2) is clipped to 1: nothing above the
	// data area's top.
	if pt := m.at(centre(0, 3), 1); dark(pt.X, pt.Y-4) {
		t.Errorf("the error bar of 0.95 ± 0.2 goes above y = 1 (pixel %v)", pt)
	}
	// Paper rings: a hollow ring at the paper's value (dark at its radius,
	// white at its centre), none where the paper has NaN.
	r := int(ringRadius.Dots(DPI))
	for _, c := range []struct {
		meth, class int
		v           float64
	}{{0, 0, 0.7}, {1, 1, 0.9}} {
		pt := m.at(centre(c.meth, c.class), c.v)
		ring := false
		for dy := -1; dy <= 1; dy++ {
			ring = ring || dark(pt.X, pt.Y-r+dy)
		}
		if !ring {
			t.Errorf("no ring at radius %d px above the paper value %g of method %d, class %d", r, c.v, c.meth, c.class)
		}
		if got := rgba8(img.At(pt.X, pt.Y)); !near(got, [4]int{255, 255, 255, 255}, 0) {
			t.Errorf("ring centre at %v is %v, want white (hollow)", pt, got)
		}
	}
	if pt := m.at(centre(2, 0), 0.75); dark(pt.X, pt.Y-r) || dark(pt.X, pt.Y+r) {
		t.Errorf("something drawn at method 2, class 0, where the paper has no value (pixel %v)", pt)
	}
}

func TestPerClassBarsDeterministic(t *testing.T) {
	b := testBars()
	b.SD = [][]float64{{0, 0, 0, 0}, {0.1, 0.1, 0.1, 0.1}, {0, 0, 0, 0}}
	x, _ := renderBars(t, b)
	y, _ := renderBars(t, b)
	if !bytes.Equal(x, y) {
		t.Fatal("the same chart gave different PNG bytes")
	}
	path := filepath.Join(t.TempDir(), "bars.png")
	if err := PerClassBarsFile(path, b); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, x) {
		t.Errorf("PerClassBarsFile wrote other bytes than PerClassBars (%v)", err)
	}
}

func TestPerClassBarsErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	row := func(v ...float64) []float64 { return v }
	for _, tc := range []struct {
		name string
		edit func(b *Bars)
		want string
	}{
		{"no classes", func(b *Bars) { b.Classes = nil }, "no Classes"},
		{"no methods", func(b *Bars) { b.Methods = nil }, "no Methods"},
		{"missing method row", func(b *Bars) { b.Values = b.Values[:2] }, "Values has 2 rows, want 3"},
		{"short row", func(b *Bars) { b.Values[1] = row(0.1) }, "Values[1] (b) has 1 values, want 4"},
		{"NaN value", func(b *Bars) { b.Values[2][1] = nan }, "Values[2][1] (c, sag) is NaN"},
		{"Inf value", func(b *Bars) { b.Values[0][0] = inf }, "Values[0][0] (a, normal) is +Inf"},
		{"value above 1", func(b *Bars) { b.Values[0][3] = 1.01 }, "Values[0][3] (a, sag with oscillatory transient) is 1.01"},
		{"negative value", func(b *Bars) { b.Values[1][2] = -0.01 }, "Values[1][2] (b, swell) is -0.01"},
		{"SD rows", func(b *Bars) { b.SD = [][]float64{row(0, 0, 0, 0)} }, "SD has 1 rows, want 3"},
		{"SD short", func(b *Bars) { b.SD = [][]float64{row(0, 0, 0, 0), row(0), row(0, 0, 0, 0)} }, "SD[1] (b) has 1 values, want 4"},
		{"negative SD", func(b *Bars) { b.SD = [][]float64{row(0, 0, 0, 0), row(0, 0, -0.1, 0), row(0, 0, 0, 0)} }, "SD[1][2] (b, swell) is -0.1"},
		{"NaN SD", func(b *Bars) { b.SD = [][]float64{row(nan, 0, 0, 0), row(0, 0, 0, 0), row(0, 0, 0, 0)} }, "SD[0][0] (a, normal) is NaN"},
		{"Inf SD", func(b *Bars) { b.SD = [][]float64{row(0, 0, 0, 0), row(0, 0, 0, 0), row(0, 0, 0, inf)} }, "SD[2][3] (c, sag with oscillatory transient) is +Inf"},
		{"Paper rows", func(b *Bars) { b.Paper = [][]float64{} }, "Paper has 0 rows, want 3"},
		{"Inf paper", func(b *Bars) {
			b.Paper = [][]float64{row(nan, nan, nan, nan), row(nan, inf, nan, nan), row(nan, nan, nan, nan)}
		}, "Paper[1][1] (b, sag) is +Inf"},
		{"paper above 1", func(b *Bars) {
			b.Paper = [][]float64{row(nan, nan, nan, nan), row(nan, nan, nan, nan), row(2, nan, nan, nan)}
		}, "Paper[2][0] (c, normal) is 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBars()
			tc.edit(&b)
			var buf bytes.Buffer
			err := PerClassBars(&buf, b)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `bar chart "test"`) {
				t.Fatalf("error %v, want one naming the chart and %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written on error", buf.Len())
			}
			path := filepath.Join(t.TempDir(), "b.png")
			if err := PerClassBarsFile(path, b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PerClassBarsFile: error %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("PerClassBarsFile left %s on error", path)
			}
		})
	}
	// The edges that are fine: values 0 and 1, SD 0, paper all NaN, one
	// class, one method, no title.
	for _, edit := range []func(b *Bars){
		func(b *Bars) { b.Values[0][0], b.Values[0][1] = 0, 1 },
		func(b *Bars) { b.SD = [][]float64{row(0, 0, 0, 0), row(0, 0, 0, 0), row(0, 0, 0, 0)} },
		func(b *Bars) {
			b.Paper = [][]float64{row(nan, 0, 1, nan), row(nan, nan, nan, nan), row(nan, nan, nan, nan)}
		},
		func(b *Bars) { b.Classes, b.Methods, b.Values = []string{"x"}, []string{"m"}, [][]float64{row(0.5)} },
		func(b *Bars) { b.Title = "" },
	} {
		b := testBars()
		edit(&b)
		if err := PerClassBars(&bytes.Buffer{}, b); err != nil {
			t.Errorf("valid chart: %v", err)
		}
	}
	b := testBars()
	b.Title = ""
	b.Classes = nil
	if err := PerClassBars(&bytes.Buffer{}, b); err == nil || !strings.HasPrefix(err.Error(), "figure: bar chart: no Classes") {
		t.Errorf("untitled chart: error %v", err)
	}
}
