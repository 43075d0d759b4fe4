package metric

import "math"

// ComplexityEntropy is Quantus's Complexity (Bhatt et al. 2020), the
// entropy of the map's share of relevance: with q = |â| / sum |â|,
//
//	H = -sum_j q_j ln(q_j + 1e-12)
//
// from 0 (one relevant sample) to ln n (a flat map); lower: simpler.
// Undefined for a map of zeros.
func ComplexityEntropy() Entry {
	return mapEntry(Info{
		ID: "metric.complexity", Quantus: "Complexity", Category: Complexity, Higher: false,
		Summary: "entropy of |a| / sum |a|: 0 for one relevant sample, ln n for a flat map",
	}, true, true, nil, fixed(entropy))
}

func entropy(a []float64, _ []bool) Score {
	var sum float64
	for _, x := range a {
		sum += math.Abs(x)
	}
	if sum == 0 {
		return undefined("the map is zero: no share of relevance", nil)
	}
	var h float64
	for _, x := range a {
		q := math.Abs(x) / sum
		h -= q * math.Log(q+1e-12)
	}
	return Score{Value: h}
}
