// Package variance is the UA-RAO summary "summary.variance": the
// coordinatewise sample variance of the explanation draws,
// s²[n] = (1/(S-1)) sum_s (R^(s)[n] - Rbar[n])², defined for S >= 2.
package variance

import (
	"context"

	"github.com/uaxai/uaxai/sdk"
)

// ID is the plugin's ID.
const ID = "summary.variance"

// Summary is the variance map.
type Summary struct{}

// New returns the variance summary.
func New() *Summary { return &Summary{} }

// Info describes the plugin.
func (*Summary) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: "1.0.0", Summary: "coordinatewise sample variance of the draws (S >= 2)", Output: sdk.OutputMap, MinDraws: 2}
}

// Check accepts an empty table.
func (*Summary) Check(cfg sdk.Config) error { return sdk.CheckNoKeys(ID, cfg) }

// Summarise returns the variance map of every input.
func (*Summary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	return sdk.SummariseMaps(ID, draws, 2, Variance)
}

// Variance writes the sample variance dst[n] = (1/(S-1)) sum_s (r[s][n] -
// mean[n])², computed with Welford's update for accuracy, and returns dst.
func Variance(dst []float64, r [][]float64) []float64 {
	MeanVariance(make([]float64, len(dst)), dst, r)
	return dst
}

// MeanVariance writes the coordinatewise mean, mean[n] = (1/S) sum_s
// r[s][n], and the sample variance, variance[n] = (1/(S-1)) sum_s
// (r[s][n] - mean[n])², in one pass of Welford's update. It needs S >= 2.
func MeanVariance(mean, variance []float64, r [][]float64) {
	clear(mean)
	clear(variance)
	for s, row := range r {
		k := float64(s + 1)
		for n, v := range row[:len(variance)] {
			d := v - mean[n]
			mean[n] += d / k
			variance[n] += d * (v - mean[n])
		}
	}
	inv := 1 / float64(len(r)-1)
	for n := range variance {
		variance[n] *= inv
	}
}
