package metric

import (
	"math"
	"slices"
)

// Sparseness is Quantus's Sparseness (Chalasani et al. 2020), the Gini
// index of the map: with v = |â| + 1e-7 sorted ascending (k = 1..n),
//
//	G = sum_k (2k - n - 1) v_k / (n sum_k v_k)
//
// 0 for a constant map, towards 1 when all relevance is on one sample
// (higher: sparser).
func Sparseness() Entry {
	return mapEntry(Info{
		ID: "metric.sparseness", Quantus: "Sparseness", Category: Complexity, Higher: true,
		Summary: "Gini index of |a|: 0 for a flat map, towards 1 for one relevant sample",
	}, true, true, nil, fixed(sparseness))
}

func sparseness(a []float64, _ []bool) Score {
	v := make([]float64, len(a))
	for j, x := range a {
		v[j] = math.Abs(x) + 1e-7
	}
	slices.Sort(v)
	n := float64(len(v))
	var num, sum float64
	for k, x := range v {
		num += (2*float64(k+1) - n - 1) * x
		sum += x
	}
	return Score{Value: num / (n * sum)}
}
