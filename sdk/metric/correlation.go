package metric

import (
	"cmp"
	"math"
	"slices"
)

// pearson is the Pearson correlation of a and b, ok false when either is
// constant (the correlation does not exist):
//
//	r = sum (a-ā)(b-b̄) / sqrt(sum (a-ā)^2 sum (b-b̄)^2)
func pearson(a, b []float64) (r float64, ok bool) {
	n := float64(len(a))
	var ma, mb float64
	for j := range a {
		ma += a[j]
		mb += b[j]
	}
	ma, mb = ma/n, mb/n
	var sab, saa, sbb float64
	for j := range a {
		da, db := a[j]-ma, b[j]-mb
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	if saa == 0 || sbb == 0 {
		return 0, false
	}
	return max(-1, min(1, sab/math.Sqrt(saa*sbb))), true
}

// ranks writes the average ranks of a, from 1, to dst (ties share the
// mean of their positions, as scipy.stats.rankdata).
func ranks(dst, a []float64) {
	idx := make([]int, len(a))
	for j := range idx {
		idx[j] = j
	}
	slices.SortFunc(idx, func(i, j int) int { return cmp.Compare(a[i], a[j]) })
	for lo := 0; lo < len(a); {
		hi := lo + 1
		for hi < len(a) && a[idx[hi]] == a[idx[lo]] {
			hi++
		}
		r := float64(lo+1+hi) / 2
		for _, j := range idx[lo:hi] {
			dst[j] = r
		}
		lo = hi
	}
}

// spearman is the Spearman correlation of a and b: Pearson's of their
// average ranks (scipy.stats.spearmanr).
func spearman(a, b []float64) (float64, bool) {
	ra, rb := make([]float64, len(a)), make([]float64, len(b))
	ranks(ra, a)
	ranks(rb, b)
	return pearson(ra, rb)
}

// correlated is a Score from a correlation, undefined when it does not
// exist.
func correlated(r float64, ok bool, what string) Score {
	if !ok {
		return undefined(what+" is constant: no correlation", nil)
	}
	return Score{Value: r}
}
