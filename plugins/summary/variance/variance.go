package variance

import (
	"context"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/stat"
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
	return sdk.SummariseMaps(ID, draws, 2, stat.Variance)
}
