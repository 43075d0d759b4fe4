package mean

import (
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/sdk/sdktest"
)

// randomDraws returns n inputs of s draws of m values.
func randomDraws(n, s, m int, seed uint64) [][][]float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][][]float64, n)
	for i := range out {
		for j := 0; j < s; j++ {
			row := make([]float64, m)
			for k := range row {
				row[k] = r.NormFloat64()
			}
			out[i] = append(out[i], row)
		}
	}
	return out
}

func TestConformance(t *testing.T) {
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: randomDraws(3, 5, 40, 1)})
}
