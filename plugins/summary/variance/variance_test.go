package variance

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat"
)

func TestVarianceMatchesGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	draws := make([][][]float64, 2)
	for i := range draws {
		for s := 0; s < 5; s++ {
			row := make([]float64, 12)
			for n := range row {
				row[n] = 100 + r.NormFloat64() // offset: a naive sum of squares loses digits
			}
			draws[i] = append(draws[i], row)
		}
	}
	res, err := New().Summarise(context.Background(), draws, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range draws {
		for n := 0; n < 12; n++ {
			col := make([]float64, 5)
			for s := range col {
				col[s] = draws[i][s][n]
			}
			if want := stat.Variance(col, nil); math.Abs(res[i].Map[n]-want) > 1e-12*math.Max(1, want) {
				t.Errorf("input %d coordinate %d: %g, want %g", i, n, res[i].Map[n], want)
			}
		}
	}
	if _, err := New().Summarise(context.Background(), [][][]float64{{{1, 2}}}, nil); err == nil {
		t.Error("one draw accepted")
	}
}
