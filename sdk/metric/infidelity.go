package metric

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
)

// Infidelity is Quantus's Infidelity (Yeh et al. 2019) as Quantus 0.6.0
// computes it on a series: for each patch size p, the record's steps
// from the left are set to the baseline p at a time, cumulatively, in
// every channel; with x^t the input after t patches,
//
//	Δ_t = f_y(x) - f_y(x^t),   A_t = sum_j a_j (x_j - x^t_j)
//	score = mean over the patch sizes of mean_t (Δ_t - A_t)^2
//
// (lower: the map's linear prediction of the output's change is closer).
// Quantus's n_perturb_samples repeats the same deterministic computation
// and is not a key here.
func Infidelity() Entry {
	info := Info{
		ID: "metric.infidelity", Quantus: "Infidelity", Category: Faithfulness,
		Needs: Needs{Model: true}, Higher: false,
		Summary: "mean squared error of the map's linear prediction of the output's change as steps are removed",
		Params: infidelityKeys.params(
			Param{Name: "perturb_patch_sizes", Default: []any{int64(1)}, Doc: "steps a patch (a list; the score averages them)"}),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		m := &infidelity{info: info, patches: []int{1}}
		var err error
		if m.keys, err = infidelityKeys.read(cfg); err != nil {
			return nil, err
		}
		if v, ok := cfg["perturb_patch_sizes"]; ok {
			m.patches = nil
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return nil, fmt.Errorf("perturb_patch_sizes = %s: want a list of patch sizes >= 1, e.g. [1, 4]", sdk.Quote(v))
			}
			for _, e := range list {
				p, err := sdk.Config{"p": e}.IntRange("p", 0, 1, 1<<20)
				if err != nil {
					return nil, fmt.Errorf("perturb_patch_sizes = %s: want a list of patch sizes >= 1", sdk.Quote(v))
				}
				m.patches = append(m.patches, p)
			}
		}
		return m, nil
	}}
}

var infidelityKeys = keySpec{baseline: BaselineBlack, softmax: onLogits}

type infidelity struct {
	keys
	info    Info
	patches []int
}

func (m *infidelity) Info() Info { return m.info }

func (m *infidelity) Score(ctx context.Context, in *Input, dst []Score) error {
	a, _, err := m.start(m.info, in)
	if err != nil {
		return err
	}
	for _, p := range m.patches {
		if p > in.T {
			return fmt.Errorf("%s: a patch of %d steps is longer than the records (%d steps)", m.info.ID, p, in.T)
		}
	}
	n := in.Len()
	per := 1
	for _, p := range m.patches {
		per += (in.T + p - 1) / p
	}
	bases := make([]float32, in.N*n)
	eds := make([]editor, in.N)
	for i := range in.N {
		base := bases[i*n : (i+1)*n]
		if err := m.baselineOf(m.info, base, in, i); err != nil {
			return err
		}
		eds[i] = newPatchEditor(base, m.patches, in.C, in.T)
	}
	out, err := m.chainOutputs(ctx, in, in.X, eds)
	if err != nil {
		return fmt.Errorf("%s: %w", m.info.ID, err)
	}
	for i := range in.N {
		x, _, _ := in.record(i)
		ai := a[i*n : (i+1)*n]
		base := bases[i*n : (i+1)*n]
		o := out[i*per : (i+1)*per]
		var score float64
		k := 1
		for _, p := range m.patches {
			var A, se float64
			steps := 0
			for t0 := 0; t0 < in.T; t0 += p {
				for c := range in.C {
					for t := t0; t < min(t0+p, in.T); t++ {
						j := c*in.T + t
						A += ai[j] * float64(x[j]-base[j]) // cumulative: every removed sample so far
					}
				}
				d := float64(float32(o[0])-float32(o[k])) - A
				se += d * d
				steps++
				k++
			}
			score += se / float64(steps)
		}
		dst[i] = Score{Value: score / float64(len(m.patches))}
	}
	return nil
}

// patchEditor removes patches one after another, for each patch size in
// turn: copy 0 is x; for patch size p, the copies that follow have the
// first 1, 2, ... patches of p steps (all channels of [0, p), [p, 2p),
// ...) set to base, each size starting again from x (restarter).
type patchEditor struct {
	base    []float32
	patches []int
	C, T    int
	// at is the copy's patch size index and patch start, from copy 1.
	at [][2]int
}

func newPatchEditor(base []float32, patches []int, C, T int) *patchEditor {
	e := &patchEditor{base: base, patches: patches, C: C, T: T}
	for pi, p := range patches {
		for t0 := 0; t0 < T; t0 += p {
			e.at = append(e.at, [2]int{pi, t0})
		}
	}
	return e
}

func (e *patchEditor) steps() int { return 1 + len(e.at) }

func (e *patchEditor) restart(k int) bool { return k > 1 && e.at[k-1][0] > 0 && e.at[k-1][1] == 0 }

func (e *patchEditor) edit(k int, cur []float32) (int, int) {
	if k == 0 {
		return 0, 0
	}
	pi, t0 := e.at[k-1][0], e.at[k-1][1]
	lo, hi := t0, min(t0+e.patches[pi], e.T)
	for c := range e.C {
		copy(cur[c*e.T+lo:c*e.T+hi], e.base[c*e.T+lo:c*e.T+hi])
	}
	return lo, hi
}
