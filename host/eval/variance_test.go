package eval

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// popVar is the population variance (divisor n), from gonum's sample
// variance.
func popVar(x []float64) float64 {
	n := float64(len(x))
	return stat.Variance(x, nil) * (n - 1) / n
}

// TestTotalVarianceIdentity: total = model + explainer to 1e-12 on random
// maps, and each term against gonum on the definitions.
func TestTotalVarianceIdentity(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for trial := range 100 {
		T, K, N := 2+r.IntN(6), 2+r.IntN(6), 1+r.IntN(40)
		maps := make([][][]float64, T)
		for ti := range maps {
			off := r.NormFloat64() * float64(1+trial%3)
			maps[ti] = make([][]float64, K)
			for k := range maps[ti] {
				maps[ti][k] = make([]float64, N)
				for n := range maps[ti][k] {
					maps[ti][k][n] = off + r.NormFloat64()*0.3 + float64(trial%4)*100
				}
			}
		}
		total, model, expl := TotalVariance(nil, nil, nil, maps)
		for n := range N {
			if d := total[n] - (model[n] + expl[n]); math.Abs(d) > 1e-12*max(1, total[n]) {
				t.Errorf("trial %d, n = %d: total %v, model + explainer %v", trial, n, total[n], model[n]+expl[n])
			}
			var all, mus []float64
			var within float64
			for ti := range T {
				var col []float64
				for k := range K {
					col = append(col, maps[ti][k][n])
				}
				all = append(all, col...)
				mus = append(mus, stat.Mean(col, nil))
				within += popVar(col)
			}
			if w := popVar(all); !near(total[n], w, 1e-10) {
				t.Errorf("trial %d, n = %d: total %v, gonum %v", trial, n, total[n], w)
			}
			if w := popVar(mus); !near(model[n], w, 1e-10) {
				t.Errorf("trial %d, n = %d: model %v, gonum %v", trial, n, model[n], w)
			}
			if w := within / float64(T); !near(expl[n], w, 1e-10) {
				t.Errorf("trial %d, n = %d: explainer %v, gonum %v", trial, n, expl[n], w)
			}
			if total[n] < 0 || model[n] < 0 || expl[n] < 0 {
				t.Errorf("trial %d, n = %d: a negative term", trial, n)
			}
		}
	}
}

// TestTotalVarianceExtremes: explainer noise only (every model draw has
// the same maps, in another seed order) gives model = 0; a deterministic
// explainer (the same map for every seed) gives explainer = 0 exactly.
func TestTotalVarianceExtremes(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	const T, K, N = 4, 5, 30
	seeds := members(r, K, N, false)
	noise := make([][][]float64, T)
	for ti := range noise {
		noise[ti] = make([][]float64, K)
		for k := range K {
			noise[ti][k] = seeds[(k+ti)%K]
		}
	}
	total, model, expl := TotalVariance(make([]float64, N), make([]float64, N), make([]float64, N), noise)
	for n := range N {
		if model[n] > 1e-30 || !near(expl[n], total[n], 1e-13) || total[n] == 0 {
			t.Errorf("explainer noise only, n = %d: total %v model %v explainer %v", n, total[n], model[n], expl[n])
		}
	}
	draws := members(r, T, N, false)
	det := make([][][]float64, T)
	for ti := range det {
		det[ti] = make([][]float64, K)
		for k := range K {
			det[ti][k] = draws[ti]
		}
	}
	total, model, expl = TotalVariance(nil, nil, nil, det)
	for n := range N {
		if expl[n] != 0 || !near(model[n], total[n], 1e-13) || total[n] == 0 {
			t.Errorf("model only, n = %d: total %v model %v explainer %v", n, total[n], model[n], expl[n])
		}
	}
	// Hand example, N = 1: T = 2, K = 2, maps {0, 2} and {4, 6}: mu_t = 1,
	// 5, mu = 3; model = 4, explainer = 1, total = (9+1+1+9)/4 = 5.
	tot, mod, ex := TotalVariance(nil, nil, nil, [][][]float64{{{0}, {2}}, {{4}, {6}}})
	if tot[0] != 5 || mod[0] != 4 || ex[0] != 1 {
		t.Errorf("hand example: total %v model %v explainer %v; want 5, 4, 1", tot[0], mod[0], ex[0])
	}
	// One model draw: model 0; one seed: explainer 0.
	if _, mod, _ := TotalVariance(nil, nil, nil, [][][]float64{{{0}, {2}}}); mod[0] != 0 {
		t.Errorf("T = 1: model %v", mod[0])
	}
	if _, _, ex := TotalVariance(nil, nil, nil, [][][]float64{{{0}}, {{2}}}); ex[0] != 0 {
		t.Errorf("K = 1: explainer %v", ex[0])
	}
	expectPanic(t, "T = 0", func() { TotalVariance(nil, nil, nil, nil) })
	expectPanic(t, "K = 0", func() { TotalVariance(nil, nil, nil, [][][]float64{{}}) })
	expectPanic(t, "ragged K", func() { TotalVariance(nil, nil, nil, [][][]float64{{{1}, {2}}, {{1}}}) })
	expectPanic(t, "ragged N", func() { TotalVariance(nil, nil, nil, [][][]float64{{{1}, {2, 3}}}) })
	expectPanic(t, "short output", func() { TotalVariance(make([]float64, 2), nil, nil, [][][]float64{{{1}, {2}}}) })
}
