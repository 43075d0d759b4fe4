package nn

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// withSignal returns x with samples [lo, hi) of every channel taken from
// z: the definition of a window occluded by a baseline signal.
func withSignal(x, z []float32, C, T, lo, hi int) []float32 {
	out := append([]float32(nil), x...)
	for c := range C {
		for t := max(lo, 0); t < min(hi, T); t++ {
			out[c*T+t] = z[c*T+t]
		}
	}
	return out
}

// signals returns baseline signals for an input of n values: Gaussian
// noise at the input's scale, the same three times larger (so that the
// all-z activations inside a window, not the input's, hold the global
// maximum), and a constant (where the scalar path must agree).
func signals(n int, seed uint64) map[string][]float32 {
	r := rand.New(rand.NewPCG(seed, 11))
	noise, loud, flat := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range noise {
		noise[i] = float32(r.NormFloat64())
		loud[i] = 3 * float32(r.NormFloat64())
		flat[i] = 0.375
	}
	return map[string][]float32{"noise": noise, "loud": loud, "constant": flat}
}

// TestWindowProbsSignalDefinition: WindowProbsSignal equals its
// definition, the class probability of x with the window's samples taken
// from z, one forward pass a window: on networks of every local layer
// kind (the boundary path for widths >= R-1, the narrow path below it),
// on heads that run as a Net, on a network without a global max pool (the
// batched plain path), and on the paper's network. With a constant z it
// equals WindowProbs with that constant within float32 rounding.
func TestWindowProbsSignalDefinition(t *testing.T) {
	flat := Arch{Name: "no-gmp", InChannels: 1, InLen: 80, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 2, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 3},
	}}
	for _, a := range append([]Arch{localBN(), smallArch(), flat, PaperArch()}, oddHeads()...) {
		_, p, x, _ := randomSetup(t, a, 1, 23)
		m, err := NewModel(Params{Arch: a, Data: p})
		if err != nil {
			t.Fatal(err)
		}
		n, k, T, C := m.InputLen(), m.Classes(), a.InLen, a.InChannels
		R := 3
		if m.PooledLen() > 0 {
			R = m.edge0().R()
		}
		widths, stride := []int{1, R - 2, R - 1, R, R + 3, T}, 1
		if T > 100 {
			widths, stride = []int{R - 2, 60}, 7
		}
		for name, z := range signals(n, 3) {
			for _, width := range widths {
				if width < 1 || width > T {
					continue
				}
				var starts []int
				for s := 0; s+width <= T; s += stride {
					starts = append(starts, s)
				}
				got := make([]float32, len(starts))
				m.WindowProbsSignal(got, x, z, starts, width, 1)
				pr := make([]float32, k)
				for j, s := range starts {
					if err := m.Probs(context.Background(), pr, withSignal(x, z, C, T, s, s+width)); err != nil {
						t.Fatal(err)
					}
					if d := math.Abs(float64(got[j] - pr[1])); d > 1e-6 {
						t.Fatalf("%s, %s baseline, width %d, window %d: WindowProbsSignal %v, definition %v", a.Name, name, width, s, got[j], pr[1])
					}
				}
				if name != "constant" {
					continue
				}
				scalar := make([]float32, len(starts))
				m.WindowProbs(scalar, x, starts, width, z[0], 1)
				for j := range scalar {
					if d := math.Abs(float64(got[j] - scalar[j])); d > 1e-6 {
						t.Fatalf("%s width %d window %d: constant signal %v, scalar baseline %v", a.Name, width, starts[j], got[j], scalar[j])
					}
				}
			}
		}
	}
}

// TestSharedTrunkSignal: under MC-dropout draws, WindowProbsCachedSignal
// through one TrunkCache gives each draw the bytes it gives without a
// cache, WindowProbsSignal's probabilities and p(x) of a forward pass; the
// draws after the first hit. An
// entry serves only the same signal: another z, or the scalar baseline
// whose constant a signal repeats, misses.
func TestSharedTrunkSignal(t *testing.T) {
	lb := localBN()
	lb.Layers = append(lb.Layers[:3:3], lb.Layers[4:]...) // no inner dropout
	for _, a := range []Arch{lb, PaperArch()} {
		_, p, x, _ := randomSetup(t, a, 1, 37)
		const S = 3
		draws := mcDraws(t, a, p, S)
		n, T := draws[0].InputLen(), a.InLen
		R := draws[0].edge0().R()
		z := signals(n, 5)["loud"]
		for _, width := range []int{R - 2, min(60, T/2)} {
			var starts []int
			for s := 0; s+width <= T; s += 3 {
				starts = append(starts, s)
			}
			cache := NewTrunkCache(1 << 24)
			for s, m := range draws {
				shared := make([]float32, len(starts))
				p0 := m.WindowProbsCachedSignal(shared, x, z, starts, width, 2, cache)
				pr := make([]float32, m.Classes())
				if err := m.Probs(context.Background(), pr, x); err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(float64(p0 - pr[2])); d > 1e-6 {
					t.Fatalf("%s width %d draw %d: p(x) %v, forward pass %v", a.Name, width, s, p0, pr[2])
				}
				uncached := make([]float32, len(starts))
				if q0 := m.WindowProbsCachedSignal(uncached, x, z, starts, width, 2, nil); q0 != p0 {
					t.Fatalf("%s width %d draw %d: p(x) %v through the cache, %v without", a.Name, width, s, p0, q0)
				}
				alone := make([]float32, len(starts))
				m.WindowProbsSignal(alone, x, z, starts, width, 2)
				for j := range alone {
					if math.Float32bits(shared[j]) != math.Float32bits(uncached[j]) {
						t.Fatalf("%s width %d draw %d window %d: shared trunk %v, without a cache %v", a.Name, width, s, starts[j], shared[j], uncached[j])
					}
					// The head runs on one more column than WindowProbsSignal's
					// (x's own), which may round differently.
					if d := math.Abs(float64(shared[j] - alone[j])); d > 1e-6 {
						t.Fatalf("%s width %d draw %d window %d: shared trunk %v, WindowProbsSignal %v", a.Name, width, s, starts[j], shared[j], alone[j])
					}
				}
			}
			if hits, misses := cache.Stats(); hits != S-1 || misses != 1 {
				t.Errorf("%s width %d: %d hits, %d misses; want %d and 1", a.Name, width, hits, misses, S-1)
			}
			other := append([]float32(nil), z...)
			other[n-1] = math.Nextafter32(other[n-1], 10) // one ulp of one sample
			flat := make([]float32, n)
			dst := make([]float32, len(starts))
			draws[0].WindowProbsCachedSignal(dst, x, other, starts, width, 2, cache)
			draws[0].WindowProbsCachedSignal(dst, x, flat, starts, width, 2, cache)
			draws[0].WindowProbsCached(dst, x, starts, width, 0, 2, cache) // the constant flat repeats
			draws[0].WindowProbsCachedSignal(dst, x, flat, starts, width, 2, cache)
			if hits, misses := cache.Stats(); hits != S || misses != 4 {
				t.Errorf("%s width %d: after other baselines %d hits, %d misses; want %d and 4", a.Name, width, hits, misses, S)
			}
		}
	}
}

// TestSignalLengthPanics: a baseline signal of another length than the
// input is a programmer's error.
func TestSignalLengthPanics(t *testing.T) {
	a := smallArch()
	_, p, x, _ := randomSetup(t, a, 1, 2)
	m, err := NewModel(Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	short := make([]float32, m.InputLen()-1)
	for name, f := range map[string]func(){
		"WindowProbsSignal":       func() { m.WindowProbsSignal(make([]float32, 1), x, short, []int{0}, 3, 0) },
		"WindowProbsCachedSignal": func() { m.WindowProbsCachedSignal(make([]float32, 1), x, short, []int{0}, 3, 0, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic on a short signal", name)
				}
			}()
			f()
		}()
	}
}
