package figure

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
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

// decode decodes a PNG and checks its size in pixels: the figure's size in
// inches times DPI.
func decode(t *testing.T, b []byte, w, h vg.Length) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("PNG does not decode: %v", err)
	}
	wantW, wantH := int(math.Round(w.Dots(DPI))), int(math.Round(h.Dots(DPI)))
	if got := img.Bounds(); got.Dx() != wantW || got.Dy() != wantH {
		t.Fatalf("PNG is %dx%d pixels, want %dx%d", got.Dx(), got.Dy(), wantW, wantH)
	}
	return img
}

// pixelMapper maps a plot's data coordinates to image pixels: the plot is
// laid out on a canvas of the figure's size, as the figure's draw does.
type pixelMapper struct {
	trX, trY func(float64) vg.Length
	height   float64 // the image's height in pixels
}

func newMapper(p *plot.Plot, c draw.Canvas, height vg.Length) pixelMapper {
	data := p.DataCanvas(c)
	trX, trY := p.Transforms(&data)
	return pixelMapper{trX: trX, trY: trY, height: height.Dots(DPI)}
}

// at is the pixel that holds data point (x, y).
func (m pixelMapper) at(x, y float64) image.Point {
	return image.Point{
		X: int(m.trX(x).Dots(DPI)),
		Y: int(m.height - m.trY(y).Dots(DPI)),
	}
}

// layoutCanvas is a canvas of the given size at DPI, for layouts.
func layoutCanvas(w, h vg.Length) draw.Canvas {
	return draw.New(vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(DPI)))
}

// rgba8 is c in 8-bit non-premultiplied components.
func rgba8(c color.Color) [4]int {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	return [4]int{int(n.R), int(n.G), int(n.B), int(n.A)}
}

// near reports whether a and b differ by at most tol in every channel.
func near(a, b [4]int, tol int) bool {
	for i := range a {
		if d := a[i] - b[i]; d > tol || d < -tol {
			return false
		}
	}
	return true
}

// testPanel is a panel of n samples at fs, every series present: a flat
// wave, a mask true on [n/2, n), and maps that tests set themselves.
func testPanel(n int, fs float64) Panel {
	p := Panel{Title: "test", Labels: Labels{Class: "sag", Predicted: "swell", Prob: 0.75}, Fs: fs}
	p.Wave = make([]float64, n)
	p.Mask = make([]bool, n)
	for i := n / 2; i < n; i++ {
		p.Mask[i] = true
	}
	ramp := func(off float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = off + float64(i)
		}
		return x
	}
	p.Members = [][]float64{ramp(0), ramp(1), ramp(2)}
	p.Mean, p.Q05, p.Q95, p.Variance, p.CV = ramp(0), ramp(0), ramp(1), ramp(0), ramp(0)
	return p
}

// renderQual renders p and returns its PNG bytes and image.
func renderQual(t *testing.T, p Panel) ([]byte, image.Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := Qualitative(&buf, p); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), decode(t, buf.Bytes(), QualitativeWidth, QualitativeHeight)
}

// qualRows lays p's figure out as Qualitative does and returns its plots
// and their canvases.
func qualRows(t *testing.T, p Panel) (*qualFigure, []draw.Canvas, []draw.Canvas) {
	t.Helper()
	f, err := newQualFigure(p)
	if err != nil {
		t.Fatal(err)
	}
	mains, bars := f.layout(layoutCanvas(QualitativeWidth, QualitativeHeight))
	return f, mains, bars
}

func TestQualitativeSizeAndRows(t *testing.T) {
	p := testPanel(200, 3200)
	renderQual(t, p)
	f, mains, bars := qualRows(t, p)
	// Waveform, members, mean, quantiles, variance, CV.
	if len(f.rows) != 6 {
		t.Fatalf("%d rows, want 6", len(f.rows))
	}
	// The rows share the time axis: their data areas have the same left
	// and right edges, and every colour bar's data area spans its strip's
	// height.
	d0 := f.rows[0].main.DataCanvas(mains[0])
	for i, r := range f.rows {
		d := r.main.DataCanvas(mains[i])
		if math.Abs(float64(d.Min.X-d0.Min.X)) > 0.01 || math.Abs(float64(d.Max.X-d0.Max.X)) > 0.01 {
			t.Errorf("row %d: data x [%v, %v], row 0 [%v, %v]", i, d.Min.X, d.Max.X, d0.Min.X, d0.Max.X)
		}
		if r.main.X.Min != d0X(f).Min || r.main.X.Max != d0X(f).Max {
			t.Errorf("row %d: x range [%g, %g], want [%g, %g]", i, r.main.X.Min, r.main.X.Max, d0X(f).Min, d0X(f).Max)
		}
		if i > 0 && d.Min.Y > f.rows[i-1].main.DataCanvas(mains[i-1]).Min.Y {
			t.Errorf("row %d is not below row %d", i, i-1)
		}
		if r.bar == nil {
			continue
		}
		b := r.bar.DataCanvas(bars[i])
		if math.Abs(float64(b.Min.Y-d.Min.Y)) > 0.01 || math.Abs(float64(b.Max.Y-d.Max.Y)) > 0.01 {
			t.Errorf("row %d: colour bar y [%v, %v], strip [%v, %v]", i, b.Min.Y, b.Max.Y, d.Min.Y, d.Max.Y)
		}
		if w := b.Max.X - b.Min.X; math.Abs(float64(w-qualBarWidth)) > 0.01 {
			t.Errorf("row %d: colour bar %v wide, want %v", i, w, qualBarWidth)
		}
		if b.Min.X < d.Max.X {
			t.Errorf("row %d: colour bar at %v overlaps the strip ending at %v", i, b.Min.X, d.Max.X)
		}
	}
	// Sample i spans [i dt - dt/2, i dt + dt/2], dt in ms.
	if got := d0X(f); math.Abs(got.Min-(-1000.0/3200/2)) > 1e-12 || math.Abs(got.Max-199.5*1000/3200) > 1e-9 {
		t.Errorf("x range [%g, %g] ms, want [-dt/2, 199.5 dt]", got.Min, got.Max)
	}
	if f.rows[5].main.X.Label.Text != "time (ms)" || f.rows[0].main.X.Label.Text != "" {
		t.Errorf("x labels %q (bottom) and %q (top): want only the bottom row labelled", f.rows[5].main.X.Label.Text, f.rows[0].main.X.Label.Text)
	}
	if want := "test\nclass: sag · predicted: swell (p = 0.75)"; f.rows[0].main.Title.Text != want {
		t.Errorf("title %q, want %q", f.rows[0].main.Title.Text, want)
	}

	// Optional series leave their rows out; Fs = 0 is a time axis in
	// samples.
	p.Members, p.Q05, p.Q95, p.CV, p.Mask, p.Fs = nil, nil, nil, nil, nil, 0
	p.Labels = Labels{}
	f, _, _ = qualRows(t, p)
	if len(f.rows) != 3 {
		t.Fatalf("%d rows without members, quantiles and CV, want 3", len(f.rows))
	}
	if got := d0X(f); got.Min != -0.5 || got.Max != 199.5 || f.rows[2].main.X.Label.Text != "sample" {
		t.Errorf("Fs 0: x range [%g, %g] labelled %q, want [-0.5, 199.5] in samples", got.Min, got.Max, f.rows[2].main.X.Label.Text)
	}
	if f.rows[0].main.Title.Text != "test" {
		t.Errorf("title without labels %q, want %q", f.rows[0].main.Title.Text, "test")
	}
	renderQual(t, p)
}

// d0X is the x range of the figure's first row.
func d0X(f *qualFigure) struct{ Min, Max float64 } {
	return struct{ Min, Max float64 }{f.rows[0].main.X.Min, f.rows[0].main.X.Max}
}

func TestQualitativeMaskShading(t *testing.T) {
	// A flat wave with its mask true on the right half: above the line,
	// the right half of the waveform's data area is grey, the left half
	// white; without the mask both are white.
	n := 200
	p := testPanel(n, 0)
	_, img := renderQual(t, p)
	f, mains, _ := qualRows(t, p)
	m := newMapper(f.rows[0].main, mains[0], QualitativeHeight)
	white := [4]int{255, 255, 255, 255}
	grey := rgba8(maskGrey)
	for _, y := range []float64{0.5, -0.5} { // away from the line at 0
		for _, i := range []int{5, 50, 95} {
			if got := rgba8(img.At(m.at(float64(i), y).X, m.at(float64(i), y).Y)); !near(got, white, 0) {
				t.Errorf("sample %d (mask false), y %g: pixel %v, want white", i, y, got)
			}
		}
		for _, i := range []int{105, 150, 195} {
			if got := rgba8(img.At(m.at(float64(i), y).X, m.at(float64(i), y).Y)); !near(got, grey, 0) {
				t.Errorf("sample %d (mask true), y %g: pixel %v, want grey %v", i, y, got, grey)
			}
		}
	}
	// Every pixel of the mask's run is grey: from the left edge of sample
	// n/2 to the right edge of sample n-1.
	y := m.at(0, 0.5).Y
	x0, x1 := m.at(float64(n/2)-0.5, 0).X, m.at(float64(n)-0.5, 0).X
	for x := x0 + 2; x <= x1-2; x++ {
		if got := rgba8(img.At(x, y)); !near(got, grey, 0) {
			t.Fatalf("pixel x %d in the mask's run [%d, %d]: %v, want grey", x, x0, x1, got)
		}
	}
	for x := m.at(0, 0).X + 2; x < x0-2; x++ {
		if got := rgba8(img.At(x, y)); !near(got, white, 0) {
			t.Fatalf("pixel x %d left of the mask: %v, want white", x, got)
		}
	}

	// Two runs: both shaded, the gap between them not.
	p.Mask = make([]bool, n)
	for i := range n {
		p.Mask[i] = (i >= 20 && i < 60) || i >= 150
	}
	_, img = renderQual(t, p)
	for i, want := range map[int][4]int{10: white, 40: grey, 100: white, 175: grey, 199: grey} {
		pt := m.at(float64(i), 0.5)
		if got := rgba8(img.At(pt.X, pt.Y)); !near(got, want, 0) {
			t.Errorf("two runs: sample %d: pixel %v, want %v", i, got, want)
		}
	}

	p.Mask = nil
	_, img = renderQual(t, p)
	pt := m.at(150, 0.5)
	if got := rgba8(img.At(pt.X, pt.Y)); !near(got, white, 0) {
		t.Errorf("no mask: sample 150: pixel %v, want white", got)
	}
}

func TestQualitativeStripColours(t *testing.T) {
	// The mean map is constant on the left half and a ramp on the right:
	// after min-max normalisation sample i has u = 0 (i < 100) or
	// (i - 100) / 99, and its pixel is Cividis(u).
	n := 200
	p := testPanel(n, 0)
	for i := range p.Mean {
		p.Mean[i] = 3
		if i >= 100 {
			p.Mean[i] = 3 + 0.5*float64(i-100)/99
		}
	}
	// Min-max normalisation forgets a positive affine map: the variance
	// strip, 7 + 2 mean, has the mean's colours.
	for i, v := range p.Mean {
		p.Variance[i] = 7 + 2*v
	}
	// The members: member 1 (top row) at its greatest, 2 in the middle, 3
	// at its least.
	for i := range n {
		p.Members[0][i], p.Members[1][i], p.Members[2][i] = 2, 1, 0
	}
	// The quantiles share one scale: q05 = 0, q95 = 4 is dark below, light
	// above, whatever the other strip.
	for i := range n {
		p.Q05[i], p.Q95[i] = 0, 4
	}
	_, img := renderQual(t, p)
	f, mains, _ := qualRows(t, p)
	cm := NewCividis()
	want := func(u float64) [4]int {
		c, err := cm.At(u)
		if err != nil {
			t.Fatal(err)
		}
		return rgba8(c)
	}
	// Rows: 0 wave, 1 members, 2 mean, 3 quantiles, 4 variance, 5 CV.
	for _, row := range []int{2, 4} {
		m := newMapper(f.rows[row].main, mains[row], QualitativeHeight)
		for i := 0; i < n; i += 7 {
			u := 0.0
			if i >= 100 {
				u = float64(i-100) / 99
			}
			pt := m.at(float64(i), 0)
			if got := rgba8(img.At(pt.X, pt.Y)); !near(got, want(u), 2) {
				t.Errorf("row %d, sample %d: pixel %v, want Cividis(%.3f) = %v", row, i, got, u, want(u))
			}
		}
	}
	m := newMapper(f.rows[1].main, mains[1], QualitativeHeight)
	for s, u := range []float64{1, 0.5, 0} {
		for _, i := range []int{10, 100, 190} {
			pt := m.at(float64(i), float64(2-s)) // member s is drawn at y = S-1-s
			if got := rgba8(img.At(pt.X, pt.Y)); !near(got, want(u), 2) {
				t.Errorf("member %d, sample %d: pixel %v, want Cividis(%g) = %v", s+1, i, got, u, want(u))
			}
		}
	}
	m = newMapper(f.rows[3].main, mains[3], QualitativeHeight)
	for _, c := range []struct {
		y float64
		u float64
	}{{1, 1}, {0, 0}} { // 95 % on top (y = 1), 5 % below
		pt := m.at(50, c.y)
		if got := rgba8(img.At(pt.X, pt.Y)); !near(got, want(c.u), 2) {
			t.Errorf("quantile row y %g: pixel %v, want Cividis(%g) = %v", c.y, got, c.u, want(c.u))
		}
	}
	// A constant strip is drawn in the middle colour.
	for i := range p.CV {
		p.CV[i] = 0.25
	}
	_, img = renderQual(t, p)
	m = newMapper(f.rows[5].main, mains[5], QualitativeHeight)
	for _, i := range []int{0, 120, 199} {
		pt := m.at(float64(i), 0)
		if got := rgba8(img.At(pt.X, pt.Y)); !near(got, want(0.5), 2) {
			t.Errorf("constant CV, sample %d: pixel %v, want Cividis(0.5) = %v", i, got, want(0.5))
		}
	}
}

func TestStripImage(t *testing.T) {
	// Each value fills a block of ceil(2048/n) x ceil(256/rows) pixels of
	// its colour, rows top first.
	rows := [][]float64{{0, 1, 2}, {4, 3, 2}}
	img := stripImage(rows, 0, 4)
	rx, ry := (stripPixX+2)/3, stripPixY/2
	if b := img.Bounds(); b.Dx() != 3*rx || b.Dy() != 2*ry {
		t.Fatalf("image %v, want %dx%d", b, 3*rx, 2*ry)
	}
	for r, row := range rows {
		for i, v := range row {
			cr, cg, cb := cividisRGB(v / 4)
			want := [4]int{int(unit8(cr)), int(unit8(cg)), int(unit8(cb)), 255}
			for _, pt := range []image.Point{{i * rx, r * ry}, {i*rx + rx - 1, r*ry + ry - 1}} {
				if got := rgba8(img.At(pt.X, pt.Y)); got != want {
					t.Errorf("row %d, value %d, pixel %v: %v, want %v", r, i, pt, got, want)
				}
			}
		}
	}
	// More samples than pixels: one pixel a sample.
	long := make([]float64, 3000)
	if b := stripImage([][]float64{long}, 0, 0).Bounds(); b.Dx() != 3000 || b.Dy() != stripPixY {
		t.Errorf("3000 samples: image %v, want 3000x%d", b, stripPixY)
	}
}

func TestQualitativeDeterministic(t *testing.T) {
	p := testPanel(640, 3200)
	a, _ := renderQual(t, p)
	b, _ := renderQual(t, p)
	if !bytes.Equal(a, b) {
		t.Fatal("the same panel gave different PNG bytes")
	}
	// And the file helper writes those bytes.
	path := filepath.Join(t.TempDir(), "qual.png")
	if err := QualitativeFile(path, p); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, a) {
		t.Error("QualitativeFile wrote other bytes than Qualitative")
	}
}

func TestQualitativeErrors(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name string
		edit func(p *Panel)
		want string
	}{
		{"empty wave", func(p *Panel) { p.Wave = nil }, "Wave is empty"},
		{"NaN in wave", func(p *Panel) { p.Wave[3] = nan }, "Wave[3] is NaN"},
		{"short mask", func(p *Panel) { p.Mask = p.Mask[:9] }, "Mask has 9 values, want 10"},
		{"short member", func(p *Panel) { p.Members[2] = p.Members[2][:4] }, "Members[2] has 4 values, want 10"},
		{"Inf in member", func(p *Panel) { p.Members[1][7] = inf }, "Members[1][7] is +Inf"},
		{"long mean", func(p *Panel) { p.Mean = append(p.Mean, 1) }, "Mean has 11 values, want 10"},
		{"NaN in mean", func(p *Panel) { p.Mean[0] = nan }, "Mean[0] is NaN"},
		{"NaN in q05", func(p *Panel) { p.Q05[9] = nan }, "Q05[9] is NaN"},
		{"NaN in q95", func(p *Panel) { p.Q95[1] = nan }, "Q95[1] is NaN"},
		{"q05 alone", func(p *Panel) { p.Q95 = nil }, "Q05 and Q95 must both be given"},
		{"q95 alone", func(p *Panel) { p.Q05 = nil }, "Q05 and Q95 must both be given"},
		{"-Inf in variance", func(p *Panel) { p.Variance[5] = math.Inf(-1) }, "Variance[5] is -Inf"},
		{"short CV", func(p *Panel) { p.CV = p.CV[:1] }, "CV has 1 values, want 10"},
		{"NaN in CV", func(p *Panel) { p.CV[2] = nan }, "CV[2] is NaN"},
		{"negative Fs", func(p *Panel) { p.Fs = -1 }, "Fs is -1"},
		{"NaN Fs", func(p *Panel) { p.Fs = nan }, "Fs is NaN"},
		{"Inf Fs", func(p *Panel) { p.Fs = inf }, "Fs is +Inf"},
		{"prob above 1", func(p *Panel) { p.Labels.Prob = 1.5 }, "Labels.Prob is 1.5"},
		{"negative prob", func(p *Panel) { p.Labels.Prob = -0.1 }, "Labels.Prob is -0.1"},
		{"NaN prob", func(p *Panel) { p.Labels.Prob = nan }, "Labels.Prob is NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPanel(10, 3200)
			tc.edit(&p)
			var buf bytes.Buffer
			err := Qualitative(&buf, p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `panel "test"`) {
				t.Fatalf("error %v, want one naming the panel and %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written on error", buf.Len())
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "q.png")
			if err := QualitativeFile(path, p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("QualitativeFile: error %v, want %q", err, tc.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("QualitativeFile left %d files behind on error", len(ents))
			}
		})
	}
	// Edge values that are fine: probability 0 and 1, a prob that is not
	// checked without a predicted class, a panel without a title.
	for _, edit := range []func(p *Panel){
		func(p *Panel) { p.Labels.Prob = 0 },
		func(p *Panel) { p.Labels.Prob = 1 },
		func(p *Panel) { p.Labels = Labels{Class: "sag", Prob: nan} },
		func(p *Panel) { p.Title = "" },
		func(p *Panel) {
			p.Wave = p.Wave[:1]
			p.Mask = nil
			p.Members = nil
			p.Mean = p.Mean[:1]
			p.Q05, p.Q95, p.Variance, p.CV = nil, nil, nil, nil
		},
	} {
		p := testPanel(10, 3200)
		edit(&p)
		if err := Qualitative(&bytes.Buffer{}, p); err != nil {
			t.Errorf("valid panel: %v", err)
		}
	}
	p := testPanel(10, 3200)
	p.Title = ""
	p.Wave = nil
	if err := Qualitative(&bytes.Buffer{}, p); err == nil || !strings.HasPrefix(err.Error(), "figure: qualitative panel: Wave is empty") {
		t.Errorf("untitled panel: error %v", err)
	}
}

func TestWriteFileErrors(t *testing.T) {
	// A directory that does not exist: the error names the path.
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "q.png")
	err := QualitativeFile(path, testPanel(10, 0))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v, want one naming %s", err, path)
	}
	// A path that is a directory: the rename fails, nothing is left.
	dir := t.TempDir()
	target := filepath.Join(dir, "taken")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := QualitativeFile(target, testPanel(10, 0)); err == nil || !strings.Contains(err.Error(), target) {
		t.Errorf("rename over a directory: error %v, want one naming %s", err, target)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries left in the directory, want only the directory in the way", len(ents))
	}
	// A relative path writes into the working directory.
	t.Chdir(t.TempDir())
	if err := QualitativeFile("rel.png", testPanel(10, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("rel.png"); err != nil {
		t.Error(err)
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestRenderWriteError(t *testing.T) {
	err := Qualitative(failWriter{}, testPanel(10, 0))
	if err == nil || !strings.Contains(err.Error(), "writing PNG") {
		t.Errorf("error %v, want the PNG write's", err)
	}
}

func TestQualitativeAxes(t *testing.T) {
	p := testPanel(40, 0)
	p.Members = append(p.Members, make([][]float64, 17)...)
	for s := 3; s < 20; s++ {
		p.Members[s] = p.Mean
	}
	f, _, _ := qualRows(t, p)
	// Members: row s (from the top) at y = S-1-s, labelled s+1 every
	// ceil(S/8) rows.
	var got []string
	ticks := f.rows[1].main.Y.Tick.Marker.Ticks(-0.5, 19.5)
	for i, tk := range ticks {
		if tk.Value != float64(19-i) {
			t.Errorf("member tick %d at %g, want %d", i, tk.Value, 19-i)
		}
		if tk.Label != "" {
			got = append(got, tk.Label)
		}
	}
	if s := strings.Join(got, " "); len(ticks) != 20 || s != "1 4 7 10 13 16 19" {
		t.Errorf("%d member ticks labelled %q, want 20 labelled every 3rd from 1", len(ticks), s)
	}
	// Quantiles: 95% on top; one-row strips have no ticks.
	q := f.rows[3].main.Y.Tick.Marker.Ticks(-0.5, 1.5)
	if len(q) != 2 || q[0].Label != "95%" || q[0].Value != 1 || q[1].Label != "5%" || q[1].Value != 0 {
		t.Errorf("quantile ticks %+v", q)
	}
	if n := len(f.rows[2].main.Y.Tick.Marker.Ticks(-0.5, 0.5)); n != 0 || f.rows[2].main.Y.Label.Text != "mean" {
		t.Errorf("mean strip: %d ticks, label %q; want none and \"mean\"", n, f.rows[2].main.Y.Label.Text)
	}
	for i, r := range f.rows[1:] {
		rows := len(r.main.Y.Tick.Marker.Ticks(-0.5, 100)) // ticks count rows, or 0 for one row
		if rows == 0 {
			rows = 1
		}
		if r.main.Y.Min != -0.5 || r.main.Y.Max != float64(rows)-0.5 {
			t.Errorf("strip %d: y [%g, %g], want [-0.5, %d.5]", i+1, r.main.Y.Min, r.main.Y.Max, rows-1)
		}
	}
	// The wave's y range is its own padded by 8 % of its span; a flat
	// wave gets ±1.
	p.Wave[3], p.Wave[7] = -2, 3
	f, _, _ = qualRows(t, p)
	if y := f.rows[0].main.Y; math.Abs(y.Min-(-2-0.4)) > 1e-12 || math.Abs(y.Max-(3+0.4)) > 1e-12 {
		t.Errorf("wave y range [%g, %g], want [-2.4, 3.4]", y.Min, y.Max)
	}
	p.Wave = make([]float64, 40)
	for i := range p.Wave {
		p.Wave[i] = 5
	}
	f, _, _ = qualRows(t, p)
	if y := f.rows[0].main.Y; y.Min != 4 || y.Max != 6 {
		t.Errorf("flat wave y range [%g, %g], want [4, 6]", y.Min, y.Max)
	}
}

func TestQualitativeWaveAndMaskInMs(t *testing.T) {
	// At Fs = 3200 Hz, sample i is at i/3.2 ms: the wave's spike at
	// sample 150 is drawn there, the mask's run [100, 200) from 99.5 to
	// 199.5 samples.
	n := 200
	p := testPanel(n, 3200)
	p.Wave[150] = 1
	_, img := renderQual(t, p)
	f, mains, _ := qualRows(t, p)
	m := newMapper(f.rows[0].main, mains[0], QualitativeHeight)
	dt := 1000 / 3200.0
	dark := func(pt image.Point) bool {
		for dx := -1; dx <= 1; dx++ {
			if c := rgba8(img.At(pt.X+dx, pt.Y)); c[0] < 100 {
				return true
			}
		}
		return false
	}
	if !dark(m.at(150*dt, 0.9)) {
		t.Error("no line at the spike (sample 150, y 0.9)")
	}
	if dark(m.at(120*dt, 0.9)) || dark(m.at(180*dt, 0.9)) {
		t.Error("line at y 0.9 away from the spike")
	}
	grey := rgba8(maskGrey)
	white := [4]int{255, 255, 255, 255}
	y := m.at(0, 0.5).Y
	x0, x1 := m.at(99.5*dt, 0).X, m.at(199.5*dt, 0).X
	spike := m.at(150*dt, 0).X
	for x := x0 - 6; x <= x1; x++ {
		if x > spike-4 && x < spike+4 {
			continue // the line up to the spike and down
		}
		want := grey
		if x < x0-1 {
			want = white
		}
		if x > x0+1 && x < x1-1 || x < x0-1 {
			if got := rgba8(img.At(x, y)); got != want {
				t.Fatalf("pixel x %d (mask run from %d to %d): %v, want %v", x, x0, x1, got, want)
			}
		}
	}
}

func TestQualitativeLayout(t *testing.T) {
	p := testPanel(100, 3200)
	f, mains, bars := qualRows(t, p)
	dc := layoutCanvas(QualitativeWidth, QualitativeHeight)
	// Rows tile the figure less its margin, top to bottom, and the bottom
	// one is the taller by the time axis than its weight gives.
	top := dc.Max.Y - qualMargin
	total := 0.0
	for _, r := range f.rows {
		total += r.weight
	}
	free := dc.Max.Y - dc.Min.Y - 2*qualMargin - qualAxis
	for i, c := range mains {
		if math.Abs(float64(c.Max.Y-top)) > 1e-9 {
			t.Errorf("row %d starts at y %v, want %v", i, c.Max.Y, top)
		}
		h := vg.Length(f.rows[i].weight/total) * free
		if i == len(mains)-1 {
			h += qualAxis
		}
		if math.Abs(float64(c.Max.Y-c.Min.Y-h)) > 1e-9 {
			t.Errorf("row %d is %v high, want %v", i, c.Max.Y-c.Min.Y, h)
		}
		top = c.Min.Y
		if c.Min.X < qualMargin || c.Max.X > dc.Max.X-qualSide-qualMargin+1e-9 {
			t.Errorf("row %d x [%v, %v] outside [%v, %v]", i, c.Min.X, c.Max.X, qualMargin, dc.Max.X-qualSide-qualMargin)
		}
		if b := bars[i]; f.rows[i].bar != nil && (b.Max.X > dc.Max.X-qualMargin+1e-9 || b.Min.X < dc.Max.X-qualMargin-qualSide) {
			t.Errorf("colour bar %d x [%v, %v] outside the right column", i, b.Min.X, b.Max.X)
		}
	}
	if math.Abs(float64(top-qualMargin)) > 1e-9 {
		t.Errorf("rows end at y %v, want the margin %v", top, qualMargin)
	}
	// The legend is beside the waveform's data area, right of it, as high.
	data := f.rows[0].main.DataCanvas(mains[0])
	lc := legendCanvas(data, bars[0])
	if lc.Min.X <= data.Max.X || lc.Min.X <= mains[0].Max.X || lc.Max.X > dc.Max.X-qualMargin+1e-9 || lc.Min.Y != data.Min.Y || lc.Max.Y != data.Max.Y {
		t.Errorf("legend %v, waveform data %v", lc.Rectangle, data.Rectangle)
	}
	// Every strip's image fills its data area: just inside the top and
	// the bottom, in the middle, the pixel is not white.
	_, img := renderQual(t, p)
	h := QualitativeHeight.Dots(DPI)
	for i := 1; i < len(f.rows); i++ {
		d := f.rows[i].main.DataCanvas(mains[i])
		x := int(((d.Min.X + d.Max.X) / 2).Dots(DPI))
		for _, y := range []int{int(h-d.Max.Y.Dots(DPI)) + 2, int(h-d.Min.Y.Dots(DPI)) - 2} {
			if got := rgba8(img.At(x, y)); got == [4]int{255, 255, 255, 255} {
				t.Errorf("strip %d: white at pixel (%d, %d) inside its data area", i, x, y)
			}
		}
	}
}

func TestQualitativeExtremeValues(t *testing.T) {
	// Values near ±MaxFloat64 normalise without overflow: the least is
	// the darkest colour, the greatest the lightest.
	img := stripImage([][]float64{{-math.MaxFloat64, 0, math.MaxFloat64}}, -math.MaxFloat64, math.MaxFloat64)
	rx := (stripPixX + 2) / 3
	for i, u := range []float64{0, 0.5, 1} {
		r, g, b := cividisRGB(u)
		want := [4]int{int(unit8(r)), int(unit8(g)), int(unit8(b)), 255}
		if got := rgba8(img.At(i*rx, 0)); got != want {
			t.Errorf("value %d: %v, want Cividis(%g) = %v", i, got, u, want)
		}
	}
	p := testPanel(10, 3200)
	p.Mean[0], p.Mean[1] = -math.MaxFloat64, math.MaxFloat64
	if err := Qualitative(&bytes.Buffer{}, p); err != nil {
		t.Errorf("mean over the whole float64 range: %v", err)
	}
	for _, tc := range []struct {
		edit func(p *Panel)
		want string
	}{
		{func(p *Panel) { p.Wave[0], p.Wave[1] = -math.MaxFloat64, math.MaxFloat64 }, "Wave spans"},
		{func(p *Panel) { p.Fs = 1e-310 }, "overflow the time axis"},
	} {
		p := testPanel(10, 3200)
		tc.edit(&p)
		if err := Qualitative(&bytes.Buffer{}, p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// TestQualitativeLongChannelNames: a three-phase record whose channel
// names are as long as COMTRADE's ("SBUS A          V-node") is drawn:
// every row keeps a data area of positive height, the turned labels are
// cut to their rows ("…"), and the names' runs of spaces are one.
func TestQualitativeLongChannelNames(t *testing.T) {
	for _, names := range [][]string{
		{"SBUS A          V-node", "SBUS B          V-node", "SBUS C          V-node"},
		{"Ωμέγα φάση Α ρεύμα γραμμής", "Ωμέγα φάση Β ρεύμα γραμμής", "Ωμέγα φάση Γ ρεύμα γραμμής"},
	} {
		p := testPanel(3*200, 3200)
		p.Channels, p.ChannelNames = 3, names
		renderQual(t, p)
		f, mains, bars := qualRows(t, p)
		cut := 0
		for i, r := range f.rows {
			if d := r.main.DataCanvas(mains[i]); !(d.Max.Y > d.Min.Y) {
				t.Errorf("%q row %d (%s): a data area of height %v", names[0], i, r.main.Y.Label.Text, d.Max.Y-d.Min.Y)
			}
			if r.bar != nil {
				if d := r.bar.DataCanvas(bars[i]); !(d.Max.Y > d.Min.Y) {
					t.Errorf("%q row %d: a colour bar of height %v", names[0], i, d.Max.Y-d.Min.Y)
				}
			}
			if strings.Contains(r.main.Y.Label.Text, "  ") {
				t.Errorf("row %d label %q keeps a run of spaces", i, r.main.Y.Label.Text)
			}
			if strings.HasSuffix(strings.TrimSuffix(r.main.Y.Label.Text, " (p.u.)"), "…") {
				cut++
			}
		}
		if cut == 0 {
			t.Errorf("%q: no label was cut", names[0])
		}
	}
}

// TestRenderRecovers: a drawing that panics (gonum/plot on a layout it
// cannot draw) is an error, not a crash.
func TestRenderRecovers(t *testing.T) {
	var buf bytes.Buffer
	err := render(&buf, QualitativeWidth, QualitativeHeight, func(draw.Canvas) { panic("negative dimensions") })
	if err == nil || !strings.Contains(err.Error(), "figure: drawing failed: negative dimensions") {
		t.Errorf("err %v", err)
	}
}
