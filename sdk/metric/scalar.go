package metric

import (
	"context"

	"github.com/uaxai/uaxai/sdk"
)

// recordFunc scores one record from its pre-processed map â (and its mask
// when the metric needs one).
type recordFunc func(a []float64, mask []bool) Score

// mapMetric is a metric computed from each record's map alone (complexity,
// localisation): no model call.
type mapMetric struct {
	prep
	info Info
	f    recordFunc
}

func (m *mapMetric) Info() Info { return m.info }

func (m *mapMetric) Score(ctx context.Context, in *Input, dst []Score) error {
	if err := in.Check(m.info); err != nil {
		return err
	}
	a := m.maps(in)
	n := in.Len()
	for i := range in.N {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, _, mask := in.record(i)
		dst[i] = m.f(a[i*n:(i+1)*n], mask)
	}
	return nil
}

// mapEntry is the Entry of a mapMetric: info with the normalise and abs
// keys (defaults normalise, abs) and those of extra, whose values build
// the record function.
func mapEntry(info Info, normalise, abs bool, extra []Param, build func(cfg sdk.Config) (recordFunc, error)) Entry {
	info.Params = append(extra, prepParamList(normalise, abs)...)
	return Entry{
		Info: info,
		New: func(cfg sdk.Config) (Metric, error) {
			p, err := prepParams(cfg, normalise, abs)
			if err != nil {
				return nil, err
			}
			f, err := build(cfg)
			if err != nil {
				return nil, err
			}
			return &mapMetric{prep: p, info: info, f: f}, nil
		},
	}
}

// fixed is a build function without keys of its own.
func fixed(f recordFunc) func(sdk.Config) (recordFunc, error) {
	return func(sdk.Config) (recordFunc, error) { return f, nil }
}
