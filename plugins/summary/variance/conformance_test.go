package variance

import (
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 1))
	draws := make([][][]float64, 3)
	for i := range draws {
		for j := 0; j < 4; j++ {
			row := make([]float64, 30)
			for k := range row {
				row[k] = r.NormFloat64()
			}
			draws[i] = append(draws[i], row)
		}
	}
	sdktest.Summary(t, New(), sdktest.SummaryCase{Draws: draws})
}
