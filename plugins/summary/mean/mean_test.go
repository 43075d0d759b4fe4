package mean

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat"
)

func TestMeanMatchesGonum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	draws := make([][][]float64, 3)
	for i := range draws {
		for s := 0; s < 7; s++ {
			row := make([]float64, 10)
			for n := range row {
				row[n] = r.NormFloat64()
			}
			draws[i] = append(draws[i], row)
		}
	}
	res, err := New().Summarise(context.Background(), draws, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range draws {
		for n := 0; n < 10; n++ {
			col := make([]float64, 7)
			for s := range col {
				col[s] = draws[i][s][n]
			}
			if want := stat.Mean(col, nil); math.Abs(res[i].Map[n]-want) > 1e-14 {
				t.Errorf("input %d coordinate %d: %g, want %g", i, n, res[i].Map[n], want)
			}
		}
	}
	if err := New().Check(map[string]any{"x": 1}); err == nil {
		t.Error("unknown key accepted")
	}
}
