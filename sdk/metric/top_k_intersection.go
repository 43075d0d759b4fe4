package metric

import (
	"context"
	"fmt"

	"github.com/uaxai/uaxai/sdk"
)

// TopKIntersection is Quantus's TopKIntersection (Theiner et al. 2021):
// the share of the k most relevant samples (ties in index order) that lie
// in the mask (higher: better localised). Quantus's default k = 1000
// fails on records shorter than that; here k defaults to 100 and must not
// exceed C*T.
func TopKIntersection() Entry {
	return Entry{
		Info: Info{
			ID: "metric.top_k_intersection", Quantus: "TopKIntersection", Category: Localisation,
			Needs: Needs{Mask: true}, Higher: true,
			Summary: "the share of the k most relevant samples inside the mask",
			Params:  append([]Param{{Name: "k", Default: 100, Doc: "the samples taken (at most C*T)"}}, prepParamList(true, false)...),
		},
		New: func(cfg sdk.Config) (Metric, error) {
			p, err := prepParams(cfg, true, false)
			if err != nil {
				return nil, err
			}
			k, err := cfg.IntRange("k", 100, 1, 1<<30)
			if err != nil {
				return nil, err
			}
			return &topK{prep: p, k: k}, nil
		},
	}
}

type topK struct {
	prep
	k int
}

func (m *topK) Info() Info { return TopKIntersection().Info }

func (m *topK) Score(ctx context.Context, in *Input, dst []Score) error {
	if in.Len() < m.k {
		return fmt.Errorf("%s: k = %d is more than a record's %d x %d = %d samples", m.Info().ID, m.k, in.C, in.T, in.Len())
	}
	mm := mapMetric{prep: m.prep, info: m.Info(), f: func(a []float64, mask []bool) Score {
		order := make([]int, len(a))
		orderDesc(order, a)
		return topKShare(order, mask, m.k)
	}}
	return mm.Score(ctx, in, dst)
}

// topKShare is the share of order[:k] inside mask.
func topKShare(order []int, mask []bool, k int) Score {
	hit := 0
	for _, j := range order[:k] {
		if mask[j] {
			hit++
		}
	}
	return Score{Value: float64(hit) / float64(k)}
}
