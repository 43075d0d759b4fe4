package metric

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
)

// RegionPerturbation is Quantus's RegionPerturbation (Samek et al. 2016):
// the records' samples in regions of patch_size steps (all channels of
// the steps [patch_size*j, patch_size*(j+1)), the last region the
// remainder), ordered by their summed relevance s_j = sum_{R_j} â from
// the most relevant down (order "morf") or up ("lerf"), are set to the
// baseline one region after another; the score is the curve
//
//	Δ_k = p_y(x) - p_y(x^k),  k = 1..regions_evaluation,
//
// x^k the input with the first k regions of the order removed, and its
// area (higher: a more faithful map under MoRF).
func RegionPerturbation() Entry {
	return Entry{
		Info: Info{
			ID: "metric.region_perturbation", Quantus: "RegionPerturbation", Category: Faithfulness,
			Needs: Needs{Model: true}, Curve: true, Higher: true,
			Summary: "drop of p_y as the most relevant regions are removed one after another",
			Params:  regionParamList(20, 100, "morf"),
		},
		New: func(cfg sdk.Config) (Metric, error) {
			r, err := regionParams(cfg, 100, "morf")
			if err != nil {
				return nil, err
			}
			return &regionMetric{regions: r, info: RegionPerturbation().Info}, nil
		},
	}
}

// Selectivity is Quantus's Selectivity (Montavon et al. 2018): as
// RegionPerturbation over all regions from the most relevant down, but
// the curve is the probability itself, p_y(x^k), k = 1..regions (lower:
// a more faithful map).
func Selectivity() Entry {
	return Entry{
		Info: Info{
			ID: "metric.selectivity", Quantus: "Selectivity", Category: Faithfulness,
			Needs: Needs{Model: true}, Curve: true, Higher: false,
			Summary: "p_y as the most relevant regions are removed one after another (area: lower is better)",
			Params:  regionParamList(20, 0, ""),
		},
		New: func(cfg sdk.Config) (Metric, error) {
			r, err := regionParams(cfg, 0, "")
			if err != nil {
				return nil, err
			}
			return &regionMetric{regions: r, info: Selectivity().Info, prob: true}, nil
		},
	}
}

// regions are the settings of the region metrics.
type regions struct {
	keys
	patch    int
	evaluate int  // regions removed; 0: all
	explicit bool // evaluate was set (otherwise it is cut to the regions a record has)
	lerf     bool
}

var regionKeys = keySpec{normalise: true, baseline: BaselineBlack, softmax: onProbs}

func regionParamList(patch, evaluate int, order string) []Param {
	ps := []Param{{Name: "patch_size", Default: patch, Doc: "steps a region (all channels)"}}
	if order != "" {
		ps = append(ps,
			Param{Name: "regions_evaluation", Default: evaluate, Doc: "regions removed, the curve's length (the default is cut to the regions a record has)"},
			Param{Name: "order", Default: order, Doc: `"morf" (most relevant first) or "lerf" (least relevant first)`})
	}
	return regionKeys.params(ps...)
}

func regionParams(cfg sdk.Config, evaluate int, order string) (regions, error) {
	var r regions
	var err error
	if r.keys, err = regionKeys.read(cfg); err != nil {
		return r, err
	}
	if r.patch, err = cfg.IntRange("patch_size", 20, 1, 1<<20); err != nil {
		return r, err
	}
	if order == "" {
		return r, nil
	}
	if r.evaluate, err = cfg.IntRange("regions_evaluation", evaluate, 1, 1<<20); err != nil {
		return r, err
	}
	_, r.explicit = cfg["regions_evaluation"]
	o, err := cfg.String("order", order)
	if err != nil {
		return r, err
	}
	switch o {
	case "morf":
	case "lerf":
		r.lerf = true
	default:
		return r, fmt.Errorf("order = %s: want \"morf\" (most relevant first) or \"lerf\"", sdk.Quote(o))
	}
	return r, nil
}

// regionMetric is RegionPerturbation (prob false) and Selectivity.
type regionMetric struct {
	regions
	info Info
	prob bool // the curve is p_y(x^k), not p_y(x) - p_y(x^k)
}

func (m *regionMetric) Info() Info { return m.info }

func (m *regionMetric) Score(ctx context.Context, in *Input, dst []Score) error {
	a, _, err := m.start(m.info, in)
	if err != nil {
		return err
	}
	if m.patch > in.T {
		return fmt.Errorf("%s: patch_size = %d is longer than the records (%d steps)", m.info.ID, m.patch, in.T)
	}
	R := (in.T + m.patch - 1) / m.patch
	K := R
	if m.evaluate > 0 {
		if m.evaluate > R && m.explicit {
			return fmt.Errorf("%s: regions_evaluation = %d, but a record of %d steps has %d regions of %d (patch_size): want 1..%d", m.info.ID, m.evaluate, in.T, R, m.patch, R)
		}
		K = min(m.evaluate, R)
	}
	s := make([]float64, R)
	n := in.Len()
	orders, bases := make([]int, in.N*K), make([]float32, in.N*n)
	order := make([]int, R)
	eds := make([]editor, in.N)
	for i := range in.N {
		regionSums(s, a[i*n:(i+1)*n], in.C, in.T, m.patch)
		if m.lerf {
			orderAsc(order, s)
		} else {
			orderDesc(order, s)
		}
		copy(orders[i*K:(i+1)*K], order)
		if err := m.baselineOf(m.info, bases[i*n:(i+1)*n], in, i); err != nil {
			return err
		}
		eds[i] = &regionEditor{base: bases[i*n : (i+1)*n], order: orders[i*K : (i+1)*K], C: in.C, T: in.T, patch: m.patch}
	}
	out, err := m.chainOutputs(ctx, in, in.X, eds)
	if err != nil {
		return fmt.Errorf("%s: %w", m.info.ID, err)
	}
	for i := range in.N {
		c := out[i*(K+1)+1 : (i+1)*(K+1)]
		if !m.prob {
			for k := range c {
				c[k] = float64(float32(out[i*(K+1)]) - float32(c[k]))
			}
		}
		dst[i] = Score{Value: trapz(c), Curve: c}
	}
	return nil
}

// regionSums writes s[j] = the sum of a over all channels of the steps
// [patch*j, min(patch*(j+1), T)).
func regionSums(s, a []float64, C, T, patch int) {
	clear(s)
	for c := range C {
		for t, v := range a[c*T : (c+1)*T] {
			s[t/patch] += v
		}
	}
}
