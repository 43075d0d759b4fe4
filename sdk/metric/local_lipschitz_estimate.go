package metric

import (
	"context"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
)

// LocalLipschitzEstimate is Quantus's LocalLipschitzEstimate
// (Alvarez-Melis and Jaakkola 2018): for nr_samples copies x'_s = x +
// e_s of the record, e_s Gaussian noise N(perturb_mean, perturb_std^2) in
// every sample (drawn from the record's key), the map â'_s of x'_s and
//
//	L_s = ||â - â'_s||_2 / (||x - x'_s||_2 + 1e-10),   score = max_s L_s
//
// (lower: a more robust explanation).
func LocalLipschitzEstimate() Entry {
	info := Info{
		ID: "metric.local_lipschitz_estimate", Quantus: "LocalLipschitzEstimate", Category: Robustness,
		Needs: Needs{Model: true, Explain: true}, Higher: false,
		Summary: "the largest change of the map per change of the input under small Gaussian noise",
		Params: noiseParams(true,
			Param{Name: "perturb_mean", Default: 0.0, Doc: "the noise's mean"},
			Param{Name: "perturb_std", Default: 0.1, Doc: "the noise's standard deviation"}),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		m := &lipschitz{sensitivity: sensitivity{info: info, max: true}}
		err := m.readNoise(cfg, true)
		if err != nil {
			return nil, err
		}
		if m.mean, err = cfg.Float("perturb_mean", 0); err != nil {
			return nil, err
		}
		if m.std, err = cfg.Float("perturb_std", 0.1); err != nil {
			return nil, err
		}
		if !(m.std > 0) || math.IsInf(m.std, 0) || math.IsNaN(m.mean) || math.IsInf(m.mean, 0) {
			return nil, fmt.Errorf("perturb_mean = %v, perturb_std = %v: want a finite mean and a finite std > 0", m.mean, m.std)
		}
		return m, nil
	}}
}

type lipschitz struct {
	sensitivity
	mean, std float64
}

func (m *lipschitz) Score(ctx context.Context, in *Input, dst []Score) error {
	if err := in.Check(m.info); err != nil {
		return err
	}
	n := in.Len()
	xs := make([]float32, in.N*m.samples*n)
	for i := range in.N {
		x, _, _ := in.record(i)
		r := rng.For(in.key(i), m.info.ID, "", 0, 0)
		for s := range m.samples {
			xp := xs[(i*m.samples+s)*n : (i*m.samples+s+1)*n]
			for j, v := range x {
				xp[j] = float32(float64(v) + m.mean + m.std*r.NormFloat64())
			}
		}
	}
	return m.scoreCopies(ctx, in, xs, dst)
}

// scoreCopies scores the records from their noisy copies xs.
func (m *lipschitz) scoreCopies(ctx context.Context, in *Input, xs []float32, dst []Score) error {
	d, _, err := m.diffs(ctx, in, xs)
	if err != nil {
		return err
	}
	n, S := in.Len(), m.samples
	for i := range in.N {
		x, _, _ := in.record(i)
		r := d[i*S : (i+1)*S]
		for s := range S {
			// the input's change in float32 differences, as Quantus
			var e2 float64
			for j, v := range x {
				e := float64(v - xs[(i*S+s)*n+j])
				e2 += e * e
			}
			r[s] /= math.Sqrt(e2) + 1e-10
		}
		dst[i] = m.aggregate(r)
	}
	return nil
}
