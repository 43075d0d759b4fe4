//go:build ignore

// Package scaled is the mean of the explanation draws after each draw's
// map is put on a common scale, a diagnostic of the headline finding: with
// the zero occlusion baseline, every window drives p(target) to almost 0,
// so each member's map is nearly constant at its own p(target), and the
// plain mean is ordered by whichever member keeps the most probability.
// Here each draw's map is min-max scaled first,
//
//	u_s[n] = (|R_s[n]| - min_m |R_s[m]|) / (max_m |R_s[m]| - min_m |R_s[m]|)   (0 for a constant map),
//	map[n] = (1/S) sum_s u_s[n],
//
// so that every member contributes the shape of its map, not its level.
//
// Recipe:
//
//	[[summary]]
//	script = "scripts/scaled_mean.go"
//
// The build constraint above keeps the go tool from compiling this file;
// uaxai runs it with yaegi (see package host/script for the contract).
package scaled

import (
	"math"

	"github.com/uaxai/uaxai/sdk"
)

const (
	ID      = "summary.scaled_mean"
	Version = "0.1.0"
	Output  = "map"
)

// Check accepts no key.
func Check(cfg map[string]interface{}) error {
	return sdk.Config(cfg).Only()
}

// Summarise returns the mean of the min-max scaled |maps| of every input.
func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {
	out := make([][]float64, len(draws))
	for i := 0; i < len(draws); i++ {
		d := draws[i]
		S := len(d)
		N := len(d[0])
		m := make([]float64, N)
		for s := 0; s < S; s++ {
			lo, hi := math.Inf(1), math.Inf(-1)
			for n := 0; n < N; n++ {
				v := math.Abs(d[s][n])
				lo = math.Min(lo, v)
				hi = math.Max(hi, v)
			}
			if !(hi > lo) {
				continue // a constant map has no shape to add
			}
			w := 1 / (hi - lo) / float64(S)
			for n := 0; n < N; n++ {
				m[n] += (math.Abs(d[s][n]) - lo) * w
			}
		}
		out[i] = m
	}
	return out, nil
}
