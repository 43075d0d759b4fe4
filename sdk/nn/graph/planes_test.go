package graph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPlanesWhere: the boundary plan runs on planes exactly where every
// trunk node has stride 1 and an op with Taps or a per-step op with
// Columns (the paper's network, a residual join of stride 1), and node by
// node otherwise (a stride, an average pool).
func TestPlanesWhere(t *testing.T) {
	specs := trunkSpecs()
	avg := Spec{Name: "avg", InChannels: 1, InLen: 30, Nodes: []Node{
		wnode("c", "conv1d", nil, map[string]any{"out": 3, "kernel": 3}),
		wnode("ap", "avgpool1d", nil, map[string]any{"kernel": 2, "stride": 1}),
		wnode("gmp", "globalmaxpool", nil, nil),
		wnode("fc", "linear", nil, map[string]any{"out": 2}),
	}}
	for _, c := range []struct {
		spec   Spec
		planes bool
	}{{specs[1], true}, {specs[3], true}, {specs[2], false}, {avg, false}} {
		n := randomNet(t, c.spec, 5)
		in := n.InShape()
		R := n.trunk().reach()
		var starts []int
		for s := 0; s+R <= in.T; s++ {
			starts = append(starts, s)
		}
		x := randVec(rand.New(rand.NewPCG(5, 6)), in.Size())
		got := make([]float32, len(starts))
		if _, err := n.WindowProbs(got, x, nil, starts, R, 0, 0); err != nil {
			t.Fatal(err)
		}
		if edgesUsed(n) == 0 {
			t.Fatalf("%s: the boundary plan did not run", c.spec.Name)
		}
		if on := n.win.edge.pl != nil; on != c.planes {
			t.Errorf("%s: planes %v, want %v", c.spec.Name, on, c.planes)
		}
	}
}

// TestPlanesIndependentOfTheBatch: on planes a copy's probability has
// the same bits whether its boundaries are computed with the call's
// others (many batches, both directions, both ends) or alone, for
// windows and LIME's spans, a constant baseline and a baseline signal.
func TestPlanesIndependentOfTheBatch(t *testing.T) {
	for si, spec := range []Spec{trunkSpecs()[1], trunkSpecs()[3]} {
		n := randomNet(t, spec, uint64(60+si))
		in := n.InShape()
		R := n.trunk().reach()
		rng := rand.New(rand.NewPCG(uint64(si), 61))
		x, z := randVec(rng, in.Size()), randVec(rng, in.Size())
		var starts []int
		for s := 0; s+R-1 <= in.T; s++ {
			starts = append(starts, s)
		}
		for _, zz := range [][]float32{nil, z} {
			all := make([]float32, len(starts))
			if _, err := n.WindowProbs(all, x, zz, starts, R-1, 0.2, 1); err != nil {
				t.Fatal(err)
			}
			// Each start with enough others for the boundary plan to run:
			// the same start repeated.
			for _, j := range []int{0, 1, len(starts) / 2, len(starts) - 1} {
				some := slices.Repeat([]int{starts[j]}, 3*len(starts)/4)
				got := make([]float32, len(some))
				if _, err := n.WindowProbs(got, x, zz, some, R-1, 0.2, 1); err != nil {
					t.Fatal(err)
				}
				if edgesUsed(n) == 0 {
					t.Fatalf("%s: start %d alone: the boundary plan did not run", spec.Name, starts[j])
				}
				if got[0] != all[j] {
					t.Errorf("%s signal %v: window at %d: %v alone, %v among %d", spec.Name, zz != nil, starts[j], got[0], all[j], len(starts))
				}
			}
		}
		// Spans: random segment masks, and each mask among copies of itself.
		spans := make([][]ChannelSpan, 150)
		for j := range spans {
			for lo := 0; lo < in.T; lo += R - 1 {
				if rng.IntN(2) == 0 {
					spans[j] = append(spans[j], ChannelSpan{AllChannels, lo, min(lo+R-1, in.T)})
				}
			}
		}
		all := make([]float32, len(spans))
		if _, err := n.SpanProbs(all, x, spans, -0.3, 0); err != nil {
			t.Fatal(err)
		}
		for _, j := range []int{0, 7, 99} {
			some := slices.Repeat([][]ChannelSpan{spans[j]}, 100)
			got := make([]float32, len(some))
			if _, err := n.SpanProbs(got, x, some, -0.3, 0); err != nil {
				t.Fatal(err)
			}
			if got[0] != all[j] {
				t.Errorf("%s: mask %d %v: %v alone, %v among %d", spec.Name, j, fmt.Sprint(spans[j]), got[0], all[j], len(spans))
			}
		}
	}
}
