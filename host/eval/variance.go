package eval

import "fmt"

// TotalVariance splits the variance of the explanation at every
// coordinate by the law of total variance (Proposition prop:totalvar),
// from maps[t][k][n], the map under model draw t (T of them) and explainer
// seed k (K per model draw):
//
//	mu_t[n]      = (1/K) sum_k R_{t,k}[n]                  (mean over seeds)
//	mu[n]        = (1/T) sum_t mu_t[n]
//	model[n]     = (1/T) sum_t (mu_t[n] - mu[n])^2          = Var_t(E_k R)
//	explainer[n] = (1/T) sum_t (1/K) sum_k (R_{t,k}[n] - mu_t[n])^2 = E_t(Var_k R)
//	total[n]     = (1/(T K)) sum_{t,k} (R_{t,k}[n] - mu[n])^2 = Var over all T K maps
//
// With these population moments (divisors T and K, not T-1 and K-1),
// total = model + explainer holds exactly in exact arithmetic, and up to
// rounding here: total is computed on its own from the T K values, not
// as the sum. All three are >= 0. The split is informative for T >= 2
// and K >= 2; with T = 1 the model term is 0, with K = 1 the explainer
// term, and a model draw whose K maps agree at n adds exactly 0 to
// explainer[n]. A NaN map value gives NaN at its coordinate.
//
// total, model and explainer are nil (allocated) or of length N, and are
// returned. TotalVariance panics if T = 0, K = 0, the model draws have
// different numbers of seeds or the maps differ in length. It allocates
// nothing when the outputs are given.
func TotalVariance(total, model, explainer []float64, maps [][][]float64) ([]float64, []float64, []float64) {
	T := len(maps)
	if T == 0 {
		panic("eval: TotalVariance: no model draws")
	}
	K := len(maps[0])
	if K == 0 {
		panic("eval: TotalVariance: model draw 0 has no explainer seed")
	}
	N := len(maps[0][0])
	for t, seeds := range maps {
		if len(seeds) != K {
			panic(fmt.Sprintf("eval: TotalVariance: model draw %d has %d seeds, want %d (as draw 0)", t, len(seeds), K))
		}
		for k, m := range seeds {
			if len(m) != N {
				panic(fmt.Sprintf("eval: TotalVariance: map (%d, %d) has length %d, want %d", t, k, len(m), N))
			}
		}
	}
	outs := [3]*[]float64{&total, &model, &explainer}
	for i, name := range [3]string{"total", "model", "explainer"} {
		o := outs[i]
		if *o == nil {
			*o = make([]float64, N)
		}
		if len(*o) != N {
			panic(fmt.Sprintf("eval: TotalVariance: len(%s) = %d, want N = %d", name, len(*o), N))
		}
	}
	fT, fK := float64(T), float64(K)
	for n := range N {
		// Means are taken of the deviations from a value of the sample
		// (shifted data): accurate for maps on a large offset, and exact
		// when the values agree, so that a deterministic explainer gives
		// explainer = 0 exactly.
		x0 := maps[0][0][n]
		var mu float64 // the grand mean, equal to the mean of the mu_t
		for _, seeds := range maps {
			for _, m := range seeds {
				mu += m[n] - x0
			}
		}
		mu = x0 + mu/(fT*fK)
		var mod, expl, tot float64
		for _, seeds := range maps {
			xt := seeds[0][n]
			var mt float64
			for _, m := range seeds {
				mt += m[n] - xt
			}
			mt = xt + mt/fK
			var within float64
			for _, m := range seeds {
				d := m[n] - mt
				within += d * d
				e := m[n] - mu
				tot += e * e
			}
			expl += within / fK
			d := mt - mu
			mod += d * d
		}
		model[n] = mod / fT
		explainer[n] = expl / fT
		total[n] = tot / (fT * fK)
	}
	return total, model, explainer
}
