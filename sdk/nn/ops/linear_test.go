package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLinearKernelsMatchReference: ForwardDot and Backward (sdk/nn's dot,
// Ger and GemvT kernels, sample by sample) against the generic loops in
// float64, within the bound of a float32 sum of n terms (n u sum
// |terms|, the reference run on absolute values): Backward overwrites dx
// and adds to dw and db; ForwardDot with and without a bias.
func TestLinearKernelsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const u = 1.0 / (1 << 24)
	for trial := 0; trial < 200; trial++ {
		l := Linear{In: 1 + r.IntN(70), Out: 1 + r.IntN(20)}
		B := 1 + r.IntN(9)
		x, w, bias := randn32(r, B*l.In), randn32(r, l.Out*l.In), randn32(r, l.Out)
		if trial%3 == 0 {
			bias = nil
		}
		check := func(what string, got []float32, want, bound []float64, base []float32, n int) {
			t.Helper()
			for i, v := range got {
				g := float64(v)
				tol := float64(n)*u*bound[i] + 1e-30
				if base != nil {
					g -= float64(base[i])
					tol += 2 * u * math.Abs(float64(base[i]))
				}
				if !(math.Abs(g-want[i]) <= tol) {
					t.Fatalf("%+v B %d: %s[%d] = %g, reference %g (bound %g)", l, B, what, i, g, want[i], tol)
				}
			}
		}
		y := make([]float32, B*l.Out)
		l.ForwardDot(y, x, w, bias)
		want, bound := make([]float64, len(y)), make([]float64, len(y))
		linearForward(l, want, to64(x), to64(w), to64(bias))
		linearForward(l, bound, abs64(to64(x)), abs64(to64(w)), abs64(to64(bias)))
		check("y", y, want, bound, nil, l.In+1)

		dy := randn32(r, len(y))
		dx := randn32(r, len(x)) // overwritten
		dw0, db0 := randn32(r, len(w)), randn32(r, l.Out)
		dw, db := append([]float32(nil), dw0...), append([]float32(nil), db0...)
		l.Backward(dx, dw, db, dy, x, w)
		wdx, wdw, wdb := make([]float64, len(x)), make([]float64, len(w)), make([]float64, l.Out)
		bdx, bdw, bdb := make([]float64, len(x)), make([]float64, len(w)), make([]float64, l.Out)
		linearBackward(l, wdx, wdw, wdb, to64(dy), to64(x), to64(w))
		linearBackward(l, bdx, bdw, bdb, abs64(to64(dy)), abs64(to64(x)), abs64(to64(w)))
		check("dx", dx, wdx, bdx, nil, l.Out+1)
		check("dw", dw, wdw, bdw, dw0, B+1)
		check("db", db, wdb, bdb, db0, B+1)
	}
}
