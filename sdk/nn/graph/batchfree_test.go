package graph_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// TestCopiesIndependentOfTheBatch: a perturbed copy's probability does
// not depend on the other copies of its call. For random networks and
// random window and span requests, each copy computed in the full
// request, alone, and in random sub-batches gives the same bits (so
// neither a caller's nor the model service's split of a request, nor the
// plan a batch picks, moves a value).
func TestCopiesIndependentOfTheBatch(t *testing.T) {
	specs := []graph.Spec{graphtest.PaperGraph(), graphtest.EveryOp(), graphtest.Residual(60), graphtest.MidOutput(), graphtest.Transformer()}
	for si, spec := range specs {
		n := graphtest.RandomNet(t, spec, uint64(70+si))
		graphtest.PositiveVar(n)
		in := n.InShape()
		rng := rand.New(rand.NewPCG(uint64(si), 71))
		x := make([]float32, in.Size())
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		class := si % n.Classes()
		for trial := 0; trial < 6; trial++ {
			N := 1 + rng.IntN(40)
			// Windows: a width and N starts, some repeated and some
			// adjacent (equal pooled vectors), so every plan is taken.
			width := 1 + rng.IntN(in.T)
			if trial%2 == 0 {
				width = 1 + rng.IntN(max(in.T/8, 1))
			}
			starts := make([]int, N)
			for j := range starts {
				starts[j] = rng.IntN(in.T - width + 1)
				if j > 0 && rng.IntN(3) == 0 {
					starts[j] = starts[j-1]
				}
			}
			check(t, spec.Name, "windows", N, rng, func(dst []float32, idx []int) error {
				s := make([]int, len(idx))
				for k, j := range idx {
					s[k] = starts[j]
				}
				_, err := n.WindowProbs(dst, x, nil, s, width, -0.5, class)
				return err
			})
			// Spans: 0..3 spans a copy, of one channel or every channel,
			// wide or narrow.
			spans := make([][]graph.ChannelSpan, N)
			for j := range spans {
				for range rng.IntN(4) {
					lo := rng.IntN(in.T)
					hi := min(lo+1+rng.IntN(in.T/3+1), in.T)
					ch := graph.AllChannels
					if rng.IntN(3) == 0 {
						ch = rng.IntN(in.C)
					}
					spans[j] = append(spans[j], graph.ChannelSpan{Ch: ch, Lo: lo, Hi: hi})
				}
			}
			check(t, spec.Name, "spans", N, rng, func(dst []float32, idx []int) error {
				s := make([][]graph.ChannelSpan, len(idx))
				for k, j := range idx {
					s[k] = spans[j]
				}
				_, err := n.SpanProbs(dst, x, s, 0.25, class)
				return err
			})
		}
	}
}

// check computes the N copies by run in one call, then each alone, then
// in random sub-batches (a random order, cut at random), and fails t
// where a copy's bits differ from the full call's.
func check(t *testing.T, net, what string, N int, rng *rand.Rand, run func(dst []float32, idx []int) error) {
	t.Helper()
	all := make([]int, N)
	for j := range all {
		all[j] = j
	}
	full := make([]float32, N)
	if err := run(full, all); err != nil {
		t.Fatalf("%s %s: %v", net, what, err)
	}
	got := make([]float32, 1)
	for j := range N {
		if err := run(got, []int{j}); err != nil {
			t.Fatalf("%s %s: %v", net, what, err)
		}
		if math.Float32bits(got[0]) != math.Float32bits(full[j]) {
			t.Errorf("%s %s: copy %d of %d: %v alone, %v in the full call", net, what, j, N, got[0], full[j])
			return
		}
	}
	perm := rng.Perm(N)
	for a := 0; a < N; {
		b := min(a+1+rng.IntN(N), N)
		idx := perm[a:b]
		sub := make([]float32, len(idx))
		if err := run(sub, idx); err != nil {
			t.Fatalf("%s %s: %v", net, what, err)
		}
		for k, j := range idx {
			if math.Float32bits(sub[k]) != math.Float32bits(full[j]) {
				t.Errorf("%s %s: copy %d of %d: %v in a sub-batch of %d, %v in the full call", net, what, j, N, sub[k], len(idx), full[j])
				return
			}
		}
		a = b
	}
}
