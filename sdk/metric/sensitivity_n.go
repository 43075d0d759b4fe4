package metric

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
)

// SensitivityN is sensitivity-n (Ancona et al. 2018), record by record:
// for each subset size m = features_in_step, 2 features_in_step, ... up
// to n_max_percentage of the record's C*T samples, nr_samples random
// subsets S of m samples (from the record's key), each removed from x,
//
//	curve_m = pearson_r( sum_S â,  p_y(x) - p_y(x with S removed) ),
//
// and the value the curve's mean (higher: the map's sums predict the
// output's changes at every scale). Quantus's SensitivityN correlates
// across the records of a batch instead (one curve a batch, and the
// k-th group's relevance only, not the removed set's); a record's score
// here does not depend on the other records. Undefined when a size's
// correlation does not exist.
func SensitivityN() Entry {
	info := Info{
		ID: "metric.sensitivity_n", Quantus: "SensitivityN", Category: Faithfulness,
		Needs: Needs{Model: true}, Curve: true, Higher: true,
		Summary: "correlation of random subsets' relevance with the output's drop, for each subset size (features_in_step apart)",
		Params: sensitivityNKeys.params(
			Param{Name: "n_max_percentage", Default: 0.8, Doc: "the largest subset, a share of the C*T samples"},
			Param{Name: "nr_samples", Default: 10, Doc: "random subsets of each size"}),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		m := &sensitivityN{info: info}
		var err error
		if m.keys, err = sensitivityNKeys.read(cfg); err != nil {
			return nil, err
		}
		if m.maxShare, err = cfg.Float("n_max_percentage", 0.8); err != nil {
			return nil, err
		}
		if !(m.maxShare > 0 && m.maxShare <= 1) {
			return nil, fmt.Errorf("n_max_percentage = %v: want a share in (0, 1]", m.maxShare)
		}
		m.samples, err = cfg.IntRange("nr_samples", 10, 2, 1<<20)
		return m, err
	}}
}

var sensitivityNKeys = keySpec{normalise: true, step: 20, baseline: BaselineBlack, softmax: onProbs}

type sensitivityN struct {
	keys
	info     Info
	samples  int
	maxShare float64
}

func (m *sensitivityN) Info() Info { return m.info }

func (m *sensitivityN) Score(ctx context.Context, in *Input, dst []Score) error {
	a, fw, err := m.start(m.info, in)
	if err != nil {
		return err
	}
	n := in.Len()
	K := int(m.maxShare*float64(n)) / m.step // subset sizes step, 2 step, ..., K step
	if K < 1 {
		return fmt.Errorf("%s: n_max_percentage = %v of %d samples holds no subset of features_in_step = %d", m.info.ID, m.maxShare, n, m.step)
	}
	base := make([]float32, n)
	// per record: out[0] = p(x), then for each size k and sample s one output
	per := 1 + K*m.samples
	out := make([]float64, in.N*per)
	sets := make([][]int, K) // the subsets of size (k+1) step, samples of them, for the record at hand
	A := make([]float64, in.N*K*m.samples)
	for i := range in.N {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.baselineOf(m.info, base, in, i); err != nil {
			return err
		}
		r := rng.For(in.key(i), m.info.ID, "", 0, 0)
		x, _, _ := in.record(i)
		o := out[i*per : (i+1)*per]
		q, err := fw.next(ctx, in.Targets[i], &o[0])
		if err != nil {
			return err
		}
		copy(q, x)
		ai := a[i*n : (i+1)*n]
		for k := range K {
			size := (k + 1) * m.step
			sets[k] = grow(sets[k], m.samples*size)
			drawSubsets(sets[k], r, n, size)
			for s := range m.samples {
				sub := sets[k][s*size : (s+1)*size]
				var sum float64
				for _, j := range sub {
					sum += ai[j]
				}
				A[(i*K+k)*m.samples+s] = sum
				q, err := fw.next(ctx, in.Targets[i], &o[1+k*m.samples+s])
				if err != nil {
					return err
				}
				copy(q, x)
				for _, j := range sub {
					q[j] = base[j]
				}
			}
		}
	}
	if err := fw.flush(ctx); err != nil {
		return fmt.Errorf("%s: %w", m.info.ID, err)
	}
	D := make([]float64, m.samples)
	for i := range in.N {
		o := out[i*per : (i+1)*per]
		curve := make([]float64, K)
		why := ""
		var sum float64
		for k := range K {
			for s := range m.samples {
				D[s] = float64(float32(o[0]) - float32(o[1+k*m.samples+s]))
			}
			c, ok := pearson(A[(i*K+k)*m.samples:(i*K+k+1)*m.samples], D)
			if !ok && why == "" {
				why = fmt.Sprintf("subsets of %d samples: the relevance or the output change is constant", (k+1)*m.step)
			}
			curve[k] = c
			sum += c
		}
		if why != "" {
			dst[i] = undefined(why, curve)
			continue
		}
		dst[i] = Score{Value: sum / float64(K), Curve: curve}
	}
	return nil
}

// grow returns s with length n, reusing its array when it can.
func grow(s []int, n int) []int {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]int, n)
}
