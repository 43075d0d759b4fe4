package eval

import (
	"fmt"
	"math"
)

// MeanMapTerm returns the finite-sample term of Corollary cor:meanmap,
//
//	term = C_x sqrt( log(2 N / delta) / (2 S) ),
//
// the half-width by which, with probability at least 1 - delta (Hoeffding
// with a union bound over the N coordinates), the mean of S independent
// explanation draws, with values in an interval of length C_x at every
// coordinate, is within term of the posterior mean map at every
// coordinate. Use C_x = 1 for maps known to lie in [0, 1] (normalised
// relevance), or the empirical range of MeanMapBound. MeanMapTerm panics
// unless C_x >= 0, N >= 1, S >= 1 and 0 < delta < 1.
func MeanMapTerm(cx float64, N, S int, delta float64) float64 {
	if !(cx >= 0) || N < 1 || S < 1 || !(delta > 0 && delta < 1) {
		panic(fmt.Sprintf("eval: MeanMapTerm: C_x = %v, N = %d, S = %d, delta = %v; want C_x >= 0, N, S >= 1, 0 < delta < 1", cx, N, S, delta))
	}
	return cx * math.Sqrt(math.Log(2*float64(N)/delta)/(2*float64(S)))
}

// MeanMapBound returns the finite-sample term of Corollary cor:meanmap for
// the draws r[s][n] (S draws, N coordinates), with the range constant
// estimated from the draws:
//
//	C_x  = max_n ( max_s r[s][n] - min_s r[s][n] ),
//	term = MeanMapTerm(C_x, N, S, delta) = C_x sqrt( log(2 N / delta) / (2 S) ).
//
// The corollary needs a bound C_x on the range of the posterior's maps at
// every coordinate; the empirical range of S draws estimates it from
// below (a plug-in, not a guarantee: it is exact only if the draws reach
// the extremes). For maps known to lie in [0, 1], call MeanMapTerm with
// C_x = 1 instead. A NaN draw gives NaN for both. MeanMapBound panics if
// S = 0, N = 0, the draws differ in length or delta is outside (0, 1).
func MeanMapBound(r [][]float64, delta float64) (cx, term float64) {
	S := len(r)
	if S == 0 || len(r[0]) == 0 {
		panic("eval: MeanMapBound: no draws or empty maps")
	}
	N := len(r[0])
	for s, row := range r {
		if len(row) != N {
			panic(fmt.Sprintf("eval: MeanMapBound: draw %d has length %d, want %d", s, len(row), N))
		}
	}
	for n := range N {
		lo, hi := r[0][n], r[0][n]
		for _, row := range r[1:] {
			lo, hi = math.Min(lo, row[n]), math.Max(hi, row[n])
		}
		cx = math.Max(cx, hi-lo) // math.Max: NaN propagates
	}
	if math.IsNaN(cx) {
		return math.NaN(), math.NaN()
	}
	return cx, MeanMapTerm(cx, N, S, delta)
}
