package agreement

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/stat"
)

// ID is the plugin's ID.
const ID = "summary.agreement"

// The defaults used when the recipe omits a key.
const (
	DefaultEta   = 0.5
	DefaultDelta = 0.0
)

// Summary is the agreement set.
type Summary struct{}

// New returns the agreement-set summary.
func New() *Summary { return &Summary{} }

// Info describes the plugin.
func (*Summary) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: "1.0.0", Summary: "agreement set: coordinates above delta (default 0) in at least a fraction eta (default 0.5) of the draws", Output: sdk.OutputSet, MinDraws: 1}
}

// Check accepts the keys "eta" in [0, 1] and "delta" (a finite real).
func (*Summary) Check(cfg sdk.Config) error {
	_, _, err := params(cfg)
	return err
}

// params reads and validates eta and delta.
func params(cfg sdk.Config) (eta, delta float64, err error) {
	if err := cfg.Only("eta", "delta"); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", ID, err)
	}
	if eta, err = cfg.Float("eta", DefaultEta); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", ID, err)
	}
	if !(eta >= 0 && eta <= 1) {
		return 0, 0, fmt.Errorf("%s: key %q: %v is out of range (accepted: 0 <= eta <= 1)", ID, "eta", eta)
	}
	if delta, err = cfg.Float("delta", DefaultDelta); err != nil {
		return 0, 0, fmt.Errorf("%s: %w (accepted: a finite real)", ID, err)
	}
	return eta, delta, nil
}

// Summarise returns the agreement set of every input.
func (*Summary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	eta, delta, err := params(cfg)
	if err != nil {
		return nil, err
	}
	out := make([]sdk.Result, len(draws))
	for i, d := range draws {
		if len(d) < 1 {
			return nil, fmt.Errorf("%s: input %d has %d draws, at least 1 needed", ID, i, len(d))
		}
		out[i].Set = Agreement(make([]bool, len(d[0])), d, delta, eta)
	}
	return out, nil
}

// Agreement writes the agreement set dst[n] = (count[n] >= ceil(eta S)),
// count[n] = #{s : r[s][n] > delta}, that is rho[n] >= eta with rho[n] =
// count[n]/S compared exactly, and returns dst. 0 <= eta <= 1.
func Agreement(dst []bool, r [][]float64, delta, eta float64) []bool {
	need := stat.Rank(eta, len(r))
	count := make([]int, len(dst))
	for _, row := range r {
		for n, v := range row[:len(dst)] {
			if v > delta {
				count[n]++
			}
		}
	}
	for n, c := range count {
		dst[n] = c >= need
	}
	return dst
}
