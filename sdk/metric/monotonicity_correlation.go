package metric

import (
	"context"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
)

// MonotonicityCorrelation is Quantus's MonotonicityCorrelation (Nguyen
// and Martínez 2020): the samples in order from the least |â| up, in
// groups G_k of features_in_step; for each group, nr_samples copies of x
// with G_k set to one value u ~ U(0, 1) each (perturb_baseline
// "uniform", drawn from the record's key) or to the baseline, and
//
//	v_k = mean_s (p_y(x'_{k,s}) - p_y(x))^2 w,  w = 1/p_y(x)^2 (1 if p_y(x) < eps)
//	score = spearman_rho( sum_{G_k} |â|,  v_k )
//
// (higher: the larger a group's relevance, the more its change moves the
// output). Undefined when either side is constant.
func MonotonicityCorrelation() Entry {
	info := Info{
		ID: "metric.monotonicity_correlation", Quantus: "MonotonicityCorrelation", Category: Faithfulness,
		Needs: Needs{Model: true}, Higher: true,
		Summary: "rank correlation of each group's relevance with the output's variance when it is changed",
		Params: monoCorrKeys.params(
			Param{Name: "nr_samples", Default: 100, Doc: "changes of each group"},
			Param{Name: "eps", Default: 1e-5, Doc: "below this p_y(x) the weight 1/p_y(x)^2 is 1"}),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		m := &monoCorr{info: info}
		var err error
		if m.keys, err = monoCorrKeys.read(cfg); err != nil {
			return nil, err
		}
		if m.samples, err = cfg.IntRange("nr_samples", 100, 1, 1<<20); err != nil {
			return nil, err
		}
		if m.eps, err = cfg.Float("eps", 1e-5); err != nil {
			return nil, err
		}
		if !(m.eps >= 0) || math.IsInf(m.eps, 0) {
			return nil, fmt.Errorf("eps = %v: want a finite value >= 0", m.eps)
		}
		return m, nil
	}}
}

var monoCorrKeys = keySpec{normalise: true, abs: true, step: 1, baseline: "uniform", uniform: true, softmax: onProbs}

type monoCorr struct {
	keys
	info    Info
	samples int
	eps     float64
}

func (m *monoCorr) Info() Info { return m.info }

func (m *monoCorr) Score(ctx context.Context, in *Input, dst []Score) error {
	info := m.info
	a, _, err := m.start(info, in)
	if err != nil {
		return err
	}
	n := in.Len()
	K := n / m.step
	orders, bases := make([]int, in.N*n), make([]float32, in.N*n)
	var vals []float32
	if m.baseline == "uniform" {
		vals = make([]float32, in.N*K*m.samples)
	}
	eds := make([]editor, in.N)
	for i := range in.N {
		order := orders[i*n : (i+1)*n]
		orderAsc(order, a[i*n:(i+1)*n])
		e := &setEditor{sets: order, size: m.step, samples: m.samples, T: in.T}
		if vals != nil {
			r := rng.For(in.key(i), info.ID, "", 0, 0)
			e.vals = vals[i*K*m.samples : (i+1)*K*m.samples]
			for j := range e.vals {
				e.vals[j] = float32(r.Float64())
			}
		} else if err := m.baselineOf(info, bases[i*n:(i+1)*n], in, i); err != nil {
			return err
		}
		e.base = bases[i*n : (i+1)*n]
		eds[i] = e
	}
	out, err := m.chainOutputs(ctx, in, in.X, eds)
	if err != nil {
		return fmt.Errorf("%s: %w", info.ID, err)
	}
	for i := range in.N {
		dst[i] = monotonicityCorrelation(a[i*n:(i+1)*n], orders[i*n:(i+1)*n], m.step, m.samples, m.eps, out[i*(1+K*m.samples):(i+1)*(1+K*m.samples)])
	}
	return nil
}

// monotonicityCorrelation is the score from the outputs of a setEditor's
// chain (its copy 1+k*samples+s: group k changed, sample s).
func monotonicityCorrelation(a []float64, order []int, step, samples int, eps float64, out []float64) Score {
	K := len(order) / step
	p0 := float32(out[0])
	w := float32(1)
	if math.Abs(float64(p0)) >= eps {
		w = 1 / (p0 * p0)
	}
	A, V := make([]float64, K), make([]float64, K)
	for k := range K {
		for _, j := range order[k*step : (k+1)*step] {
			A[k] += a[j]
		}
		var v float32
		for s := range samples {
			d := float32(out[1+k*samples+s]) - p0
			v += d * d * w
		}
		V[k] = float64(v / float32(samples))
	}
	r, ok := spearman(A, V)
	return correlated(r, ok, "the relevance or the output's variance")
}
