package cv

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/stat"
)

// ID is the plugin's ID.
const ID = "summary.cv"

// DefaultKappa is the stabiliser used when the recipe gives no "kappa".
const DefaultKappa = 1e-8

// Summary is the coefficient-of-variation map.
type Summary struct{}

// New returns the coefficient-of-variation summary.
func New() *Summary { return &Summary{} }

// Info describes the plugin.
func (*Summary) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: "1.0.0", Summary: "coordinatewise coefficient of variation s/(|mean|+kappa) of the draws (S >= 2; kappa, default 1e-8)", Output: sdk.OutputMap, MinDraws: 2}
}

// Check accepts the key "kappa" > 0.
func (*Summary) Check(cfg sdk.Config) error {
	_, err := stabiliser(cfg)
	return err
}

// stabiliser reads and validates kappa.
func stabiliser(cfg sdk.Config) (float64, error) {
	if err := cfg.Only("kappa"); err != nil {
		return 0, fmt.Errorf("%s: %w", ID, err)
	}
	k, err := cfg.Float("kappa", DefaultKappa)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", ID, err)
	}
	if !(k > 0) {
		return 0, fmt.Errorf("%s: key %q: %v is out of range (accepted: kappa > 0)", ID, "kappa", k)
	}
	return k, nil
}

// Summarise returns the coefficient-of-variation map of every input.
func (*Summary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	kappa, err := stabiliser(cfg)
	if err != nil {
		return nil, err
	}
	return sdk.SummariseMaps(ID, draws, 2, func(dst []float64, r [][]float64) []float64 {
		return stat.CV(dst, r, kappa)
	})
}
