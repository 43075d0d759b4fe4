package metric

import (
	"context"
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
)

// ROAD is Quantus's ROAD (Rong et al. 2022, RemOve And Debias): for each
// percentage p, the k = floor(C*T*p/100) most relevant samples are
// removed and imputed, each channel by itself, by linear interpolation
// between the nearest kept samples (the nearest kept value beyond the
// ends) plus noise * z, z standard normal from the record's key (Quantus's
// noisy linear imputation on a series); the curve is
//
//	1[argmax f(x̃_p) = y],  p in percentages,
//
// and the value its mean, the share of the removals that keep the
// prediction (lower: the map found what the prediction rests on).
func ROAD() Entry {
	info := Info{
		ID: "metric.road", Quantus: "ROAD", Category: Faithfulness,
		Needs: Needs{Model: true}, Curve: true, Higher: false,
		Summary: "whether the prediction survives removing the most relevant p% of samples, imputed from their neighbours",
		Params: append([]Param{
			{Name: "percentages", Default: "1, 3, ..., 99", Doc: "the percentages removed (a list of numbers in (0, 100])"},
			{Name: "noise", Default: 0.01, Doc: "the imputation's noise scale"},
		}, prepParamList(true, false)...),
	}
	return Entry{Info: info, New: func(cfg sdk.Config) (Metric, error) {
		m := &road{info: info}
		var err error
		if m.prep, err = prepParams(cfg, true, false); err != nil {
			return nil, err
		}
		for p := 1; p < 100; p += 2 {
			m.percent = append(m.percent, float64(p))
		}
		if v, ok := cfg["percentages"]; ok {
			list, ok := v.([]any)
			m.percent = nil
			for _, e := range list {
				p, err := sdk.Config{"p": e}.Float("p", 0)
				if err != nil || !(p > 0 && p <= 100) {
					ok = false
					break
				}
				m.percent = append(m.percent, p)
			}
			if !ok || len(m.percent) == 0 {
				return nil, fmt.Errorf("percentages = %s: want a list of percentages in (0, 100], e.g. [10, 20, 50]", sdk.Quote(v))
			}
		}
		if m.noise, err = cfg.Float("noise", 0.01); err != nil {
			return nil, err
		}
		if !(m.noise >= 0) || math.IsInf(m.noise, 0) {
			return nil, fmt.Errorf("noise = %v: want a finite scale >= 0", m.noise)
		}
		return m, nil
	}}
}

type road struct {
	prep
	info    Info
	percent []float64
	noise   float64
}

func (m *road) Info() Info { return m.info }

func (m *road) Score(ctx context.Context, in *Input, dst []Score) error {
	if err := in.Check(m.info); err != nil {
		return err
	}
	n := in.Len()
	a := m.maps(in)
	fw := newForwards(in.Model)
	fw.hits = true
	P := len(m.percent)
	curves := make([]float64, in.N*P)
	order := make([]int, n)
	z := make([]float64, n)
	for i := range in.N {
		if err := ctx.Err(); err != nil {
			return err
		}
		orderDesc(order, a[i*n:(i+1)*n])
		r := rng.For(in.key(i), m.info.ID, "", 0, 0)
		for j := range z {
			z[j] = r.NormFloat64()
		}
		x, _, _ := in.record(i)
		if err := m.impute(ctx, fw, in.Targets[i], x, in.C, in.T, order, z, curves[i*P:(i+1)*P]); err != nil {
			return fmt.Errorf("%s: record %d: %w", m.info.ID, i, err)
		}
	}
	if err := fw.flush(ctx); err != nil {
		return fmt.Errorf("%s: %w", m.info.ID, err)
	}
	for i := range in.N {
		c := curves[i*P : (i+1)*P]
		var s float64
		for _, v := range c {
			s += v
		}
		dst[i] = Score{Value: s / float64(P), Curve: c}
	}
	return nil
}

// impute queues, for each percentage, x with the first k samples of
// order imputed (noise z), whose hit goes to curve.
func (m *road) impute(ctx context.Context, fw *forwards, y int, x []float32, C, T int, order []int, z, curve []float64) error {
	n := len(x)
	removed := make([]bool, n)
	for pi, p := range m.percent {
		k := int(float64(n) * p / 100)
		clear(removed)
		for _, j := range order[:k] {
			removed[j] = true
		}
		q, err := fw.next(ctx, y, &curve[pi])
		if err != nil {
			return err
		}
		copy(q, x)
		for c := range C {
			row, gone, out := x[c*T:(c+1)*T], removed[c*T:(c+1)*T], q[c*T:(c+1)*T]
			left := -1 // the last kept step before t
			for t := 0; t < T; {
				if !gone[t] {
					left = t
					t++
					continue
				}
				right := t
				for right < T && gone[right] {
					right++
				}
				// steps t..right-1 are removed; left and right (if < T) kept
				for s := t; s < right; s++ {
					var v float64
					switch {
					case left < 0 && right == T:
						v = 0 // the whole channel removed: nothing to interpolate
					case left < 0:
						v = float64(row[right])
					case right == T:
						v = float64(row[left])
					default:
						w := float64(s-left) / float64(right-left)
						v = float64(row[left]) + w*(float64(row[right])-float64(row[left]))
					}
					out[s] = float32(v + m.noise*z[c*T+s])
				}
				t = right
			}
		}
	}
	return nil
}
