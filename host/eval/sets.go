package eval

// Agreement-set scoring: the agreement sets of the draws, scored with
// precision, recall and F1 against the ground-truth mask over a grid of
// (eta, delta).

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/uaxai/uaxai/sdk/stat"
)

// SetScore scores a coordinate set E (set[n] true for n in E) against the
// ground-truth mask M:
//
//	P  = |E ∩ M| / |E|,  R = |E ∩ M| / |M|,
//	F1 = 2 P R / (P + R) = 2 |E ∩ M| / (|E| + |M|).
//
// Conventions: ok is false, and all three 0, when the mask is empty
// (|M| = 0: recall is undefined; the record is not scored, as in RMA and
// IoU). An empty set with a non-empty mask is scored: precision, undefined
// as 0/0, is taken as 0 (scikit-learn's zero_division=0), recall and F1
// are 0, and ok is true; such a set predicts nothing, and averaging it as
// 0 keeps the mean over the same records for every (eta, delta) cell
// (AgreementGrid reports the number of empty sets apart). F1 is 0 when
// P + R = 0. SetScore panics if the lengths differ.
func SetScore(set, mask []bool) (precision, recall, f1 float64, ok bool) {
	if len(set) != len(mask) {
		panic(fmt.Sprintf("eval: SetScore: len(set) = %d, len(mask) = %d", len(set), len(mask)))
	}
	size, l, hits := 0, 0, 0
	for n, e := range set {
		if e {
			size++
		}
		if mask[n] {
			l++
			if e {
				hits++
			}
		}
	}
	return setScore(size, l, hits)
}

// setScore is SetScore from the counts |E|, |M| and |E ∩ M|.
func setScore(size, l, hits int) (precision, recall, f1 float64, ok bool) {
	if l == 0 {
		return 0, 0, 0, false
	}
	if size > 0 {
		precision = float64(hits) / float64(size)
	}
	recall = float64(hits) / float64(l)
	f1 = 2 * float64(hits) / float64(size+l)
	return precision, recall, f1, true
}

// SetMatch is the score of one agreement set against a mask.
type SetMatch struct {
	Eta, Delta float64
	// Precision, Recall and F1 as SetScore (with its conventions).
	Precision, Recall, F1 float64
	Size                  int // |E|; 0 for an empty set (then Precision is 0 by convention)
	Hits                  int // |E ∩ M|
}

// AgreementGrid scores the agreement sets of the draws r[s][n] (S draws of
// one record, N coordinates) against mask for every pair (etas[i],
// deltas[j]), into dst[i*len(deltas)+j]:
//
//	E[eta, delta] = {n : count[n] >= ceil(eta S)},  count[n] = #{s : r[s][n] > delta},
//
// the rule of the summary.agreement plugin (agreement.Agreement), with
// ceil(eta S) = stat.Rank(eta, S) computed exactly from the decimal
// eta; a NaN draw never exceeds delta. Each set is scored as SetScore.
// Since count[n] >= k iff the kth largest draw v_k[n] exceeds delta
// (k >= 1; k = 0 takes every n), each coordinate's draws are sorted once,
// the deltas once, and for each eta a binary search places every v_k[n]
// among the deltas, so a grid costs
// O(N S log S + len(etas) N log len(deltas)).
//
// dst is nil (allocated) or of length len(etas) len(deltas); it is
// returned. ok is false when the mask is empty: then no set is scored and
// dst holds only the grid's Eta and Delta (scores 0). AgreementGrid panics
// if S = 0, the lengths differ, an eta is outside [0, 1] or a delta is
// NaN.
func AgreementGrid(dst []SetMatch, r [][]float64, mask []bool, etas, deltas []float64) ([]SetMatch, bool) {
	S, N := len(r), len(mask)
	if S == 0 {
		panic("eval: AgreementGrid: no draws")
	}
	for s, row := range r {
		if len(row) != N {
			panic(fmt.Sprintf("eval: AgreementGrid: draw %d has length %d, want len(mask) = %d", s, len(row), N))
		}
	}
	for _, eta := range etas {
		if !(eta >= 0 && eta <= 1) {
			panic(fmt.Sprintf("eval: AgreementGrid: eta = %v, want 0 <= eta <= 1", eta))
		}
	}
	for _, delta := range deltas {
		if math.IsNaN(delta) {
			panic("eval: AgreementGrid: delta is NaN")
		}
	}
	if dst == nil {
		dst = make([]SetMatch, len(etas)*len(deltas))
	}
	if len(dst) != len(etas)*len(deltas) {
		panic(fmt.Sprintf("eval: AgreementGrid: len(dst) = %d, want %d etas x %d deltas", len(dst), len(etas), len(deltas)))
	}
	L := 0
	for _, m := range mask {
		if m {
			L++
		}
	}
	for i, eta := range etas {
		for j, delta := range deltas {
			dst[i*len(deltas)+j] = SetMatch{Eta: eta, Delta: delta}
		}
	}
	if L == 0 {
		return dst, false
	}

	// cols[n*S : (n+1)*S] holds the draws at n, ascending, NaN first.
	cols := make([]float64, N*S)
	for n := range N {
		col := cols[n*S : (n+1)*S]
		for s, row := range r {
			col[s] = row[n]
		}
		if !sortNoNaN(col) {
			slices.Sort(col) // NaN first
		}
	}
	// The deltas in ascending order (order[q] is the index in deltas of
	// the qth smallest), and per eta the histograms of the number of
	// deltas below each coordinate's kth largest draw.
	D := len(deltas)
	order := make([]int, D)
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(deltas[a], deltas[b]) })
	sorted := make([]float64, D)
	for q, j := range order {
		sorted[q] = deltas[j]
	}
	histAll := make([]int, D+1)
	histIn := make([]int, D+1)
	for i, eta := range etas {
		k := stat.Rank(eta, S)
		clear(histAll)
		clear(histIn)
		for n := range N {
			// q deltas are below v: n is in E[eta, delta] for those q
			// (v > delta), and for every delta when k = 0.
			q := D
			if k > 0 {
				q = below(sorted, cols[n*S+S-k])
			}
			histAll[q]++
			if mask[n] {
				histIn[q]++
			}
		}
		// The qth smallest delta's set holds the n with more than q
		// deltas below their v: suffix sums from the top.
		size, hits := 0, 0
		for q := D - 1; q >= 0; q-- {
			size += histAll[q+1]
			hits += histIn[q+1]
			m := &dst[i*D+order[q]]
			m.Size, m.Hits = size, hits
			m.Precision, m.Recall, m.F1, _ = setScore(size, L, hits)
		}
	}
	return dst, true
}

// below returns #{q : sorted[q] < v} for ascending sorted without NaN, 0
// for v NaN: a binary search.
func below(sorted []float64, v float64) int {
	lo, hi := 0, len(sorted) // sorted[:lo] < v, sorted[hi:] not
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if sorted[mid] < v {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}
