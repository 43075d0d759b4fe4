package kern

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestBitsIndependentOfTheLength: a step's value of Corr3, CorrK,
// ConvMulti, ConvMultiBias and Exp does not depend on how many steps the
// call has nor on the step's place among them (the vector kernels' tails
// and the short calls give the bits of the vector body): the graph's
// perturbed copies compute a copy's steps in windows whose width depends
// on the other copies of the call.
func TestBitsIndependentOfTheLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	const T = 41
	for _, K := range []int{1, 3, 5} {
		for _, O := range []int{1, 4, 6} {
			C := 5
			w, x, bias, d0 := vec(O*C*K), vec(C*(T+K-1)), vec(O), vec(O*T)
			full, fullB := cloneF(d0), make([]float32, O*T)
			ConvMulti(full, T, x, T+K-1, w, O, C, K, T)
			ConvMultiBias(fullB, nil, T, x, T+K-1, w, nil, bias, O, C, K, T)
			fullK := cloneF(d0[:T])
			CorrK(fullK, x, w[:K])
			full3 := cloneF(d0[:T])
			Corr3(full3, x, 0.3, -1.7, 0.9)
			for s := 0; s < 11; s++ {
				for n := 1; s+n <= T; n += 1 + n/3 {
					part, partB := make([]float32, O*n), make([]float32, O*n)
					for o := 0; o < O; o++ {
						copy(part[o*n:(o+1)*n], d0[o*T+s:o*T+s+n])
					}
					ConvMulti(part, n, x[s:], T+K-1, w, O, C, K, n)
					ConvMultiBias(partB, nil, n, x[s:], T+K-1, w, nil, bias, O, C, K, n)
					pk := cloneF(d0[s : s+n])
					CorrK(pk, x[s:], w[:K])
					p3 := cloneF(d0[s : s+n])
					Corr3(p3, x[s:], 0.3, -1.7, 0.9)
					what := fmt.Sprintf("K %d O %d steps %d..%d", K, O, s, s+n-1)
					for o := 0; o < O; o++ {
						sameAt(t, "ConvMulti "+what, part[o*n:(o+1)*n], full[o*T+s:])
						sameAt(t, "ConvMultiBias "+what, partB[o*n:(o+1)*n], fullB[o*T+s:])
					}
					sameAt(t, "CorrK "+what, pk, fullK[s:])
					sameAt(t, "Corr3 "+what, p3, full3[s:])
				}
			}
		}
	}
	x := vec(T)
	for i := range x {
		x[i] *= 20
	}
	full := make([]float32, T)
	Exp(full, x)
	for s := 0; s < T; s++ {
		for n := 1; s+n <= T; n++ {
			p := make([]float32, n)
			Exp(p, x[s:])
			sameAt(t, fmt.Sprintf("Exp steps %d..%d", s, s+n-1), p, full[s:])
		}
	}
}

func cloneF(v []float32) []float32 { return append([]float32(nil), v...) }

// sameAt fails t where got[i] and want[i] differ in some bit.
func sameAt(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i, g := range got {
		if math.Float32bits(g) != math.Float32bits(want[i]) {
			t.Fatalf("%s: step %d is %v; %v in the longer call", what, i, g, want[i])
		}
	}
}
