package metric

import "math"

// AttributionLocalisation is Quantus's AttributionLocalisation (Kohlbrenner
// et al. 2020), unweighted: the share of |â| inside the mask,
//
//	sum_{j in S} |â_j| / (sum_j |â_j| + 1e-9)
//
// (higher: better localised). Undefined for an empty mask.
func AttributionLocalisation() Entry {
	return mapEntry(Info{
		ID: "metric.attribution_localisation", Quantus: "AttributionLocalisation", Category: Localisation,
		Needs: Needs{Mask: true}, Higher: true,
		Summary: "the share of |a| inside the mask",
	}, true, true, nil, fixed(attributionLocalisation))
}

func attributionLocalisation(a []float64, mask []bool) Score {
	var in, all float64
	l := 0
	for j, x := range a {
		all += math.Abs(x)
		if mask[j] {
			in += math.Abs(x)
			l++
		}
	}
	if l == 0 {
		return undefined("the mask is empty", nil)
	}
	return Score{Value: in / (all + 1e-9)}
}
