package figure

import (
	"image"
	"math"
	"strconv"
	"testing"

	"gonum.org/v1/plot/vg"
)

// stripPixels are the pixel colours inside row i's data area, 2 pixels in
// from every edge, as a set.
func stripPixels(t *testing.T, p Panel, i int) map[[4]int]int {
	t.Helper()
	_, img := renderQual(t, p)
	f, mains, _ := qualRows(t, p)
	d := f.rows[i].main.DataCanvas(mains[i])
	h := QualitativeHeight.Dots(DPI)
	px := func(l vg.Length) int { return int(l.Dots(DPI)) }
	r := image.Rect(px(d.Min.X)+2, int(h-d.Max.Y.Dots(DPI))+2, px(d.Max.X)-2, int(h-d.Min.Y.Dots(DPI))-2)
	out := map[[4]int]int{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			out[rgba8(img.At(x, y))]++
		}
	}
	return out
}

func TestQualitativeFlatStrip(t *testing.T) {
	// The mean map "from 0.897 to 0.897": constant, and constant
	// but for float32 rounding (relative spread 1e-7), each drawn in one
	// colour, cividis's middle, its bar "constant" at the value; a map
	// whose spread is 1e-3 of its size is a real map, in many colours,
	// its bar's ends labelled apart.
	mid := rgba8(mustAt(t, 0.5))
	for _, tc := range []struct {
		name string
		rel  float64
		flat bool
	}{{"constant", 0, true}, {"float32 rounding", 1e-7, true}, {"a real spread", 1e-3, false}} {
		p := testPanel(200, 3200)
		for i := range p.Mean {
			p.Mean[i] = 0.897 * (1 + tc.rel*float64(i)/199)
		}
		cols := stripPixels(t, p, 2) // rows: wave, members, mean
		f, _, _ := qualRows(t, p)
		bar := f.rows[2].bar
		ticks := bar.Y.Tick.Marker.Ticks(0, 1)
		if tc.flat {
			if len(cols) != 1 || cols[mid] == 0 {
				t.Errorf("%s: the mean strip has %d colours %v, want the middle colour %v alone", tc.name, len(cols), keys(cols), mid)
			}
			if bar.Y.Label.Text != "constant" || len(ticks) != 1 {
				t.Fatalf("%s: colour bar %q with %d ticks, want \"constant\" and one", tc.name, bar.Y.Label.Text, len(ticks))
			}
			if v, err := strconv.ParseFloat(ticks[0].Label, 64); err != nil || math.Abs(v-0.897) > 0.0005 {
				t.Errorf("%s: constant's label %q, want 0.897", tc.name, ticks[0].Label)
			}
			continue
		}
		if len(cols) < 50 {
			t.Errorf("%s: the mean strip has %d colours, want a ramp of many", tc.name, len(cols))
		}
		if len(ticks) != 2 || ticks[0].Label == ticks[1].Label {
			t.Fatalf("%s: colour bar ticks %+v, want two distinct ends", tc.name, ticks)
		}
		lo, _ := strconv.ParseFloat(ticks[0].Label, 64)
		hi, _ := strconv.ParseFloat(ticks[1].Label, 64)
		span := 0.897 * tc.rel
		if math.Abs(lo-0.897) > span/4 || math.Abs(hi-0.897*(1+tc.rel)) > span/4 {
			t.Errorf("%s: colour bar ends %q and %q, want %g and %g to a quarter of the span", tc.name, ticks[0].Label, ticks[1].Label, 0.897, 0.897*(1+tc.rel))
		}
	}
	// A quantile pair both constant, at different values, is no flat
	// scale: the pair's shared range is their two values.
	p := testPanel(200, 3200)
	for i := range p.Q05 {
		p.Q05[i], p.Q95[i] = 1, 2
	}
	if cols := stripPixels(t, p, 3); len(cols) < 2 {
		t.Errorf("quantiles 1 and 2: %d colours, want the two ends", len(cols))
	}
}

func mustAt(t *testing.T, u float64) interface{ RGBA() (r, g, b, a uint32) } {
	t.Helper()
	c, err := NewCividis().At(u)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func keys(m map[[4]int]int) [][4]int {
	var out [][4]int
	for k := range m {
		out = append(out, k)
		if len(out) == 5 {
			break
		}
	}
	return out
}

func TestRangeLabels(t *testing.T) {
	// The ends read apart, each within one unit of its last digit of the
	// value, with at least 3 significant digits.
	for _, c := range [][2]float64{{0.8971, 0.8972}, {0, 1}, {1e-9, 1.0000001e-9}, {-3, 3}, {100, 100.5}} {
		a, b := rangeLabels(c[0], c[1])
		if a == b {
			t.Errorf("rangeLabels(%g, %g) = %q twice", c[0], c[1], a)
		}
		for i, s := range []string{a, b} {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.Abs(v-c[i]) > 0.5*math.Abs(c[1]-c[0]) {
				t.Errorf("rangeLabels(%g, %g): %q is not %g to half the span", c[0], c[1], s, c[i])
			}
		}
	}
}

func TestIsFlat(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   bool
	}{{0, 0, true}, {5, 5, true}, {1, 1 + 1e-7, true}, {1, 1 + 1e-5, false}, {-1, 1, false}, {0, 1e-300, false}, {-math.MaxFloat64, math.MaxFloat64, false}} {
		if got := isFlat(c.lo, c.hi); got != c.want {
			t.Errorf("isFlat(%g, %g) = %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
}

func TestQualitativeCycleTicks(t *testing.T) {
	// A tick every cycle: every Fs/F0 samples, 64 at 3200 Hz and 50 Hz
	// (20 ms), 64 at 3840 Hz and 60 Hz (16.7 ms); the bottom row labels
	// them in ms, the rows above carry the same ticks unlabelled.
	for _, c := range []struct{ fs, f0 float64 }{{3200, 50}, {3840, 60}} {
		p := testPanel(640, c.fs)
		p.F0 = c.f0
		renderQual(t, p)
		f, _, _ := qualRows(t, p)
		dt := 1000 / c.fs
		spc := c.fs / c.f0 // samples a cycle
		last := f.rows[len(f.rows)-1].main
		ticks := last.X.Tick.Marker.Ticks(last.X.Min, last.X.Max)
		// Sample 639 ends at 639.5 dt: cycles 0..9 start inside.
		if len(ticks) != 10 {
			t.Fatalf("%g Hz: %d ticks over 10 cycles, want 10", c.f0, len(ticks))
		}
		if ticks[0].Label != "0" {
			t.Errorf("%g Hz: first tick labelled %q, want 0", c.f0, ticks[0].Label)
		}
		for k, tk := range ticks {
			if want := float64(k) * spc * dt; math.Abs(tk.Value-want) > 1e-9 {
				t.Errorf("%g Hz: tick %d at %g ms, want %g (sample %g)", c.f0, k, tk.Value, want, float64(k)*spc)
			}
			if v, err := strconv.ParseFloat(tk.Label, 64); err != nil || math.Abs(v-tk.Value) > 0.05 {
				t.Errorf("%g Hz: tick %d labelled %q, want %.3g", c.f0, k, tk.Label, tk.Value)
			}
		}
		top := f.rows[0].main
		for k, tk := range top.X.Tick.Marker.Ticks(top.X.Min, top.X.Max) {
			if tk.Label != "" || math.Abs(tk.Value-ticks[k].Value) > 1e-9 {
				t.Errorf("%g Hz: top row tick %d %+v, want unlabelled at %g", c.f0, k, tk, ticks[k].Value)
			}
		}
	}
	// A long axis: at most maxCycleTicks ticks, each on a cycle, evenly
	// spaced, about 10 labelled.
	ts := cycleTicks{period: 20, labels: true}.Ticks(0, 20*1000)
	if len(ts) > maxCycleTicks || len(ts) < maxCycleTicks/2 {
		t.Errorf("1000 cycles: %d ticks, want at most %d and at least half as many", len(ts), maxCycleTicks)
	}
	step, labelled := ts[1].Value-ts[0].Value, 0
	for i, tk := range ts {
		if k := tk.Value / 20; k != math.Round(k) || (i > 0 && math.Abs(tk.Value-ts[i-1].Value-step) > 1e-9) {
			t.Errorf("1000 cycles: tick %d at %g: not on a cycle or not evenly spaced", i, tk.Value)
		}
		if tk.Label != "" {
			labelled++
		}
	}
	if labelled < 5 || labelled > 12 {
		t.Errorf("1000 cycles: %d labels, want about 10", labelled)
	}
}
