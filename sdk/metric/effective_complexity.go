package metric

import (
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk"
)

// EffectiveComplexity is Quantus's EffectiveComplexity (Nguyen and
// Martínez 2020): the number of samples with |â_j| > eps (lower: simpler).
func EffectiveComplexity() Entry {
	return mapEntry(Info{
		ID: "metric.effective_complexity", Quantus: "EffectiveComplexity", Category: Complexity, Higher: false,
		Summary: "the number of samples whose |a| exceeds eps",
	}, true, true, []Param{{Name: "eps", Default: 1e-5, Doc: "the threshold on |a| (after normalise)"}},
		func(cfg sdk.Config) (recordFunc, error) {
			eps, err := cfg.Float("eps", 1e-5)
			if err != nil {
				return nil, err
			}
			if !(eps >= 0) || math.IsInf(eps, 0) {
				return nil, fmt.Errorf("eps = %v: want a finite threshold >= 0", eps)
			}
			return func(a []float64, _ []bool) Score {
				k := 0
				for _, x := range a {
					if math.Abs(x) > eps {
						k++
					}
				}
				return Score{Value: float64(k)}
			}, nil
		})
}
