package metric

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
)

// Monotonicity is Arya et al.'s (2019) monotonicity, as Quantus's
// Monotonicity intends it: start from the baseline everywhere, put the
// record's samples back in groups G_k of features_in_step from the least
// |â| up, and score 1 if p_y never falls as groups come back,
//
//	score = 1[ p_y(x^{k+1}) >= p_y(x^k) for every k ],
//
// x^k the baseline with G_1..G_k restored (higher: monotone). Quantus
// 0.6.0 re-writes the baseline instead of the record's values, so its
// input never changes and its score is always true; this one restores x.
func Monotonicity() Entry {
	return Entry{
		Info: Info{
			ID: "metric.monotonicity", Quantus: "Monotonicity", Category: Faithfulness,
			Needs: Needs{Model: true}, Higher: true,
			Summary: "1 if p_y never falls as samples are restored from the least relevant up",
			Params: append([]Param{
				{Name: "features_in_step", Default: 1, Doc: "samples a group; must divide C*T"},
				{Name: "perturb_baseline", Default: BaselineBlack, Doc: fmt.Sprintf("where the restoring starts: %v", baselines)},
				softmaxParam(true),
			}, prepParamList(true, true)...),
		},
		New: func(cfg sdk.Config) (Metric, error) {
			m := &monotonicity{}
			var err error
			if m.prep, err = prepParams(cfg, true, true); err != nil {
				return nil, err
			}
			if m.step, err = cfg.IntRange("features_in_step", 1, 1, 1<<24); err != nil {
				return nil, err
			}
			if m.baseline, err = baselineParam(cfg, BaselineBlack); err != nil {
				return nil, err
			}
			if m.softmax, err = cfg.Bool("softmax", true); err != nil {
				return nil, err
			}
			return m, nil
		},
	}
}

type monotonicity struct {
	prep
	step     int
	baseline string
	softmax  bool
}

func (m *monotonicity) Info() Info { return Monotonicity().Info }

func (m *monotonicity) Score(ctx context.Context, in *Input, dst []Score) error {
	info := m.Info()
	if err := in.Check(info); err != nil {
		return err
	}
	n := in.Len()
	if n%m.step != 0 {
		return fmt.Errorf("%s: features_in_step = %d does not divide a record's %d x %d = %d samples", info.ID, m.step, in.C, in.T, n)
	}
	fw, err := newOutputs(in.Model, m.softmax)
	if err != nil {
		return fmt.Errorf("%s: %w", info.ID, err)
	}
	a := m.maps(in)
	K := n / m.step
	order := make([]int, n)
	curves := make([]float64, in.N*K)
	cur, scratch := make([]float32, n), make([]float32, n)
	for i := range in.N {
		if err := ctx.Err(); err != nil {
			return err
		}
		orderAsc(order, a[i*n:(i+1)*n])
		if err := baselineSignal(cur, in, i, m.baseline); err != nil {
			return fmt.Errorf("%s: %w", info.ID, err)
		}
		x, _, _ := in.record(i)
		// flipSteps from the baseline towards x: the "removed" value of
		// a sample is its own.
		if err := flipSteps(ctx, fw, in.Targets[i], cur, x, scratch, order, m.step, curves[i*K:(i+1)*K]); err != nil {
			return fmt.Errorf("%s: record %d: %w", info.ID, i, err)
		}
	}
	if err := fw.flush(ctx); err != nil {
		return fmt.Errorf("%s: %w", info.ID, err)
	}
	for i := range in.N {
		c := curves[i*K : (i+1)*K]
		v := 1.0
		for k := 1; k < K; k++ {
			if c[k] < c[k-1] {
				v = 0
				break
			}
		}
		dst[i] = Score{Value: v, Curve: c}
	}
	return nil
}
