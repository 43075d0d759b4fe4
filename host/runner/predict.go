package runner

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/sdk/nn"
)

// PredictOptions are the settings of Predict.
type PredictOptions struct {
	Weights string // .safetensors with PyTorch state_dict names
	Input   string // CSV of waveforms, one a line
	Arch    string // architecture name; "": nn.PaperArchName
}

// Predict loads the eval-mode network of opt.Weights and returns the class
// probabilities of every waveform of opt.Input: one row of Classes values
// per line, in file order. Errors name the file (and for the input the
// line) that is wrong.
func Predict(ctx context.Context, opt PredictOptions) ([][]float32, error) {
	name := opt.Arch
	if name == "" {
		name = nn.PaperArchName
	}
	arch, err := nn.LookupArch(name)
	if err != nil {
		return nil, err
	}
	p, err := nn.LoadParams(opt.Weights, arch)
	if err != nil {
		return nil, err
	}
	m, err := nn.NewModel(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opt.Weights, err)
	}
	rows, err := data.ReadWaveforms(opt.Input, m.InputLen())
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(rows))
	x := make([]float32, m.InputLen())
	for i, r := range rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for j, v := range r {
			x[j] = float32(v)
		}
		out[i] = make([]float32, m.Classes())
		m.Probs(out[i], x)
	}
	return out, nil
}
