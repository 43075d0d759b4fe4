package eval

import (
	"math"
	"strings"
	"testing"
)

// TestPairedTClosedForms: with 2 and 3 pairs (1 and 2 degrees of
// freedom) the t quantile has a closed form: tan(pi (p - 1/2)) for one
// degree (Cauchy), (2p - 1) / sqrt(2 p (1 - p)) for two.
func TestPairedTClosedForms(t *testing.T) {
	for _, c := range []struct {
		a, b  []float64
		level float64
		q     func(p float64) float64
	}{
		{[]float64{0.30, 0.34}, []float64{0.25, 0.27}, 0.95, func(p float64) float64 { return math.Tan(math.Pi * (p - 0.5)) }},
		{[]float64{0.30, 0.34, 0.29}, []float64{0.25, 0.27, 0.26}, 0.95, func(p float64) float64 { return (2*p - 1) / math.Sqrt(2*p*(1-p)) }},
		{[]float64{0.30, 0.34, 0.29}, []float64{0.25, 0.27, 0.26}, 0.8, func(p float64) float64 { return (2*p - 1) / math.Sqrt(2*p*(1-p)) }},
	} {
		iv, err := PairedT(c.a, c.b, c.level)
		if err != nil {
			t.Fatal(err)
		}
		n := float64(len(c.a))
		var d []float64
		for i := range c.a {
			d = append(d, c.a[i]-c.b[i])
		}
		mean := 0.0
		for _, x := range d {
			mean += x
		}
		mean /= n
		ss := 0.0
		for _, x := range d {
			ss += (x - mean) * (x - mean)
		}
		se := math.Sqrt(ss/(n-1)) / math.Sqrt(n)
		half := c.q((1+c.level)/2) * se
		if math.Abs(iv.Mean-mean) > 1e-15 || math.Abs(iv.Stderr-se) > 1e-15 ||
			math.Abs(iv.Lo-(mean-half)) > 1e-9 || math.Abs(iv.Hi-(mean+half)) > 1e-9 || iv.N != len(c.a) || iv.Level != c.level {
			t.Errorf("%v - %v at %v: %+v, want mean %v, [%v, %v]", c.a, c.b, c.level, iv, mean, mean-half, mean+half)
		}
	}
}

// TestPairedTMetamorphic: adding the same value to both sides changes
// nothing; swapping them mirrors the interval; scaling both scales it.
func TestPairedTMetamorphic(t *testing.T) {
	a := []float64{0.31, 0.28, 0.35, 0.30, 0.33}
	b := []float64{0.27, 0.26, 0.29, 0.28, 0.27}
	base, err := PairedT(a, b, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if !(base.Lo < base.Mean && base.Mean < base.Hi) {
		t.Fatalf("interval %+v does not hold its mean", base)
	}
	shift := func(xs []float64, c, k float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = k*x + c
		}
		return out
	}
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-12 }
	if s, _ := PairedT(shift(a, 7, 1), shift(b, 7, 1), 0.95); !near(s.Mean, base.Mean) || !near(s.Lo, base.Lo) || !near(s.Hi, base.Hi) {
		t.Errorf("shifted: %+v, want %+v", s, base)
	}
	if s, _ := PairedT(b, a, 0.95); !near(s.Mean, -base.Mean) || !near(s.Lo, -base.Hi) || !near(s.Hi, -base.Lo) {
		t.Errorf("swapped: %+v, want the mirror of %+v", s, base)
	}
	if s, _ := PairedT(shift(a, 0, 3), shift(b, 0, 3), 0.95); !near(s.Lo, 3*base.Lo) || !near(s.Hi, 3*base.Hi) {
		t.Errorf("scaled by 3: %+v, want 3 x %+v", s, base)
	}
	if w, _ := PairedT(a, b, 0.99); !(w.Lo < base.Lo && w.Hi > base.Hi) {
		t.Errorf("a 99%% interval %+v is not wider than the 95%% one %+v", w, base)
	}
}

func TestPairedTErrors(t *testing.T) {
	for _, c := range []struct {
		a, b  []float64
		level float64
		want  string
	}{
		{[]float64{1, 2}, []float64{1}, 0.95, "2 values against 1"},
		{[]float64{1}, []float64{1}, 0.95, "1 pair(s), want at least 2"},
		{[]float64{1, 2}, []float64{1, 2}, 1, "level 1, want 0 < level < 1"},
		{[]float64{1, 2}, []float64{1, 2}, 0, "level 0"},
		{[]float64{1, math.NaN()}, []float64{1, 2}, 0.95, "pair 1 is (NaN, 2)"},
		{[]float64{1, 2}, []float64{math.Inf(1), 2}, 0.95, "pair 0 is (1, +Inf)"},
	} {
		if _, err := PairedT(c.a, c.b, c.level); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("PairedT(%v, %v, %v): %v, want %q", c.a, c.b, c.level, err, c.want)
		}
	}
}
