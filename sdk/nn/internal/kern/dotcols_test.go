package kern

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotColsBits: for lengths 0..21 (the four partial sums and their
// tail), column counts across the 16-column vector blocks and strides
// wider than the columns, DotCols gives the bits of the Go loop of four
// partial sums over each column, and writes no y past its length.
func TestDotColsBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		in, n := rng.IntN(22), 1+rng.IntN(70)
		stride := n + rng.IntN(3)
		x := make([]float32, max(in, 1)*stride)
		w := make([]float32, in)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		y := make([]float32, n+1)
		y[n] = 7
		DotCols(y[:n], x, stride, w)
		for j := 0; j < n; j++ {
			var s [4]float32
			for i := range w {
				k := i % 4
				if i >= in&^3 {
					k = 0
				}
				s[k] += float32(w[i] * x[i*stride+j])
			}
			want := (s[0] + s[1]) + (s[2] + s[3])
			if math.Float32bits(y[j]) != math.Float32bits(want) {
				t.Fatalf("trial %d (in %d, n %d, stride %d): column %d: %v, want %v", trial, in, n, stride, j, y[j], want)
			}
		}
		if y[n] != 7 {
			t.Fatalf("trial %d: wrote past y", trial)
		}
	}
}
