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
