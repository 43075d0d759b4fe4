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
	a, fw, err := m.start(m.info, in)
	if err != nil {
		return err
	}
	n := in.Len()
	order := make([]int, n)
	K := n / m.step
	curves := make([]float64, in.N*K)
	base := make([]float32, n)
	cur := make([]float32, n)
	for i := range in.N {
		if err := ctx.Err(); err != nil {
			return err
		}
		x, _, _ := in.record(i)
		orderDesc(order, a[i*n:(i+1)*n])
		if err := m.baselineOf(m.info, base, in, i); err != nil {
			return err
		}
		if err := flipSteps(ctx, fw, in.Targets[i], x, base, cur, order, m.step, curves[i*K:(i+1)*K]); err != nil {
			return fmt.Errorf("%s: record %d: %w", m.info.ID, i, err)
		}
	}
	if err := fw.flush(ctx); err != nil {
		return fmt.Errorf("%s: %w", m.info.ID, err)
	}
	for i := range in.N {
		c := curves[i*K : (i+1)*K]
		dst[i] = Score{Value: trapz(c), Curve: c}
	}
	return nil
}

// flipSteps queues, for k = 1..len(curve), x with the samples
// order[:k*step] set to base, its probability into curve[k-1].
func flipSteps(ctx context.Context, fw *forwards, y int, x, base, cur []float32, order []int, step int, curve []float64) error {
	copy(cur, x)
	for k := range curve {
		for _, j := range order[k*step : (k+1)*step] {
			cur[j] = base[j]
		}
		q, err := fw.next(ctx, y, &curve[k])
		if err != nil {
			return err
		}
		copy(q, cur)
	}
	return nil
}
