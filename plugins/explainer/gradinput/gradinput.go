package gradinput

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// ID is the plugin's ID.
const ID = "explainer.gradinput"

// Version is the plugin's version.
const Version = "1.0.0"

// Explainer is the gradient x input operator. It has no state.
type Explainer struct{}

// New returns the gradient x input explainer.
func New() *Explainer { return &Explainer{} }

// Info describes the plugin: it needs input gradients and is
// deterministic.
func (*Explainer) Info() sdk.Info {
	return sdk.Info{
		ID: ID, Version: Version, Summary: "gradient x input of the class probability (times_input)",
		Needs: sdk.NeedsInputGrad,
	}
}

func parse(cfg sdk.Config) (timesInput bool, err error) {
	if err := cfg.Only("times_input"); err != nil {
		return false, err
	}
	return cfg.Bool("times_input", true)
}

// Check validates times_input (true or false, default true).
func (*Explainer) Check(cfg sdk.Config) error {
	_, err := parse(cfg)
	return err
}

// Explain computes one map per input with one batched backward pass.
func (*Explainer) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	timesInput, err := parse(req.Config)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n, b := m.InputLen(), len(req.Targets)
	if len(req.X) != b*n {
		return nil, fmt.Errorf("x has %d values for %d inputs of %d", len(req.X), b, n)
	}
	grad := make([]float32, len(req.X))
	if err := m.InputGrad(ctx, grad, nil, req.X, req.Targets); err != nil {
		return nil, fmt.Errorf("input gradients: %w", err)
	}
	maps := make([][]float64, b)
	flat := make([]float64, b*n)
	for i := range maps {
		mp := flat[i*n : (i+1)*n : (i+1)*n]
		g, x := grad[i*n:(i+1)*n], req.X[i*n:(i+1)*n]
		for t := range mp {
			if timesInput {
				mp[t] = float64(x[t]) * float64(g[t])
			} else {
				mp[t] = float64(g[t])
			}
		}
		maps[i] = mp
	}
	return maps, nil
}
