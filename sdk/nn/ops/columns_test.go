package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLinearForwardColumnsBits: on random sizes (inputs not a multiple of
// 4, column counts across the kernel's blocks), ForwardColumns gives
// Forward's bits for each column, with a bias and without.
func TestLinearForwardColumnsBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for trial := range 40 {
		l := Linear{In: 1 + rng.IntN(23), Out: 1 + rng.IntN(9)}
		n := 1 + rng.IntN(150)
		x, w := vec(l.In*n), vec(l.Out*l.In)
		var bias []float32
		if trial%2 == 0 {
			bias = vec(l.Out)
		}
		cols := make([]float32, l.Out*n)
		l.ForwardColumns(cols, x, w, bias, n)
		xr := make([]float32, n*l.In) // the columns as rows
		for j := 0; j < n; j++ {
			for i := 0; i < l.In; i++ {
				xr[j*l.In+i] = x[i*n+j]
			}
		}
		rows := make([]float32, n*l.Out)
		l.Forward(rows, xr, w, bias)
		for j := 0; j < n; j++ {
			for o := 0; o < l.Out; o++ {
				if a, b := cols[o*n+j], rows[j*l.Out+o]; math.Float32bits(a) != math.Float32bits(b) {
					t.Fatalf("%+v n %d: column %d output %d: %v, Forward %v", l, n, j, o, a, b)
				}
			}
		}
	}
}

// TestLinearForwardColumnsFMA: on random sizes (outputs not a multiple of
// the kernel's 4 rows, column counts below and across its 16-step
// blocks), ForwardColumnsFMA is within float32 rounding of the exact
// (float64) sum: |y - exact| <= (In+1) eps (|b| + sum |w x|), with a bias
// and without, and leaves dst past Out x n alone.
func TestLinearForwardColumnsFMA(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	const eps = 1.0 / (1 << 23)
	for trial := range 60 {
		l := Linear{In: 1 + rng.IntN(70), Out: 1 + rng.IntN(19)}
		n := 1 + rng.IntN(300)
		x, w := vec(l.In*n), vec(l.Out*l.In)
		var bias []float32
		if trial%2 == 0 {
			bias = vec(l.Out)
		}
		cols := vec(l.Out*n + 5) // stale values: every output must be written
		tail := append([]float32(nil), cols[l.Out*n:]...)
		l.ForwardColumnsFMA(cols[:l.Out*n], x, w, bias, n)
		for k, v := range cols[l.Out*n:] {
			if v != tail[k] {
				t.Fatalf("%+v n %d: dst[%d] past the outputs written", l, n, l.Out*n+k)
			}
		}
		for j := 0; j < n; j++ {
			for o := 0; o < l.Out; o++ {
				var s, mag float64
				if bias != nil {
					s, mag = float64(bias[o]), math.Abs(float64(bias[o]))
				}
				for i := 0; i < l.In; i++ {
					p := float64(w[o*l.In+i]) * float64(x[i*n+j])
					s += p
					mag += math.Abs(p)
				}
				got := float64(cols[o*n+j])
				if d := math.Abs(got - s); d > float64(l.In+1)*eps*mag {
					t.Fatalf("%+v n %d: column %d output %d: %v, exact %v (off by %g, bound %g)", l, n, j, o, got, s, d, float64(l.In+1)*eps*mag)
				}
			}
		}
	}
}
