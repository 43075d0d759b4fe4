package fdiff

import (
	"math"
	"testing"
)

// TestRichardson: the difference of a quartic at a point equals its
// derivative there within the O(h^4) error, and the value is restored.
func TestRichardson(t *testing.T) {
	v := float32(0.75)
	f := func() float64 { x := float64(v); return x*x*x*x - 3*x }
	got := Richardson(&v, f, 0.05)
	want := 4*0.75*0.75*0.75 - 3
	if math.Abs(got-want) > 1e-4 {
		t.Errorf("d/dx (x^4 - 3x) at 0.75 = %g, want %g", got, want)
	}
	if v != 0.75 {
		t.Errorf("the value is %g after the difference, want 0.75", v)
	}
}

// TestCompare: the gradient of sum a_j v_j^2 is 2 a_j v_j; Compare finds
// it within rounding, and a wrong entry as the worst, at its index;
// skipped values get no difference.
func TestCompare(t *testing.T) {
	vals := []float32{0.5, -1.25, 2}
	a := []float64{1, 3, -2}
	f := func() float64 {
		s := 0.0
		for j, v := range vals {
			s += a[j] * float64(v) * float64(v)
		}
		return s
	}
	got := []float32{1, -7.5, -8}
	d := Compare(got, vals, f, 0.01, nil)
	if math.Abs(d.Top-8) > 1e-6 || d.Worst > 1e-6 {
		t.Errorf("exact gradient: top %g, worst %g", d.Top, d.Worst)
	}
	got[1] = -7
	d = Compare(got, vals, f, 0.01, func(j int) bool { return j == 2 })
	if d.At != 1 || math.Abs(d.Worst-0.5) > 1e-6 || d.Want[2] != 0 || math.Abs(d.Top-7.5) > 1e-6 {
		t.Errorf("a wrong entry: %+v, want the worst 0.5 at 1, top 7.5, none at 2", d)
	}
}
