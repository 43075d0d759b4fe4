package metric

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
)

// FaithfulnessCorrelation is Quantus's FaithfulnessCorrelation (Bhatt et
// al. 2020): for nr_runs random subsets S_r of subset_size samples
// (drawn from the record's key), each removed from the original input,
//
//	score = pearson_r( sum_{S_r} â,  f_y(x) - f_y(x with S_r removed) )
//
// (higher: the map predicts what removing samples does). Undefined when
// either side is constant.
func FaithfulnessCorrelation() Entry {
	info := Info{
		ID: "metric.faithfulness_correlation", Quantus: "FaithfulnessCorrelation", Category: Faithfulness,
		Needs: Needs{Model: true}, Higher: true,
		Summary: "correlation of a random subset's relevance with the output's drop when it is removed",
		Params: faithCorrKeys.params(
			Param{Name: "nr_runs", Default: 100, Doc: "random subsets"},
			Param{Name: "subset_size", Default: 224, Doc: "samples a subset (at most C*T)"}),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		m := &faithCorr{info: info}
		var err error
		if m.keys, err = faithCorrKeys.read(cfg); err != nil {
			return nil, err
		}
		if m.runs, err = cfg.IntRange("nr_runs", 100, 2, 1<<20); err != nil {
			return nil, err
		}
		m.size, err = cfg.IntRange("subset_size", 224, 1, 1<<24)
		return m, err
	}}
}

var faithCorrKeys = keySpec{normalise: true, baseline: BaselineBlack, softmax: onLogits}

type faithCorr struct {
	keys
	info       Info
	runs, size int
}

func (m *faithCorr) Info() Info { return m.info }

func (m *faithCorr) Score(ctx context.Context, in *Input, dst []Score) error {
	info := m.info
	a, _, err := m.start(info, in)
	if err != nil {
		return err
	}
	n := in.Len()
	if m.size > n {
		return fmt.Errorf("%s: subset_size = %d is more than a record's %d x %d = %d samples", info.ID, m.size, in.C, in.T, n)
	}
	subsets, bases := make([]int, in.N*m.runs*m.size), make([]float32, in.N*n)
	eds := make([]editor, in.N)
	for i := range in.N {
		sub := subsets[i*m.runs*m.size : (i+1)*m.runs*m.size]
		drawSubsets(sub, rng.For(in.key(i), info.ID, "", 0, 0), n, m.size)
		if err := m.baselineOf(info, bases[i*n:(i+1)*n], in, i); err != nil {
			return err
		}
		eds[i] = &setEditor{base: bases[i*n : (i+1)*n], sets: sub, size: m.size, T: in.T}
	}
	out, err := m.chainOutputs(ctx, in, in.X, eds)
	if err != nil {
		return fmt.Errorf("%s: %w", info.ID, err)
	}
	for i := range in.N {
		dst[i] = setCorrelation(a[i*n:(i+1)*n], subsets[i*m.runs*m.size:(i+1)*m.runs*m.size], m.size, out[i*(m.runs+1):(i+1)*(m.runs+1)], pearson)
	}
	return nil
}

// drawSubsets fills sub with len(sub)/size subsets of size distinct
// indices below n, each by a partial Fisher-Yates shuffle of r.
func drawSubsets(sub []int, r *rand.Rand, n, size int) {
	perm := make([]int, n)
	for s := 0; s < len(sub); s += size {
		for j := range perm {
			perm[j] = j
		}
		for j := range size {
			k := j + r.IntN(n-j)
			perm[j], perm[k] = perm[k], perm[j]
		}
		copy(sub[s:s+size], perm[:size])
	}
}

// setCorrelation is corr(A, Δ) over the sets: A_r the sum of a over set
// r, Δ_r = out[0] - out[1+r] in float32 (the model's outputs' precision).
func setCorrelation(a []float64, sets []int, size int, out []float64, corr func(a, b []float64) (float64, bool)) Score {
	R := len(sets) / size
	A, D := make([]float64, R), make([]float64, R)
	for r := range R {
		for _, j := range sets[r*size : (r+1)*size] {
			A[r] += a[j]
		}
		D[r] = float64(float32(out[0]) - float32(out[1+r]))
	}
	v, ok := corr(A, D)
	return correlated(v, ok, "the relevance or the output change")
}
