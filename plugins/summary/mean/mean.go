package mean

import (
	"context"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/stat"
)

// ID is the plugin's ID.
const ID = "summary.mean"

// Summary is the mean map.
type Summary struct{}

// New returns the mean summary.
func New() *Summary { return &Summary{} }

// Info describes the plugin.
func (*Summary) Info() sdk.Info {
	return sdk.Info{ID: ID, Version: "1.0.0", Summary: "coordinatewise mean of the draws", Output: sdk.OutputMap, MinDraws: 1}
}

// Check accepts an empty table.
func (*Summary) Check(cfg sdk.Config) error { return sdk.CheckNoKeys(ID, cfg) }

// Summarise returns the mean map of every input.
func (*Summary) Summarise(ctx context.Context, draws [][][]float64, cfg sdk.Config) ([]sdk.Result, error) {
	return sdk.SummariseMaps(ID, draws, 1, stat.Mean)
}
