package graph_test

import (
	"math/rand/v2"
	"testing"

	"github.com/uaxai/uaxai/internal/fdiff"
	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// transformerNet is graphtest.Transformer with parameters drawn from
// N(0, 0.4^2) and layer norms' weights near 1.
func transformerNet(t *testing.T, dropout float64) *graph.Net {
	t.Helper()
	spec := graphtest.Transformer()
	if dropout > 0 {
		for i := range spec.Nodes {
			if spec.Nodes[i].Op == "attention" {
				spec.Nodes[i].Attrs["dropout"] = dropout
			}
		}
	}
	net := graphtest.RandomNet(t, spec, 21)
	for i := range net.Theta {
		net.Theta[i] *= 0.8
	}
	return net
}

// gradCheck compares got with finite differences of f over vals (a
// share of 1e-3 of the largest difference, each value probed).
func gradCheck(t *testing.T, what string, got, vals []float32, f func() float64) {
	t.Helper()
	d := fdiff.Compare(got, vals, f, 0.02, nil)
	top, worst, at, want := d.Top, d.Worst, d.At, d.Want
	t.Logf("%s: %d values, largest |fd| %.3g, worst |grad - fd| %.3g (value %d)", what, len(got), top, worst, at)
	if top == 0 || !(worst <= 1e-3*top) {
		t.Errorf("%s: worst |grad - fd| %.3g at %d (grad %g, fd %g), largest |fd| %.3g", what, worst, at, got[at], want[at], top)
	}
}

// TestTransformerGradFiniteDifferences: on a graph of every Transformer
// op (attention, layer norms, dense, matmul, broadcast sub/div/mul,
// affine, pow, sqrt, erf, softmax over rows, transposes, reshape, means
// over both axes), Grad's d p_target / d x and d p_target / d θ agree with
// finite differences of Forward.
func TestTransformerGradFiniteDifferences(t *testing.T) {
	net := transformerNet(t, 0)
	rng := rand.New(rand.NewPCG(3, 4))
	B := 2
	x := make([]float32, B*net.InShape().Size())
	for j := range x {
		x[j] = float32(rng.NormFloat64())
	}
	targets := []int{1, 3}
	gx := make([]float32, len(x))
	gp := make([]float32, net.NumParams())
	if err := net.Grad(x, graph.GradRequest{Targets: targets, Input: gx, Params: gp}); err != nil {
		t.Fatal(err)
	}
	K := net.Classes()
	probs := make([]float32, B*K)
	f := func() float64 {
		if err := net.Forward(probs, x); err != nil {
			t.Fatal(err)
		}
		return float64(probs[targets[0]]) + float64(probs[K+targets[1]])
	}
	gradCheck(t, "input", gx, x, f)
	gradCheck(t, "params", gp, net.Theta, f)
}

// TestTransformerTrainPassFiniteDifferences: a training pass's Backprop
// of a weighted sum of the logits agrees with finite differences of the
// training pass itself, attention dropout included (the same masks in
// every pass: one seed), and the dropout changes the outputs.
func TestTransformerTrainPassFiniteDifferences(t *testing.T) {
	net := transformerNet(t, 0.3)
	rng := rand.New(rand.NewPCG(5, 6))
	B := 3
	x := make([]float32, B*net.InShape().Size())
	for j := range x {
		x[j] = float32(rng.NormFloat64())
	}
	K := net.Classes()
	w := make([]float32, B*K)
	for j := range w {
		w[j] = float32(rng.NormFloat64())
	}
	run := func() []float32 {
		out, err := net.Run(x, true, rand.New(rand.NewPCG(9, 9)))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	f := func() float64 {
		s := 0.0
		for j, o := range run() {
			s += float64(w[j]) * float64(o)
		}
		return s
	}
	train := append([]float32(nil), run()...)
	gx := make([]float32, len(x))
	gp := make([]float32, net.NumParams())
	net.Backprop(w, gp, gx)
	eval, err := net.Run(x, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	same := true
	for j := range eval {
		same = same && eval[j] == train[j]
	}
	if same {
		t.Fatal("the training pass gives the evaluation pass's outputs: attention dropout not applied")
	}
	gradCheck(t, "input", gx, x, f)
	gradCheck(t, "params", gp, net.Theta, f)
}
