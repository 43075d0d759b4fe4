package gradients

import (
	"context"
	"math"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// SaliencyID and InputXGradientID are the two one-gradient explainers.
const (
	SaliencyID       = "explainer.saliency"
	InputXGradientID = "explainer.input_x_gradient"
)

// Saliency is |g(x)| (abs = true) or g(x); with times_input it is
// InputXGradient, x * g(x).
type Saliency struct{ timesInput bool }

// NewSaliency returns explainer.saliency.
func NewSaliency() *Saliency { return &Saliency{} }

// NewInputXGradient returns explainer.input_x_gradient.
func NewInputXGradient() *Saliency { return &Saliency{timesInput: true} }

// Info describes the plugin.
func (s *Saliency) Info() sdk.Info {
	if s.timesInput {
		return sdk.Info{ID: InputXGradientID, Version: Version, Summary: "input x gradient of the class probability (Captum's InputXGradient)", Needs: sdk.NeedsInputGrad}
	}
	return sdk.Info{ID: SaliencyID, Version: Version, Summary: "the gradient of the class probability, |d p / d x| with abs (Captum's Saliency)", Needs: sdk.NeedsInputGrad}
}

func (s *Saliency) parse(cfg sdk.Config) (abs bool, err error) {
	if s.timesInput {
		return false, sdk.CheckNoKeys(InputXGradientID, cfg)
	}
	if err := cfg.Only("abs"); err != nil {
		return false, err
	}
	return cfg.Bool("abs", true)
}

// Check validates abs (saliency: true or false, default true).
func (s *Saliency) Check(cfg sdk.Config) error {
	_, err := s.parse(cfg)
	return err
}

// Explain computes the maps with one batched gradient pass.
func (s *Saliency) Explain(ctx context.Context, m nn.Model, req sdk.ExplainRequest) ([][]float64, error) {
	abs, err := s.parse(req.Config)
	if err != nil {
		return nil, err
	}
	n, b, err := check(m, req)
	if err != nil {
		return nil, err
	}
	g := make([]float32, b*n)
	owner := make([]int, b)
	for i := range owner {
		owner[i] = i
	}
	if err := gradAt(ctx, m, g, req.X, req.Targets, owner); err != nil {
		return nil, err
	}
	out, flat := maps(b, n)
	for j, v := range g {
		switch {
		case s.timesInput:
			flat[j] = float64(req.X[j]) * float64(v)
		case abs:
			flat[j] = math.Abs(float64(v))
		default:
			flat[j] = float64(v)
		}
	}
	return out, nil
}
