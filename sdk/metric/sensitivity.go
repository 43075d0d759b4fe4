package metric

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
)

// MaxSensitivity is Quantus's MaxSensitivity (Yeh et al. 2019): for
// nr_samples copies x'_s = x + u_s of the record, u_s uniform noise on
// [-lower_bound, upper_bound] in every sample (drawn from the record's
// key), the map a'_s of x'_s (the Input's explainer) and
//
//	r_s = ||a - a'_s||_2 / ||a||_2,   score = max_s r_s
//
// (lower: a more robust explanation).
func MaxSensitivity() Entry {
	return sensitivityEntry("metric.max_sensitivity", "MaxSensitivity", "max")
}

// AvgSensitivity is MaxSensitivity with the mean over the copies,
// score = mean_s r_s (Quantus's AvgSensitivity), on the same copies.
func AvgSensitivity() Entry {
	return sensitivityEntry("metric.avg_sensitivity", "AvgSensitivity", "mean")
}

func sensitivityEntry(id, quantus, agg string) Entry {
	info := Info{
		ID: id, Quantus: quantus, Category: Robustness,
		Needs: Needs{Model: true, Explain: true}, Higher: false,
		Summary: fmt.Sprintf("the %s relative change of the map under small uniform noise on the input", agg),
		Params: noiseParams(false,
			Param{Name: "lower_bound", Default: 0.2, Doc: "the noise is uniform on [-lower_bound, upper_bound]"},
			Param{Name: "upper_bound", Default: nil, Doc: "(default: lower_bound)"}),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		m := &sensitivity{info: info, max: agg == "max"}
		err := m.readNoise(cfg, false)
		if err != nil {
			return nil, err
		}
		if m.lo, err = cfg.Float("lower_bound", 0.2); err != nil {
			return nil, err
		}
		if m.hi, err = cfg.Float("upper_bound", m.lo); err != nil {
			return nil, err
		}
		if !(m.lo >= 0 && m.hi >= 0 && m.lo+m.hi > 0) || math.IsInf(m.lo+m.hi, 0) {
			return nil, fmt.Errorf("lower_bound = %v, upper_bound = %v: want finite bounds >= 0, not both 0", m.lo, m.hi)
		}
		return m, nil
	}}
}

// noiseParams are the keys of the metrics of noisy copies: extra, then
// nr_samples, return_nan_when_prediction_changes, normalise and abs.
func noiseParams(normalise bool, extra ...Param) []Param {
	return append(append(extra,
		Param{Name: "nr_samples", Default: 200, Doc: "noisy copies of a record"},
		Param{Name: "return_nan_when_prediction_changes", Default: false, Doc: "leave out the copies whose predicted class changes (a record left with none has no score)"}),
		prepParamList(normalise, false)...)
}

// readNoise reads the keys of noiseParams.
func (m *sensitivity) readNoise(cfg sdk.Config, normalise bool) error {
	var err error
	if m.prep, err = prepParams(cfg, normalise, false); err != nil {
		return err
	}
	if m.samples, err = cfg.IntRange("nr_samples", 200, 1, 1<<20); err != nil {
		return err
	}
	m.dropChanged, err = cfg.Bool("return_nan_when_prediction_changes", false)
	return err
}

type sensitivity struct {
	prep
	info        Info
	max         bool
	samples     int
	lo, hi      float64
	dropChanged bool
}

func (m *sensitivity) Info() Info { return m.info }

func (m *sensitivity) Score(ctx context.Context, in *Input, dst []Score) error {
	if err := in.Check(m.info); err != nil {
		return err
	}
	n := in.Len()
	xs := make([]float32, in.N*m.samples*n)
	for i := range in.N {
		x, _, _ := in.record(i)
		r := rng.For(in.key(i), "metric.sensitivity", "", 0, 0) // one stream for max and avg: the same copies
		for s := range m.samples {
			xp := xs[(i*m.samples+s)*n : (i*m.samples+s+1)*n]
			for j, v := range x {
				xp[j] = float32(float64(v) + (m.lo+m.hi)*r.Float64() - m.lo)
			}
		}
	}
	return m.scoreCopies(ctx, in, xs, dst)
}

// scoreCopies scores the records from their noisy copies xs.
func (m *sensitivity) scoreCopies(ctx context.Context, in *Input, xs []float32, dst []Score) error {
	n := in.Len()
	d, a, err := m.diffs(ctx, in, xs)
	if err != nil {
		return err
	}
	for i := range in.N {
		r := d[i*m.samples : (i+1)*m.samples]
		den := norm2(a[i*n:(i+1)*n], nil)
		for s := range r {
			r[s] /= den
		}
		dst[i] = m.aggregate(r)
	}
	return nil
}

// diffs returns ||â - â'_s||_2 for the copies xs (N records x
// nr_samples copies), NaN for a copy left out (its prediction changed,
// when asked), and the records' pre-processed maps â.
func (m *sensitivity) diffs(ctx context.Context, in *Input, xs []float32) (d, a []float64, err error) {
	n, S := in.Len(), len(xs)/in.Len()/max(in.N, 1)
	a = m.maps(in)
	maps := make([]float64, len(xs))
	targets := make([]int, in.N*S)
	for i := range in.N {
		for s := range S {
			targets[i*S+s] = in.Targets[i]
		}
	}
	if err := explainAll(ctx, in, xs, targets, maps); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", m.info.ID, err)
	}
	var changed []bool
	if m.dropChanged {
		if changed, err = predictionChanged(ctx, in, xs, S); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", m.info.ID, err)
		}
	}
	ap := m.perturbedMaps(maps, in.N, S, n)
	d = make([]float64, in.N*S)
	for i := range in.N {
		for s := range S {
			k := i*S + s
			if changed != nil && changed[k] {
				d[k] = math.NaN()
				continue
			}
			d[k] = norm2(a[i*n:(i+1)*n], ap[k*n:(k+1)*n])
		}
	}
	return d, a, nil
}

// perturbedMaps pre-processes the maps of the copies (N records x S
// copies of n values) as maps does the records': with normalise =
// "batch" over the N records' copies s together (Quantus normalises each
// batch of perturbed inputs by itself).
func (p prep) perturbedMaps(maps []float64, N, S, n int) []float64 {
	if p.normalise != NormaliseBatch {
		q := p
		in := Input{N: N * S, C: 1, T: n, Maps: maps}
		return q.maps(&in)
	}
	out := slices.Clone(maps)
	for s := range S {
		var top float64
		for i := range N {
			top = max(top, maxAbs(out[(i*S+s)*n:(i*S+s+1)*n]))
		}
		for i := range N {
			scale(out[(i*S+s)*n:(i*S+s+1)*n], top)
		}
	}
	if p.abs {
		for j, v := range out {
			out[j] = math.Abs(v)
		}
	}
	return out
}

// aggregate is the max or the mean of the ratios that are not NaN.
func (m *sensitivity) aggregate(r []float64) Score {
	var v float64
	k := 0
	for _, x := range r {
		if math.IsNaN(x) {
			continue
		}
		if m.max {
			v = max(v, x)
		} else {
			v += x
		}
		k++
	}
	if k == 0 {
		return undefined("every noisy copy changed the prediction, or the map is zero", nil)
	}
	if !m.max {
		v /= float64(k)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return undefined("the map is zero: no relative change", nil)
	}
	return Score{Value: v}
}

// norm2 is ||a - b||_2 (b nil: ||a||_2).
func norm2(a, b []float64) float64 {
	var s float64
	for j, v := range a {
		if b != nil {
			v -= b[j]
		}
		s += v * v
	}
	return math.Sqrt(s)
}

// explainAll asks in.Explain for the maps of xs (len(targets) inputs)
// ExplainBatch at a time, and checks that they are finite.
func explainAll(ctx context.Context, in *Input, xs []float32, targets []int, dst []float64) error {
	n := in.Len()
	for b0 := 0; b0 < len(targets); b0 += ExplainBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		b1 := min(b0+ExplainBatch, len(targets))
		if err := in.Explain(ctx, in.Model, xs[b0*n:b1*n], targets[b0:b1], dst[b0*n:b1*n]); err != nil {
			return fmt.Errorf("explaining perturbed inputs: %w", err)
		}
	}
	for j, v := range dst {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("the explainer gave %v at value %d of perturbed input %d: want finite maps", v, j%n, j/n)
		}
	}
	return nil
}

// predictionChanged reports for each copy (S a record) whether the
// model's predicted class differs from the record's.
func predictionChanged(ctx context.Context, in *Input, xs []float32, S int) ([]bool, error) {
	n, K := in.Len(), in.Model.Classes()
	argmax := func(x []float32, B int) ([]int, error) {
		p := make([]float32, B*K)
		out := make([]int, B)
		for b0 := 0; b0 < B; b0 += ForwardBatch {
			b1 := min(b0+ForwardBatch, B)
			if err := in.Model.Probs(ctx, p[b0*K:b1*K], x[b0*n:b1*n]); err != nil {
				return nil, err
			}
		}
		for b := range B {
			best := 0
			for k := 1; k < K; k++ {
				if p[b*K+k] > p[b*K+best] {
					best = k
				}
			}
			out[b] = best
		}
		return out, nil
	}
	orig, err := argmax(in.X, in.N)
	if err != nil {
		return nil, err
	}
	pert, err := argmax(xs, in.N*S)
	if err != nil {
		return nil, err
	}
	changed := make([]bool, len(pert))
	for k, c := range pert {
		changed[k] = c != orig[k/S]
	}
	return changed, nil
}
