package metric

// RelevanceRankAccuracy is Quantus's RelevanceRankAccuracy (Arras et al.
// 2022): with K = |S| samples in the mask, the share of the K most
// relevant samples (ties in index order) that lie in S (higher: better
// localised). Undefined for an empty mask.
func RelevanceRankAccuracy() Entry {
	return mapEntry(Info{
		ID: "metric.relevance_rank_accuracy", Quantus: "RelevanceRankAccuracy", Category: Localisation,
		Needs: Needs{Mask: true}, Higher: true,
		Summary: "the share of the |S| most relevant samples inside the mask S",
	}, true, false, nil, fixed(func(a []float64, mask []bool) Score {
		order := make([]int, len(a))
		orderDesc(order, a)
		return rankAccuracy(order, mask)
	}))
}

// rankAccuracy is RelevanceRankAccuracy of a map whose MoRF order is order.
func rankAccuracy(order []int, mask []bool) Score {
	K := 0
	for _, m := range mask {
		if m {
			K++
		}
	}
	if K == 0 {
		return undefined("the mask is empty", nil)
	}
	hit := 0
	for _, j := range order[:K] {
		if mask[j] {
			hit++
		}
	}
	return Score{Value: float64(hit) / float64(K)}
}
