package figure

import (
	"errors"
	"image/color"
	"math"
	"testing"

	"gonum.org/v1/plot/palette"
)

// published are entries of matplotlib's _cividis_data as read from the
// matplotlib repository's lib/matplotlib/_cm_listed.py, typed here by hand,
// apart from the script that wrote cividis_data.go.
var published = map[int][3]float64{
	0:   {0.000000, 0.135112, 0.304751},
	1:   {0.000000, 0.138068, 0.311105},
	23:  {0.003602, 0.195911, 0.441564},
	120: {0.461616, 0.462405, 0.461969},
	133: {0.506866, 0.499743, 0.472432},
	251: {0.992218, 0.888385, 0.205468},
	255: {0.995737, 0.909344, 0.217772},
}

func TestCividisTablePublished(t *testing.T) {
	for k, want := range published {
		if cividisTable[k] != want {
			t.Errorf("entry %d = %v, published %v", k, cividisTable[k], want)
		}
	}
}

// rgb64 returns c's non-premultiplied components in [0, 1].
func rgb64(t *testing.T, c color.Color) (r, g, b, a float64) {
	t.Helper()
	n, ok := c.(color.NRGBA64)
	if !ok {
		t.Fatalf("colour %T, want color.NRGBA64", c)
	}
	return float64(n.R) / 0xffff, float64(n.G) / 0xffff, float64(n.B) / 0xffff, float64(n.A) / 0xffff
}

func TestCividisAtEntries(t *testing.T) {
	// On [lo, hi], At(lo + k (hi - lo) / 255) is entry k, up to the 16-bit
	// rounding of the colour (half a step, 0.5/65535) and the rounding of
	// the value's position.
	lo, hi := -2.0, 3.0
	c := NewCividis()
	c.SetMin(lo)
	c.SetMax(hi)
	const tol = 1.0 / 0xffff
	for k := range 256 {
		v := lo + float64(k)*(hi-lo)/255
		if k == 255 {
			v = hi
		}
		col, err := c.At(v)
		if err != nil {
			t.Fatalf("At(%g): %v", v, err)
		}
		r, g, b, a := rgb64(t, col)
		e := cividisTable[k]
		if math.Abs(r-e[0]) > tol || math.Abs(g-e[1]) > tol || math.Abs(b-e[2]) > tol || a != 1 {
			t.Fatalf("At(entry %d) = (%g, %g, %g, %g), want %v, alpha 1", k, r, g, b, a, e)
		}
	}
}

func TestCividisInterpolates(t *testing.T) {
	// Between entries k and k+1, At is linear: at the fraction f of the
	// way it is (1 - f) entry k + f entry k+1.
	c := NewCividis()
	const tol = 1.0 / 0xffff
	for _, k := range []int{0, 22, 100, 200, 254} {
		for _, f := range []float64{0.25, 0.5, 0.9} {
			col, err := c.At((float64(k) + f) / 255)
			if err != nil {
				t.Fatal(err)
			}
			r, g, b, _ := rgb64(t, col)
			lo, hi := cividisTable[k], cividisTable[k+1]
			got := [3]float64{r, g, b}
			for ch := range 3 {
				want := (1-f)*lo[ch] + f*hi[ch]
				if math.Abs(got[ch]-want) > tol {
					t.Errorf("At(%d+%g / 255) channel %d = %g, want %g", k, f, ch, got[ch], want)
				}
			}
		}
	}
}

// lightness is CIE L* of an sRGB colour with components in [0, 1] (D65,
// Y = 0.2126 R + 0.7152 G + 0.0722 B of the linearised components).
func lightness(r, g, b float64) float64 {
	lin := func(c float64) float64 {
		if c <= 0.04045 {
			return c / 12.92
		}
		return math.Pow((c+0.055)/1.055, 2.4)
	}
	y := 0.2126*lin(r) + 0.7152*lin(g) + 0.0722*lin(b)
	const d = 6.0 / 29
	f := y / (3 * d * d)
	f += 4.0 / 29
	if y > d*d*d {
		f = math.Cbrt(y)
	}
	return 116*f - 16
}

func TestCividisLightnessIncreases(t *testing.T) {
	// Cividis is designed to have monotonically increasing lightness: the
	// table's L* rises entry by entry, and so does At's across [min, max].
	prev := math.Inf(-1)
	for k, e := range cividisTable {
		l := lightness(e[0], e[1], e[2])
		if !(l > prev) {
			t.Fatalf("entry %d: L* %g does not exceed entry %d's %g", k, l, k-1, prev)
		}
		prev = l
	}
	c := NewCividis()
	prev = math.Inf(-1)
	const steps = 2040 // 8 steps an entry
	for i := 0; i <= steps; i++ {
		col, err := c.At(float64(i) / steps)
		if err != nil {
			t.Fatal(err)
		}
		r, g, b, _ := rgb64(t, col)
		l := lightness(r, g, b)
		if !(l > prev) {
			t.Fatalf("At(%d/%d): L* %g does not exceed %g", i, steps, l, prev)
		}
		prev = l
	}
	// The rise is large: dark blue to light yellow.
	first, last := cividisTable[0], cividisTable[255]
	if d := lightness(last[0], last[1], last[2]) - lightness(first[0], first[1], first[2]); d < 70 {
		t.Errorf("L* rises by %g over the map, want a dark-to-light map (> 70)", d)
	}
}

func TestCividisOutOfRange(t *testing.T) {
	c := NewCividis()
	c.SetMin(1)
	c.SetMax(2)
	for _, tc := range []struct {
		v    float64
		want error
	}{
		{math.Nextafter(1, 0), palette.ErrUnderflow},
		{-math.MaxFloat64, palette.ErrUnderflow},
		{math.Inf(-1), palette.ErrUnderflow},
		{math.Nextafter(2, 3), palette.ErrOverflow},
		{math.Inf(1), palette.ErrOverflow},
		{math.NaN(), palette.ErrNaN},
	} {
		col, err := c.At(tc.v)
		if !errors.Is(err, tc.want) || col != nil {
			t.Errorf("At(%g) = %v, %v; want nil, %v", tc.v, col, err, tc.want)
		}
	}
	for _, v := range []float64{1, 1.5, 2} {
		if _, err := c.At(v); err != nil {
			t.Errorf("At(%g) in [1, 2]: %v", v, err)
		}
	}
	// An empty or reversed range is an error, not a division by zero.
	for _, r := range [][2]float64{{1, 1}, {2, 1}} {
		c.SetMin(r[0])
		c.SetMax(r[1])
		if col, err := c.At(r[0]); err == nil {
			t.Errorf("range [%g, %g]: At(%g) = %v, want an error", r[0], r[1], r[0], col)
		}
	}
	var zero Cividis
	if _, err := zero.At(0); err == nil {
		t.Error("zero Cividis: At(0) succeeded, want the error of an empty range")
	}
}

func TestCividisMinMaxAlpha(t *testing.T) {
	c := NewCividis()
	if c.Min() != 0 || c.Max() != 1 || c.Alpha() != 1 {
		t.Fatalf("NewCividis: min %g max %g alpha %g, want 0 1 1", c.Min(), c.Max(), c.Alpha())
	}
	c.SetMin(-4)
	c.SetMax(4)
	c.SetAlpha(0.5)
	if c.Min() != -4 || c.Max() != 4 || c.Alpha() != 0.5 {
		t.Fatalf("after Set: min %g max %g alpha %g, want -4 4 0.5", c.Min(), c.Max(), c.Alpha())
	}
	col, err := c.At(0)
	if err != nil {
		t.Fatal(err)
	}
	r, g, b, a := rgb64(t, col)
	// 0 is the middle of [-4, 4]: halfway between entries 127 and 128.
	lo, hi := cividisTable[127], cividisTable[128]
	if math.Abs(a-0.5) > 1.0/0xffff || math.Abs(r-(lo[0]+hi[0])/2) > 1.0/0xffff ||
		math.Abs(g-(lo[1]+hi[1])/2) > 1.0/0xffff || math.Abs(b-(lo[2]+hi[2])/2) > 1.0/0xffff {
		t.Errorf("At(0) on [-4, 4], alpha 0.5 = (%g, %g, %g, %g)", r, g, b, a)
	}
	for _, bad := range []float64{-0.01, 1.01, math.NaN()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetAlpha(%g) did not panic", bad)
				}
			}()
			c.SetAlpha(bad)
		}()
	}
	for _, ok := range []float64{0, 1} {
		c.SetAlpha(ok)
		if c.Alpha() != ok {
			t.Errorf("SetAlpha(%g): Alpha %g", ok, c.Alpha())
		}
	}
}

func TestCividisPalette(t *testing.T) {
	c := NewCividis()
	c.SetMin(10)
	c.SetMax(20)
	for _, n := range []int{1, 2, 5, 256} {
		cols := c.Palette(n).Colors()
		if len(cols) != n {
			t.Fatalf("Palette(%d) has %d colours", n, len(cols))
		}
		for i, got := range cols {
			v := 10.0
			if n > 1 {
				v = 10 + 10*float64(i)/float64(n-1)
			}
			want, err := c.At(v)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("Palette(%d)[%d] = %v, want At(%g) = %v", n, i, got, v, want)
			}
		}
	}
	// 256 colours over [min, max] are the table's entries.
	cols := c.Palette(256).Colors()
	for _, k := range []int{0, 23, 255} {
		r, g, b, _ := rgb64(t, cols[k])
		e := cividisTable[k]
		if math.Abs(r-e[0]) > 1.0/0xffff || math.Abs(g-e[1]) > 1.0/0xffff || math.Abs(b-e[2]) > 1.0/0xffff {
			t.Errorf("Palette(256)[%d] = (%g, %g, %g), want entry %v", k, r, g, b, e)
		}
	}
	for _, bad := range []int{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Palette(%d) did not panic", bad)
				}
			}()
			c.Palette(bad)
		}()
	}
	c.SetMax(10)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Palette on an empty range did not panic")
			}
		}()
		c.Palette(3)
	}()
}

func TestCividisPaletteLastIsMax(t *testing.T) {
	// lo + (n-1) (hi - lo) / (n-1) rounds above hi for these: the last
	// colour is still At(hi), not an overflow.
	for _, tc := range []struct {
		lo, hi float64
		n      int
	}{{-3.8875424702647727, 3.205988117714396, 152}, {5.968778811548521, 13.939957340340849, 132}} {
		if v := tc.lo + float64(tc.n-1)*(tc.hi-tc.lo)/float64(tc.n-1); !(v > tc.hi) {
			t.Fatalf("case [%g, %g] n %d does not round above hi", tc.lo, tc.hi, tc.n)
		}
		c := NewCividis()
		c.SetMin(tc.lo)
		c.SetMax(tc.hi)
		cols := c.Palette(tc.n).Colors()
		want, _ := c.At(tc.hi)
		if cols[tc.n-1] != want {
			t.Errorf("last colour %v, want At(max) %v", cols[tc.n-1], want)
		}
	}
}
