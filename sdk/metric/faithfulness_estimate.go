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
	info := Info{
		ID: "metric.faithfulness_estimate", Quantus: "FaithfulnessEstimate", Category: Faithfulness,
		Needs: Needs{Model: true}, Higher: true,
		Summary: "correlation of each group's relevance with the output's drop when it alone is removed",
		Params:  faithEstKeys.params(),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		k, err := faithEstKeys.read(cfg)
		return &faithEst{keys: k, info: info}, err
	}}
}

var faithEstKeys = keySpec{normalise: true, step: 1, baseline: BaselineBlack, softmax: onLogits}

type faithEst struct {
	keys
	info Info
}

func (m *faithEst) Info() Info { return m.info }

func (m *faithEst) Score(ctx context.Context, in *Input, dst []Score) error {
	a, _, err := m.start(m.info, in)
	if err != nil {
		return err
	}
	n := in.Len()
	orders, bases := make([]int, in.N*n), make([]float32, in.N*n)
	K := n / m.step
	eds := make([]editor, in.N)
	for i := range in.N {
		orderDesc(orders[i*n:(i+1)*n], a[i*n:(i+1)*n])
		if err := m.baselineOf(m.info, bases[i*n:(i+1)*n], in, i); err != nil {
			return err
		}
		eds[i] = &setEditor{base: bases[i*n : (i+1)*n], sets: orders[i*n : (i+1)*n], size: m.step, T: in.T}
	}
	out, err := m.chainOutputs(ctx, in, in.X, eds)
	if err != nil {
		return fmt.Errorf("%s: %w", m.info.ID, err)
	}
	for i := range in.N {
		dst[i] = setCorrelation(a[i*n:(i+1)*n], orders[i*n:(i+1)*n], m.step, out[i*(K+1):(i+1)*(K+1)], pearson)
	}
	return nil
}
