package graph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPlanesBatchesWithGaps: on planes, a batch of boundaries whose
// positions are not consecutive (windows whose starts leave gaps of one
// or more steps, each window repeated so that the boundary plan pays)
// gathers each boundary's own steps: the copies equal their forward
// passes.
func TestPlanesBatchesWithGaps(t *testing.T) {
	for si, spec := range []Spec{trunkSpecs()[1], trunkSpecs()[3]} {
		n := randomNet(t, spec, uint64(85+si))
		in := n.InShape()
		R := n.trunk().reach()
		rng := rand.New(rand.NewPCG(uint64(si), 86))
		x := randVec(rng, in.Size())
		width := R - 1
		for _, gaps := range [][]int{{3}, {1, 3}, {1, 1, 4}, {2, 1, 1, 1, 1, 2}, {1, 2, 1, 3, 1}} {
			s0 := (in.T - width) / 3
			uniq := []int{s0}
			for _, g := range gaps {
				uniq = append(uniq, uniq[len(uniq)-1]+g)
			}
			if uniq[len(uniq)-1]+width > in.T {
				t.Fatalf("%s: gaps %v do not fit", spec.Name, gaps)
			}
			starts := slices.Repeat(uniq, 12)
			got := make([]float32, len(starts))
			p, err := n.WindowProbs(got, x, nil, starts, width, 0.4, 0)
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%s starts %v (%v)", spec.Name, uniq, p)
			if edgesUsed(n) == 0 || n.win.edge.pl == nil {
				t.Fatalf("%s: not the boundary plan on planes", what)
			}
			want := refProbs(t, n, windowCopies(x, nil, in.C, in.T, starts, width, 0.4), 0)
			if d, ok := closeTo(got, want, 2e-6); !ok {
				t.Errorf("%s: differs from forward passes by %.3g of the largest probability", what, d)
			}
		}
	}
}
