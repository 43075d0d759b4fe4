package metric

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
)

// PixelFlipping is Quantus's PixelFlipping (Bach et al. 2015): the
// record's samples (all channels, flattened channel-major), ordered from
// the most relevant down, are set to the baseline features_in_step at a
// time; the score is the curve
//
//	p_y(x^k),  k = 1..C*T/features_in_step,
//
// x^k the input with the first k groups removed, and its area (lower: a
// more faithful map).
func PixelFlipping() Entry {
	info := Info{
		ID: "metric.pixel_flipping", Quantus: "PixelFlipping", Category: Faithfulness,
		Needs: Needs{Model: true}, Curve: true, Higher: false,
		Summary: "p_y as the most relevant samples are removed, features_in_step at a time (area: lower is better)",
		Params:  pixelFlippingKeys.params(),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		k, err := pixelFlippingKeys.read(cfg)
		return &pixelFlipping{keys: k, info: info}, err
	}}
}

var pixelFlippingKeys = keySpec{normalise: true, step: 1, baseline: BaselineBlack, softmax: onProbs}

type pixelFlipping struct {
	keys
	info Info
}

func (m *pixelFlipping) Info() Info { return m.info }

func (m *pixelFlipping) Score(ctx context.Context, in *Input, dst []Score) error {
	a, _, err := m.start(m.info, in)
	if err != nil {
		return err
	}
	n := in.Len()
	K := n / m.step
	orders, bases := make([]int, in.N*n), make([]float32, in.N*n)
	eds := make([]editor, in.N)
	for i := range in.N {
		orderDesc(orders[i*n:(i+1)*n], a[i*n:(i+1)*n])
		if err := m.baselineOf(m.info, bases[i*n:(i+1)*n], in, i); err != nil {
			return err
		}
		eds[i] = &flipEditor{base: bases[i*n : (i+1)*n], order: orders[i*n : (i+1)*n], step: m.step, T: in.T}
	}
	curves, err := m.chainOutputs(ctx, in, in.X, eds)
	if err != nil {
		return fmt.Errorf("%s: %w", m.info.ID, err)
	}
	for i := range in.N {
		c := curves[i*K : (i+1)*K]
		dst[i] = Score{Value: trapz(c), Curve: c}
	}
	return nil
}
