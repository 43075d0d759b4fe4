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
	info := Info{
		ID: "metric.monotonicity", Quantus: "Monotonicity", Category: Faithfulness,
		Needs: Needs{Model: true}, Higher: true,
		Summary: "1 if p_y never falls as samples are restored from the least relevant up (from perturb_baseline)",
		Params:  monotonicityKeys.params(),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		k, err := monotonicityKeys.read(cfg)
		return &monotonicity{keys: k, info: info}, err
	}}
}

var monotonicityKeys = keySpec{normalise: true, abs: true, step: 1, baseline: BaselineBlack, softmax: onProbs}

type monotonicity struct {
	keys
	info Info
}

func (m *monotonicity) Info() Info { return m.info }

func (m *monotonicity) Score(ctx context.Context, in *Input, dst []Score) error {
	info := m.info
	a, _, err := m.start(info, in)
	if err != nil {
		return err
	}
	n := in.Len()
	K := n / m.step
	orders, bases := make([]int, in.N*n), make([]float32, in.N*n)
	eds := make([]editor, in.N)
	for i := range in.N {
		orderAsc(orders[i*n:(i+1)*n], a[i*n:(i+1)*n])
		if err := m.baselineOf(info, bases[i*n:(i+1)*n], in, i); err != nil {
			return err
		}
		// flipping from the baseline towards x: the "removed" value of
		// a sample is its own
		x, _, _ := in.record(i)
		eds[i] = &flipEditor{base: x, order: orders[i*n : (i+1)*n], step: m.step, T: in.T}
	}
	curves, err := m.chainOutputs(ctx, in, bases, eds)
	if err != nil {
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
