package stat

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
)

// Rank returns the rank
//
//	k = ceil(p S)
//
// for 0 <= p <= 1 and S >= 0, computed exactly in rational arithmetic. p
// is read as the shortest decimal that rounds to it
// (strconv.FormatFloat(p, 'g', -1, 64)), the number a recipe wrote: 0.07
// is 7/100, not the binary value 0.070000000000000006661..., so
// Rank(0.07, 100) is 7 where math.Ceil(0.07*100) is 8. For 0 < p < 1 and
// S >= 1, 1 <= k <= S. Rank panics if p is not in [0, 1].
func Rank(p float64, s int) int {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(p, 'g', -1, 64))
	if !ok || r.Sign() < 0 || r.Cmp(big.NewRat(1, 1)) > 0 {
		panic(fmt.Sprintf("stat.Rank: level %v is not in [0, 1]", p))
	}
	r.Mul(r, new(big.Rat).SetInt64(int64(s)))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int)) // r >= 0: q = floor(r)
	k := int(q.Int64())
	if m.Sign() != 0 {
		k++
	}
	return k
}

// Sorted calls f(n, col) for each coordinate n < N, where col holds
// r[0][n], ..., r[S-1][n] sorted in ascending order, or is nil when one of
// them is NaN. col is reused from call to call (one allocation a call of
// Sorted). Every order statistic here (quantiles, bands) reads the maps
// through it.
func Sorted(r [][]float64, N int, f func(n int, col []float64)) {
	col := make([]float64, len(r))
	for n := range N {
		for s, row := range r {
			col[s] = row[n]
		}
		slices.Sort(col) // NaNs first
		if math.IsNaN(col[0]) {
			f(n, nil)
			continue
		}
		f(n, col)
	}
}

// Quantile writes the order statistic
//
//	dst[n] = r_(k)[n],
//
// the kth smallest (1-based, 1 <= k <= S) of r[0][n], ..., r[S-1][n], and
// returns dst. The alpha-quantile is k = Rank(alpha, S). A coordinate
// with a NaN value gives NaN.
func Quantile(dst []float64, r [][]float64, k int) []float64 {
	Sorted(r, len(dst), func(n int, col []float64) {
		dst[n] = math.NaN()
		if col != nil {
			dst[n] = col[k-1]
		}
	})
	return dst
}

// Band writes the order-statistic band
//
//	lower[n] = r_(k)[n],  upper[n] = r_(l)[n],
//
// the kth and lth smallest (1-based, 1 <= k < l <= S) of r[0][n], ...,
// r[S-1][n], and returns lower and upper (of equal length). If a new map
// r[S] is exchangeable with the S maps, P(lower[n] <= r[S][n] <=
// upper[n]) >= (l-k)/(S+1), with equality when ties have probability
// zero. A coordinate with a NaN value gives NaN.
func Band(lower, upper []float64, r [][]float64, k, l int) ([]float64, []float64) {
	Sorted(r, len(lower), func(n int, col []float64) {
		lower[n], upper[n] = math.NaN(), math.NaN()
		if col != nil {
			lower[n], upper[n] = col[k-1], col[l-1]
		}
	})
	return lower, upper
}

// InterpolatedBand writes the interpolated band at level beta
//
//	lower[n] = LinearQuantile(col, (1-beta)/2),
//	upper[n] = LinearQuantile(col, (1+beta)/2),
//
// col the sorted r[0][n], ..., r[S-1][n], both levels computed in float64
// as written (so the band is numpy.quantile(r, [(1-beta)/2, (1+beta)/2],
// axis=0) bit for bit), and returns lower and upper (of equal length). A
// coordinate with a NaN value gives NaN.
func InterpolatedBand(lower, upper []float64, r [][]float64, beta float64) ([]float64, []float64) {
	lo, hi := (1-beta)/2, (1+beta)/2
	Sorted(r, len(lower), func(n int, col []float64) {
		lower[n], upper[n] = math.NaN(), math.NaN()
		if col != nil {
			lower[n], upper[n] = LinearQuantile(col, lo), LinearQuantile(col, hi)
		}
	})
	return lower, upper
}

// LinearQuantile returns the linearly interpolated p-quantile
// (0 <= p <= 1) of the sorted, non-empty sample x, Hyndman and Fan's
// type 7:
//
//	h = (S-1) p,  j = floor(h),  g = h - j,  a = x[j],  b = x[j+1] (b = a if j = S-1),
//	q = a + (b-a) g      if g < 0.5,
//	q = b - (b-a) (1-g)  if g >= 0.5,
//
// with 0-based indices and every step in float64, the evaluation of
// numpy.quantile(x, p, method="linear") (numpy 1.24), to the bit.
func LinearQuantile(x []float64, p float64) float64 {
	h := float64(len(x)-1) * p
	j := int(math.Floor(h))
	g := h - float64(j)
	a := x[j]
	b := a
	if j+1 < len(x) {
		b = x[j+1]
	}
	d := b - a
	if g >= 0.5 {
		return b - d*(1-g)
	}
	return a + d*g
}
