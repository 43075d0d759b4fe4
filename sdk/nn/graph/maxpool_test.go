package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/sdk/nn/ops"
)

// TestFirstMaxIsTheScan: on rows with ties of +0 and -0 (which compare
// equal but differ in bits) and NaNs, the whole row's maximum taken as
// the prefix before any step and the suffix from it (firstMax of
// prefixSuffixMax's parts) has the bits of ops.GlobalMaxPool's scan.
func TestFirstMaxIsTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	negZero := float32(math.Copysign(0, -1))
	for trial := range 200 {
		T := 1 + rng.IntN(9)
		x := make([]float32, T)
		for i := range x {
			switch rng.IntN(4) {
			case 0:
				x[i] = 0
			case 1:
				x[i] = negZero
			case 2:
				x[i] = float32(rng.NormFloat64())
			default:
				if trial%5 == 0 {
					x[i] = float32(math.NaN())
				} else {
					x[i] = -1
				}
			}
		}
		want := make([]float32, 1)
		ops.GlobalMaxPool(want, make([]int32, 1), x, T)
		pre, suf := make([]float32, T), make([]float32, T)
		prefixSuffixMax(pre, suf, x, T)
		same := func(what string, got float32) {
			if math.Float32bits(got) != math.Float32bits(want[0]) && !(got != got && want[0] != want[0]) {
				t.Fatalf("row %v: %s %v (bits %x), the scan %v (bits %x)", x, what, got, math.Float32bits(got), want[0], math.Float32bits(want[0]))
			}
		}
		same("prefix", pre[T-1])
		same("suffix", suf[0])
		for s := 1; s < T; s++ {
			same("prefix and suffix", firstMax(pre[s-1], suf[s]))
		}
	}
}
