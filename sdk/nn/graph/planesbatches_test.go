package graph

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPlanesManyBatches: on planes, a call with more boundaries of one
// direction than one batch holds (an input longer than 2*winBatch steps,
// windows at every start, and LIME's masks of short segments) is
// computed batch by batch and still equals the forward passes of the
// copies; a copy's value has the same bits alone as among all the others.
func TestPlanesManyBatches(t *testing.T) {
	long := func(s Spec) Spec {
		s.InLen = 2*winBatch + 23
		s.Name += "-long"
		return s
	}
	for si, spec := range []Spec{long(trunkSpecs()[1]), long(trunkSpecs()[3])} {
		n := randomNet(t, spec, uint64(80+si))
		in := n.InShape()
		R := n.trunk().reach()
		rng := rand.New(rand.NewPCG(uint64(si), 81))
		x, z := randVec(rng, in.Size()), randVec(rng, in.Size())
		width := R - 1
		var starts []int
		for s := 0; s+width <= in.T; s++ {
			starts = append(starts, s)
		}
		for _, zz := range [][]float32{nil, z} {
			got := make([]float32, len(starts))
			p, err := n.WindowProbs(got, x, zz, starts, width, 0.1, 0)
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s signal %v (%v)", spec.Name, zz != nil, p)
			if used := edgesUsed(n); used <= 2*winBatch {
				t.Fatalf("%s: %d boundaries, want more than two batches a direction", what, used)
			}
			if n.win.edge.pl == nil {
				t.Fatalf("%s: not on planes", what)
			}
			want := refProbs(t, n, windowCopies(x, zz, in.C, in.T, starts, width, 0.1), 0)
			if d, ok := closeTo(got, want, 2e-6); !ok {
				t.Errorf("%s: differs from forward passes by %.3g of the largest probability", what, d)
			}
			for _, j := range []int{0, winBatch - 1, winBatch, winBatch + 1, 2 * winBatch, len(starts) - 1} {
				one := []int{starts[j], starts[j], starts[j], starts[j], starts[j], starts[j]}
				alone := make([]float32, len(one))
				if _, err := n.WindowProbs(alone, x, zz, one, width, 0.1, 0); err != nil {
					t.Fatal(err)
				}
				if alone[0] != got[j] {
					t.Errorf("%s: window at %d: %v alone, %v among %d", what, starts[j], alone[0], got[j], len(starts))
				}
			}
		}
		// Masks: segments of reach-1 samples from a random offset, each
		// masked or not, so that
		// a call's boundaries of one direction are many and not
		// consecutive.
		spans := make([][]ChannelSpan, 80)
		var copies []float32
		for j := range spans {
			row := append([]float32(nil), x...)
			for lo := rng.IntN(width); lo < in.T; lo += width {
				if rng.IntN(2) == 0 {
					hi := min(lo+width, in.T)
					spans[j] = append(spans[j], ChannelSpan{AllChannels, lo, hi})
					for c := 0; c < in.C; c++ {
						for t := lo; t < hi; t++ {
							row[c*in.T+t] = -0.7
						}
					}
				}
			}
			copies = append(copies, row...)
		}
		got := make([]float32, len(spans))
		if _, err := n.SpanProbs(got, x, spans, -0.7, 1); err != nil {
			t.Fatal(err)
		}
		if used := edgesUsed(n); used <= winBatch {
			t.Fatalf("%s masks: %d boundaries, want more than a batch", spec.Name, used)
		}
		if d, ok := closeTo(got, refProbs(t, n, copies, 1), 2e-6); !ok {
			t.Errorf("%s masks: differ from forward passes by %.3g of the largest probability", spec.Name, d)
		}
	}
}
