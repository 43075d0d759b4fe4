// Package quantile is the UA-RAO summary "summary.quantile": the
// coordinatewise alpha-quantile of the explanation draws, the order
// statistic
//
//	q_alpha[n] = r_(k)[n],  k = ceil(alpha S),
//
// the kth smallest (1-based) of R^(1)[n], ..., R^(S)[n]. The rank k is
// computed exactly (see Rank), so that alpha = 0.07 with S = 100 gives
// k = 7.
//
// Configuration: "alpha", the level, 0 < alpha < 1; default 0.5 (the lower
// median r_(ceil(S/2))).
package quantile

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"

	"github.com/uaxai/uaxai/sdk"
)

// ID is the plugin's ID.
const ID = "summary.quantile"

// DefaultAlpha is the level used when the recipe gives no "alpha".
const DefaultAlpha = 0.5

// Summary is the alpha-quantile map.
type Summary struct{}

// New returns the quantile summary.
func New() *Summary { return &Summary{} }

// Info describes the plugin.
func (*Summary) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: "1.0.0", Summary: "coordinatewise alpha-quantile r_(ceil(alpha S)) of the draws (alpha, default 0.5)", Output: sdk.OutputMap, MinDraws: 1}
}

// Check accepts the key "alpha" in (0, 1).
func (*Summary) Check(cfg sdk.Config) error {
	_, err := level(cfg)
	return err
}

// level reads and validates alpha.
func level(cfg sdk.Config) (float64, error) {
	if err := cfg.Only("alpha"); err != nil {
		return 0, fmt.Errorf("%s: %w", ID, err)
	}
	a, err := cfg.Float("alpha", DefaultAlpha)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", ID, err)
	}
	if !(a > 0 && a < 1) {
		return 0, fmt.Errorf("%s: key %q: %v is out of range (accepted: 0 < alpha < 1)", ID, "alpha", a)
	}
	return a, nil
}

// Summarise returns the alpha-quantile map of every input.
func (*Summary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	a, err := level(cfg)
	if err != nil {
		return nil, err
	}
	return sdk.SummariseMaps(ID, draws, 1, func(dst []float64, r [][]float64) []float64 {
		return Quantile(dst, r, Rank(a, len(r)))
	})
}

// Rank returns k = ceil(p S) for 0 <= p <= 1 and S >= 0, computed exactly in
// rational arithmetic. p is read as the shortest decimal that rounds to it
// (strconv.FormatFloat(p, 'g', -1, 64)), the number the recipe wrote: 0.07
// is 7/100, not the binary value 0.070000000000000006661..., so
// Rank(0.07, 100) is 7 where math.Ceil(0.07*100) is 8. For 0 < p < 1 and
// S >= 1, 1 <= k <= S.
func Rank(p float64, s int) int {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(p, 'g', -1, 64))
	if !ok || r.Sign() < 0 || r.Cmp(big.NewRat(1, 1)) > 0 {
		panic(fmt.Sprintf("quantile.Rank: level %v is not in [0, 1]", p))
	}
	r.Mul(r, new(big.Rat).SetInt64(int64(s)))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int)) // r >= 0: q = floor(r)
	k := int(q.Int64())
	if m.Sign() != 0 {
		k++
	}
	return k
}

// Quantile writes the order statistic dst[n] = r_(k)[n], the kth smallest
// (1-based, 1 <= k <= S) of r[0][n], ..., r[S-1][n], and returns dst. A
// coordinate with a NaN draw gives NaN.
func Quantile(dst []float64, r [][]float64, k int) []float64 {
	Sorted(r, len(dst), func(n int, col []float64) {
		dst[n] = math.NaN()
		if col != nil {
			dst[n] = col[k-1]
		}
	})
	return dst
}

// Sorted calls f(n, col) for each coordinate n < N, where col holds
// r[0][n], ..., r[S-1][n] sorted in ascending order, or is nil when one of
// them is NaN. col is reused from call to call. Every order-statistic
// summary (quantiles, bands) reads its draws through it.
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
