package metric

import (
	"cmp"
	"slices"
)

// AUC is Quantus's AUC (Fawcett 2006): the area under the ROC curve of
// the map as a detector of the mask, the probability that a sample in the
// mask has a larger value than one outside it, ties counting one half
// (the Mann-Whitney statistic of average ranks):
//
//	AUC = (R_S - |S|(|S|+1)/2) / (|S| (n - |S|))
//
// R_S the sum of the mask's samples' ranks. Undefined when the mask is
// empty or covers the record.
func AUC() Entry {
	return mapEntry(Info{
		ID: "metric.auc", Quantus: "AUC", Category: Localisation,
		Needs: Needs{Mask: true}, Higher: true,
		Summary: "area under the ROC curve of the map as a detector of the mask",
	}, true, false, nil, fixed(auc))
}

func auc(a []float64, mask []bool) Score {
	n := len(a)
	idx := make([]int, n)
	for j := range idx {
		idx[j] = j
	}
	slices.SortFunc(idx, func(i, j int) int { return cmp.Compare(a[i], a[j]) })
	var rs float64
	in := 0
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && a[idx[hi]] == a[idx[lo]] {
			hi++
		}
		r := float64(lo+1+hi) / 2 // the average rank of positions lo..hi-1, from 1
		for _, j := range idx[lo:hi] {
			if mask[j] {
				rs += r
				in++
			}
		}
		lo = hi
	}
	if in == 0 || in == n {
		return undefined("the mask is empty or covers the whole record: no ROC curve", nil)
	}
	s, o := float64(in), float64(n-in)
	return Score{Value: (rs - s*(s+1)/2) / (s * o)}
}
