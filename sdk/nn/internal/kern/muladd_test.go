package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMulAddRoundsTheProduct: for every length up to 70 (the vector
// loops, their tails, the generic loop), MulAdd gives the bits of
// dst[i] + float32(a*x[i]) and leaves dst past its length alone; Axpy's
// fused multiply-add differs from it somewhere (so the test can tell).
func TestMulAddRoundsTheProduct(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fused := false
	for n := 0; n <= 70; n++ {
		x := make([]float32, n+3)
		d := make([]float32, n+3)
		for i := range x {
			x[i], d[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		a := float32(rng.NormFloat64())
		got := append([]float32(nil), d...)
		MulAdd(got[:n], x, a)
		ax := append([]float32(nil), d...)
		Axpy(ax[:n], x, a)
		for i := range got {
			want := d[i]
			if i < n {
				want = d[i] + float32(a*x[i]) // the conversion forbids fusing
			}
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("n %d: element %d: %v, want %v", n, i, got[i], want)
			}
			fused = fused || math.Float32bits(ax[i]) != math.Float32bits(got[i])
		}
	}
	if useAVX2 && !fused {
		t.Error("Axpy never differed from MulAdd: the test cannot tell a fused kernel")
	}
}
