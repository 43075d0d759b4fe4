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
