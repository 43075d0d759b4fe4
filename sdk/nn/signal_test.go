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
// from z, one forward pass a window (PlainProbs): on networks of every
// layer kind, on a network without a global max pool, and on the paper's
// network, for widths about the receptive field R of the layers before
// the global max pool and wider. With a constant z it equals WindowProbs
// with that constant within float32 rounding.
func TestWindowProbsSignalDefinition(t *testing.T) {
	flat := Arch{Name: "no-gmp", InChannels: 1, InLen: 80, Layers: []Layer{
		{Kind: KindConv1D, Name: "c1", Out: 2, Kernel: 3},
		{Kind: KindReLU},
		{Kind: KindFlatten},
		{Kind: KindDense, Name: "d", Out: 3},
	}}
	for _, a := range []Arch{smallArch(), flat, PaperArch()} {
		_, p, x, _ := randomSetup(t, a, 1, 23)
		m, err := NewModel(Params{Arch: a, Data: p})
		if err != nil {
			t.Fatal(err)
		}
		n, k, T, C := m.InputLen(), m.Classes(), a.InLen, a.InChannels
		const R = 9 // smallArch's: conv 3, maxpool 2, conv 5; the paper's 9
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
				windowProbs(t, m, got, x, z, starts, width, 0, 1)
				pr := make([]float32, k)
				for j, s := range starts {
					if err := m.PlainProbs(context.Background(), pr, withSignal(x, z, C, T, s, s+width)); err != nil {
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
				windowProbs(t, m, scalar, x, nil, starts, width, z[0], 1)
				for j := range scalar {
					if d := math.Abs(float64(got[j] - scalar[j])); d > 1e-6 {
						t.Fatalf("%s width %d window %d: constant signal %v, scalar baseline %v", a.Name, width, starts[j], got[j], scalar[j])
					}
				}
			}
		}
	}
}
