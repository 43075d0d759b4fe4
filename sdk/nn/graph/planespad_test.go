package graph

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPlanesPaddedReadersNearTheEnds: on planes, a padded reader of a
// value whose dirty steps reach more than one step before a boundary
// (and after it) reads its padding there: boundaries near either end of
// the input, where those steps lie outside the value, still give the
// forward passes of the copies. (The trunk specs' padded readers read
// values whose dirty steps never leave the value.)
func TestPlanesPaddedReadersNearTheEnds(t *testing.T) {
	spec := Spec{Name: "pad-deep", InChannels: 2, InLen: 40, Nodes: []Node{
		wnode("a", "conv1d", nil, map[string]any{"out": 3, "kernel": 3}),
		wnode("ar", "relu", nil, nil),
		wnode("b", "conv1d", nil, map[string]any{"out": 3, "kernel": 3, "padding": 1}),
		wnode("mp", "maxpool1d", nil, map[string]any{"kernel": 3, "stride": 1, "padding": 1}),
		wnode("c", "conv1d", nil, map[string]any{"out": 4, "kernel": 2, "dilation": 2, "padding": []int64{3, 2}}),
		wnode("g", "gelu", nil, nil),
		wnode("gmp", "globalmaxpool", nil, nil),
		wnode("fc", "linear", nil, map[string]any{"out": 3}),
	}}
	n := randomNet(t, spec, 83)
	in := n.InShape()
	R := n.trunk().reach()
	rng := rand.New(rand.NewPCG(83, 84))
	x, z := randVec(rng, in.Size()), randVec(rng, in.Size())
	for _, width := range []int{R - 1, R + 3} {
		var starts []int
		for s := 0; s+width <= in.T; s++ {
			starts = append(starts, s)
		}
		for _, zz := range [][]float32{nil, z} {
			got := make([]float32, len(starts))
			p, err := n.WindowProbs(got, x, zz, starts, width, -0.2, 2)
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("width %d (reach %d) signal %v (%v)", width, R, zz != nil, p)
			if edgesUsed(n) == 0 || n.win.edge.pl == nil {
				t.Fatalf("%s: not the boundary plan on planes", what)
			}
			want := refProbs(t, n, windowCopies(x, zz, in.C, in.T, starts, width, -0.2), 2)
			if d, ok := closeTo(got, want, 2e-6); !ok {
				t.Errorf("%s: differs from forward passes by %.3g of the largest probability", what, d)
			}
			// The first and last windows alone (a batch of one end).
			for _, j := range []int{1, len(starts) - 2} {
				one := []int{starts[j], starts[j], starts[j], starts[j]}
				alone := make([]float32, len(one))
				if _, err := n.WindowProbs(alone, x, zz, one, width, -0.2, 2); err != nil {
					t.Fatal(err)
				}
				if d, ok := closeTo(alone[:1], want[j:j+1], 2e-6); !ok {
					t.Errorf("%s: window at %d alone differs from its forward pass by %.3g", what, starts[j], d)
				}
			}
		}
	}
}
