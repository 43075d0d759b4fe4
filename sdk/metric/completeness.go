package metric

import (
	"context"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk"
)

// Completeness is Quantus's Completeness (Sundararajan et al. 2017, the
// axiom integrated gradients satisfies): a map should add up to the
// output's change from the baseline x' (every sample removed) to x,
//
//	score = | sum_j â_j - (f_y(x) - f_y(x')) |
//
// (lower: more complete; 0 for an exact integrated gradients map). For an
// integrated gradients map from the same baseline it is the absolute
// convergence delta. Two differences from Quantus on purpose: Quantus
// compares the two sides for exact equality, a bool that floats make
// false almost always, where this is their distance; and its normalise
// default (true) rescales the map, which breaks the comparison, where
// this one's is false.
func Completeness() Entry {
	info := Info{
		ID: "metric.completeness", Quantus: "Completeness", Category: Axiomatic,
		Needs: Needs{Model: true}, Higher: false,
		Summary: "|sum of the map - (f(x) - f(baseline))|: how far the map is from adding up to the output's change",
		Params:  completenessKeys.params(),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		k, err := completenessKeys.read(cfg)
		return &completeness{keys: k, info: info}, err
	}}
}

var completenessKeys = keySpec{normalise: false, baseline: BaselineBlack, softmax: onProbs}

type completeness struct {
	keys
	info Info
}

func (m *completeness) Info() Info { return m.info }

func (m *completeness) Score(ctx context.Context, in *Input, dst []Score) error {
	a, fw, err := m.start(m.info, in)
	if err != nil {
		return err
	}
	n := in.Len()
	fx, fb := make([]float64, in.N), make([]float64, in.N)
	for i := range in.N {
		x, _, _ := in.record(i)
		b, err := fw.next(ctx, in.Targets[i], &fx[i])
		if err != nil {
			return fmt.Errorf("%s: %w", m.info.ID, err)
		}
		copy(b, x)
		if b, err = fw.next(ctx, in.Targets[i], &fb[i]); err != nil {
			return fmt.Errorf("%s: %w", m.info.ID, err)
		}
		if err := m.baselineOf(m.info, b, in, i); err != nil {
			return err
		}
	}
	if err := fw.flush(ctx); err != nil {
		return fmt.Errorf("%s: %w", m.info.ID, err)
	}
	for i := range in.N {
		var s float64
		for _, v := range a[i*n : (i+1)*n] {
			s += v
		}
		dst[i] = Score{Value: math.Abs(s - (fx[i] - fb[i]))}
	}
	return nil
}
