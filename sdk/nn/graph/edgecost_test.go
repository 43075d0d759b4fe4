package graph

import (
	"math/rand/v2"
	"testing"
)

// TestEdgeOKIsTheWorkDone: the boundary plan is taken exactly when the
// work it then counts (its two passes, its boundaries on planes and the
// head on every copy and on x, Path.Done of edgePooled) is less than the
// copies' forward passes (Path.Dense), over many numbers of copies and of
// distinct boundaries, so that the decision flips inside the grid. On
// planes a boundary's work does not depend on its position, so the
// estimate is the plan's own count.
func TestEdgeOKIsTheWorkDone(t *testing.T) {
	for si, spec := range []Spec{trunkSpecs()[1], trunkSpecs()[3]} {
		n := randomNet(t, spec, uint64(70+si))
		in := n.InShape()
		x := randVec(rand.New(rand.NewPCG(uint64(si), 71)), in.Size())
		u := n.baselineInput(nil, 0.25)
		// Copies of a few boundaries or many (LIME's masks), at least
		// reach-1 apart, so that the number of distinct boundaries varies
		// finely against the number of copies.
		R := n.trunk().reach()
		rng := rand.New(rand.NewPCG(uint64(si), 72))
		taken, refused := 0, 0
		for range 400 {
			N := 1 + rng.IntN(8)
			cps := make([]cutCopy, N)
			for j := range cps {
				cps[j].firstU = rng.IntN(2) == 0
				for b := 1 + rng.IntN(R); b < in.T && len(cps[j].bnd) < 1+rng.IntN(in.T); b += R - 1 + rng.IntN(3) {
					cps[j].bnd = append(cps[j].bnd, b)
				}
			}
			ok := n.edgeOK(cps)
			pooled := make([]float32, (N+1)*n.PooledLen())
			p := n.edgePooled(pooled, x, u, cps)
			nb := edgesUsed(n)
			if want := p.Done < p.Dense; ok != want {
				t.Errorf("%s: %d copies, %d boundaries: edgeOK %v, but the plan's work %g vs the copies' %g", spec.Name, N, nb, ok, p.Done, p.Dense)
			}
			if ok {
				taken++
			} else {
				refused++
			}
		}
		if n.win.edge.pl == nil {
			t.Fatalf("%s: not on planes", spec.Name)
		}
		if taken == 0 || refused == 0 {
			t.Errorf("%s: the decision never flips (%d taken, %d refused)", spec.Name, taken, refused)
		}
	}
}

// TestBoundaryCostIsThePlanesWork: the work of a batch of boundaries in
// the middle of the input on planes is their number times boundaryCost,
// whatever the batch's size (one or many batches of winBatch).
func TestBoundaryCostIsThePlanesWork(t *testing.T) {
	for _, spec := range []Spec{trunkSpecs()[1], trunkSpecs()[3]} {
		n := randomNet(t, spec, 74)
		in := n.InShape()
		x := randVec(rand.New(rand.NewPCG(74, 75)), in.Size())
		u := n.baselineInput(nil, -0.5)
		for _, nb := range []int{1, 2, 9} {
			var cps []cutCopy
			for j := range nb {
				cps = append(cps, cutCopy{bnd: []int{in.T/2 - 4 + j}})
			}
			pooled := make([]float32, (nb+1)*n.PooledLen())
			p := n.edgePooled(pooled, x, u, cps)
			want := 2*n.window().dense + float64(nb)*n.boundaryCost() + float64(nb+1)*n.headCost()
			if d := p.Done - want; d > 1e-9*want || d < -1e-9*want {
				t.Errorf("%s: %d boundaries: work %g, want two passes, %d boundaries of %g and %d heads of %g: %g", spec.Name, nb, p.Done, nb, n.boundaryCost(), nb+1, n.headCost(), want)
			}
		}
	}
}
