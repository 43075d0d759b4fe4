package quantile

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/stat"
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
		return stat.Quantile(dst, r, stat.Rank(a, len(r)))
	})
}
