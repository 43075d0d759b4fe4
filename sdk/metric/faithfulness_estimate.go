package metric

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
)

// FaithfulnessEstimate is Quantus's FaithfulnessEstimate (Alvarez-Melis
// and Jaakkola 2018): the samples in order from the most relevant down,
// in groups G_k of features_in_step, each removed alone from x,
//
//	score = pearson_r( sum_{G_k} â,  f_y(x) - f_y(x with G_k removed) )
//
// (higher: more faithful). Undefined when either side is constant.
func FaithfulnessEstimate() Entry {
	return Entry{
		Info: Info{
			ID: "metric.faithfulness_estimate", Quantus: "FaithfulnessEstimate", Category: Faithfulness,
			Needs: Needs{Model: true}, Higher: true,
			Summary: "correlation of each group's relevance with the output's drop when it alone is removed",
			Params: append([]Param{
				{Name: "features_in_step", Default: 1, Doc: "samples a group; must divide C*T"},
				{Name: "perturb_baseline", Default: BaselineBlack, Doc: fmt.Sprintf("what a removed sample becomes: %v", baselines)},
				softmaxParam(false),
			}, prepParamList(true, false)...),
		},
		New: func(cfg sdk.Config) (Metric, error) {
			m := &faithEst{}
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
			if m.softmax, err = cfg.Bool("softmax", false); err != nil {
				return nil, err
			}
			return m, nil
		},
	}
}

type faithEst struct {
	prep
	step     int
	baseline string
	softmax  bool
}

func (m *faithEst) Info() Info { return FaithfulnessEstimate().Info }

func (m *faithEst) Score(ctx context.Context, in *Input, dst []Score) error {
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
	orders := make([]int, in.N*n)
	K := n / m.step
	out := make([]float64, in.N*(K+1))
	base := make([]float32, n)
	for i := range in.N {
		if err := ctx.Err(); err != nil {
			return err
		}
		order := orders[i*n : (i+1)*n]
		orderDesc(order, a[i*n:(i+1)*n])
		if err := baselineSignal(base, in, i, m.baseline); err != nil {
			return fmt.Errorf("%s: %w", info.ID, err)
		}
		x, _, _ := in.record(i)
		if err := removeEach(ctx, fw, in.Targets[i], x, base, order, m.step, out[i*(K+1):(i+1)*(K+1)]); err != nil {
			return fmt.Errorf("%s: record %d: %w", info.ID, i, err)
		}
	}
	if err := fw.flush(ctx); err != nil {
		return fmt.Errorf("%s: %w", info.ID, err)
	}
	for i := range in.N {
		dst[i] = setCorrelation(a[i*n:(i+1)*n], orders[i*n:(i+1)*n], m.step, out[i*(K+1):(i+1)*(K+1)], pearson)
	}
	return nil
}
