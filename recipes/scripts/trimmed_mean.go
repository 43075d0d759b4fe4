//go:build ignore

// Package trimmed is the coordinatewise trimmed mean of the explanation
// draws, an example uaxai summary script. For each coordinate n it sorts
// the S values R_1[n]..R_S[n], drops k = floor(trim*S) from each end and
// averages the S-2k that remain (as scipy.stats.trim_mean does). With
// trim = 0 it is the mean summary.
//
// Recipe:
//
//	[[summary]]
//	script = "scripts/trimmed_mean.go"
//	trim = 0.1          # fraction cut from each end, in [0, 0.5); default 0.1
//
// The build constraint above keeps the go tool from compiling this file;
// uaxai runs it with yaegi (see package host/script for the contract).
package trimmed

import (
	"fmt"
	"math"
	"sort"

	"github.com/uaxai/uaxai/sdk"
)

const (
	ID      = "summary.trimmed_mean"
	Version = "0.1.0"
	Output  = "map"
)

// Check accepts only the key trim, a fraction in [0, 0.5).
func Check(cfg map[string]interface{}) error {
	c := sdk.Config(cfg)
	if err := c.Only("trim"); err != nil {
		return err
	}
	_, err := trimOf(c)
	return err
}

func trimOf(c sdk.Config) (float64, error) {
	t, err := c.Float("trim", 0.1)
	if err != nil {
		return 0, err
	}
	if !(t >= 0 && t < 0.5) {
		return 0, fmt.Errorf("key %q: %v is outside [0, 0.5)", "trim", t)
	}
	return t, nil
}

// Summarise returns the trimmed mean map of every input of the batch.
func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {
	t, err := trimOf(sdk.Config(cfg))
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(draws))
	for i := 0; i < len(draws); i++ {
		d := draws[i]
		S := len(d)
		N := len(d[0])
		k := int(math.Floor(t * float64(S)))
		keep := float64(S - 2*k)
		col := make([]float64, S)
		m := make([]float64, N)
		for n := 0; n < N; n++ {
			for s := 0; s < S; s++ {
				col[s] = d[s][n]
			}
			sort.Float64s(col) // runs compiled
			sum := 0.0
			for s := k; s < S-k; s++ {
				sum += col[s]
			}
			m[n] = sum / keep
		}
		out[i] = m
	}
	return out, nil
}
