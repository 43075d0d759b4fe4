package metric

// RelevanceMassAccuracy is Quantus's RelevanceMassAccuracy (Arras et al.
// 2022): the share of the map's (signed) relevance inside the mask S,
//
//	RMA = sum_{j in S} â_j / sum_j â_j
//
// (higher: better localised). Undefined for an empty mask or a map that
// sums to 0. The paper's RMA (host/eval) takes |a|: set abs = true.
func RelevanceMassAccuracy() Entry {
	return mapEntry(Info{
		ID: "metric.relevance_mass_accuracy", Quantus: "RelevanceMassAccuracy", Category: Localisation,
		Needs: Needs{Mask: true}, Higher: true,
		Summary: "the share of relevance inside the ground-truth mask",
	}, true, false, nil, fixed(rma))
}

func rma(a []float64, mask []bool) Score {
	var in, all float64
	l := 0
	for j, x := range a {
		all += x
		if mask[j] {
			in += x
			l++
		}
	}
	switch {
	case l == 0:
		return undefined("the mask is empty", nil)
	case all == 0:
		return undefined("the map sums to 0", nil)
	}
	return Score{Value: in / all}
}
