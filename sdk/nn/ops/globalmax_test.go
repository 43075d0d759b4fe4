package ops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGlobalMaxPoolMatchesScan: GlobalMaxPool (the vector argmax where a
// row holds no NaN) gives the scalar scan's values and indices bit for
// bit on rows with ties, signed zeros, infinities of both signs and NaNs
// at any step (the first NaN wins), long and short rows.
func TestGlobalMaxPoolMatchesScan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 35))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, 1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for trial := 0; trial < 300; trial++ {
		T := 1 + r.IntN(70)
		rows := 1 + r.IntN(5)
		x := randn32(r, rows*T)
		for i := range x {
			if r.IntN(8) == 0 {
				x[i] = special[r.IntN(len(special)-trial%2)] // NaN in half the trials
			}
		}
		y, idx := make([]float32, rows), make([]int32, rows)
		wy, widx := make([]float32, rows), make([]int32, rows)
		GlobalMaxPool(y, idx, x, T)
		globalMaxForward(wy, widx, x, T)
		for k := range y {
			if math.Float32bits(y[k]) != math.Float32bits(wy[k]) && !(y[k] != y[k] && wy[k] != wy[k]) || idx[k] != widx[k] {
				t.Fatalf("trial %d T=%d row %d: (%g, %d), the scan (%g, %d); row %v", trial, T, k, y[k], idx[k], wy[k], widx[k], x[k*T:(k+1)*T])
			}
		}
	}
}
