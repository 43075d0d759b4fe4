package band

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/stat"
)

// The plugins' IDs.
const (
	ID             = "summary.band"
	InterpolatedID = "summary.iband"
)

// DefaultBeta is the level of summary.iband when the recipe gives no "beta".
const DefaultBeta = 0.9

// Summary is the order-statistic band.
type Summary struct{}

// New returns the order-statistic band summary.
func New() *Summary { return &Summary{} }

// Info describes the plugin.
func (*Summary) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: "1.0.0", Summary: "order-statistic band [r_(k), r_(l)] of the draws (k, l: 1 <= k < l <= S)", Output: sdk.OutputBand, MinDraws: 2}
}

// Check accepts the required keys "k" and "l" with 1 <= k < l.
func (*Summary) Check(cfg sdk.Config) error {
	_, _, err := ranks(cfg)
	return err
}

// ranks reads and validates k and l, as far as is possible without S.
func ranks(cfg sdk.Config) (k, l int, err error) {
	if err := cfg.Only("k", "l"); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", ID, err)
	}
	for _, key := range []string{"k", "l"} {
		if _, ok := cfg[key]; !ok {
			return 0, 0, fmt.Errorf("%s: key %q is required (accepted: integers with 1 <= k < l <= S, S the number of draws)", ID, key)
		}
	}
	if k, err = cfg.Int("k", 0); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", ID, err)
	}
	if l, err = cfg.Int("l", 0); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", ID, err)
	}
	if k < 1 || l <= k {
		return 0, 0, fmt.Errorf("%s: keys \"k\" = %d and \"l\" = %d are out of range (accepted: 1 <= k < l <= S, S the number of draws)", ID, k, l)
	}
	return k, l, nil
}

// Summarise returns the order-statistic band of every input.
func (*Summary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	k, l, err := ranks(cfg)
	if err != nil {
		return nil, err
	}
	return summariseBands(ID, draws, 2, func(lower, upper []float64, r [][]float64) error {
		if l > len(r) {
			return fmt.Errorf("keys \"k\" = %d and \"l\" = %d need 1 <= k < l <= S, and S = %d", k, l, len(r))
		}
		stat.Band(lower, upper, r, k, l)
		return nil
	})
}

// summariseBands is the batch plumbing of a band summary: f writes the
// band of one input's draws r (S x N) into lower and upper (N values each).
func summariseBands(id string, draws [][][]float64, minDraws int, f func(lower, upper []float64, r [][]float64) error) ([]sdk.Result, error) {
	out := make([]sdk.Result, len(draws))
	for i, d := range draws {
		if len(d) < minDraws {
			return nil, fmt.Errorf("%s: input %d has %d draws, at least %d needed", id, i, len(d), minDraws)
		}
		out[i].Lower = make([]float64, len(d[0]))
		out[i].Upper = make([]float64, len(d[0]))
		if err := f(out[i].Lower, out[i].Upper, d); err != nil {
			return nil, fmt.Errorf("%s: input %d: %w", id, i, err)
		}
	}
	return out, nil
}

// Interpolated is the interpolated band at level beta.
type Interpolated struct{}

// NewInterpolated returns the interpolated band summary.
func NewInterpolated() *Interpolated { return &Interpolated{} }

// Info describes the plugin.
func (*Interpolated) Info() sdk.Info {
	return sdk.Info{ID: InterpolatedID, Version: "1.0.0", Summary: "interpolated band: linear (type 7) quantiles at (1-beta)/2 and (1+beta)/2 of the draws (beta, default 0.9)", Output: sdk.OutputBand, MinDraws: 2}
}

// Check accepts the key "beta" in (0, 1).
func (*Interpolated) Check(cfg sdk.Config) error {
	_, err := level(cfg)
	return err
}

// level reads and validates beta.
func level(cfg sdk.Config) (float64, error) {
	if err := cfg.Only("beta"); err != nil {
		return 0, fmt.Errorf("%s: %w", InterpolatedID, err)
	}
	b, err := cfg.Float("beta", DefaultBeta)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", InterpolatedID, err)
	}
	if !(b > 0 && b < 1) {
		return 0, fmt.Errorf("%s: key %q: %v is out of range (accepted: 0 < beta < 1)", InterpolatedID, "beta", b)
	}
	return b, nil
}

// Summarise returns the interpolated band of every input.
func (*Interpolated) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	beta, err := level(cfg)
	if err != nil {
		return nil, err
	}
	return summariseBands(InterpolatedID, draws, 2, func(lower, upper []float64, r [][]float64) error {
		stat.InterpolatedBand(lower, upper, r, beta)
		return nil
	})
}
