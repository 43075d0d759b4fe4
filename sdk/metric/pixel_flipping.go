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
	return Entry{
		Info: Info{
			ID: "metric.pixel_flipping", Quantus: "PixelFlipping", Category: Faithfulness,
			Needs: Needs{Model: true}, Curve: true, Higher: false,
			Summary: "p_y as the most relevant samples are removed, features_in_step at a time (area: lower is better)",
			Params: append([]Param{
				{Name: "features_in_step", Default: 1, Doc: "samples removed a step; must divide C*T"},
				{Name: "perturb_baseline", Default: BaselineBlack, Doc: fmt.Sprintf("what a removed sample becomes: %v", baselines)},
			}, prepParamList(true, false)...),
		},
		New: func(cfg sdk.Config) (Metric, error) {
			m := &pixelFlipping{}
			var err error
			if m.prep, err = prepParams(cfg, true, false); err != nil {
				return nil, err
			}
			if m.step, err = cfg.IntRange("features_in_step", 1, 1, 1<<24); err != nil {
				return nil, err
			}
			if m.baseline, err = baselineParam(cfg, BaselineBlack); err != nil {
				return nil, err
			}
			return m, nil
		},
	}
}

type pixelFlipping struct {
	prep
	step     int
	baseline string
}

func (m *pixelFlipping) Info() Info { return PixelFlipping().Info }

func (m *pixelFlipping) Score(ctx context.Context, in *Input, dst []Score) error {
	info := m.Info()
	if err := in.Check(info); err != nil {
		return err
	}
	n := in.Len()
	if n%m.step != 0 {
		return fmt.Errorf("%s: features_in_step = %d does not divide a record's %d x %d = %d samples", info.ID, m.step, in.C, in.T, n)
	}
	a := m.maps(in)
	order := make([]int, n)
	K := n / m.step
	curves := make([]float64, in.N*K)
	fw := newForwards(in.Model)
	base := make([]float32, n)
	cur := make([]float32, n)
	for i := range in.N {
		if err := ctx.Err(); err != nil {
			return err
		}
		x, _, _ := in.record(i)
		orderDesc(order, a[i*n:(i+1)*n])
		if err := baselineSignal(base, in, i, m.baseline); err != nil {
			return fmt.Errorf("%s: %w", info.ID, err)
		}
		if err := flipSteps(ctx, fw, in.Targets[i], x, base, cur, order, m.step, curves[i*K:(i+1)*K]); err != nil {
			return fmt.Errorf("%s: record %d: %w", info.ID, i, err)
		}
	}
	if err := fw.flush(ctx); err != nil {
		return fmt.Errorf("%s: %w", info.ID, err)
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
