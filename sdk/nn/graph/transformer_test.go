package graph_test

import (
	"math"
	"math/rand/v2"
	"strings"
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

// TestTransformerTrainWithoutDropout: a Transformer has no batch
// statistics, so without attention dropout a training pass gives the
// evaluation pass's outputs bit for bit.
func TestTransformerTrainWithoutDropout(t *testing.T) {
	net := transformerNet(t, 0)
	x := make([]float32, 3*net.InShape().Size())
	for j := range x {
		x[j] = float32(math.Sin(float64(j) * 0.3))
	}
	train, err := net.Run(x, true, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	train = append([]float32(nil), train...)
	eval, err := net.Run(x, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for j := range eval {
		if eval[j] != train[j] {
			t.Fatalf("output %d: training pass %g, evaluation pass %g", j, train[j], eval[j])
		}
	}
}

// TestAttentionSizesInTurn: networks whose attention differs in size
// (and a dense layer without a bias), run in turn in one process (their
// scratch shared), forward and backward, give the probabilities each
// gave first (within 1e-6: the backward pass's forward is unfolded).
func TestAttentionSizesInTurn(t *testing.T) {
	spec := func(tokens int) graph.Spec {
		return graph.Spec{Name: "attn", InChannels: 1, InLen: 4 * tokens, Nodes: []graph.Node{
			{Name: "patch", Op: "conv1d", Attrs: map[string]any{"out": 4, "kernel": 4, "stride": 4}},
			{Name: "tok", Op: "transpose"},
			{Name: "attn", Op: "attention", Attrs: map[string]any{"heads": 2}},
			{Name: "ff", Op: "dense", Attrs: map[string]any{"out": 4, "bias": false}},
			{Name: "mean", Op: "reducemean", Attrs: map[string]any{"axis": 0}},
			{Name: "vec", Op: "reshape", Attrs: map[string]any{"rows": 4, "cols": 1}},
			{Name: "head", Op: "linear", Attrs: map[string]any{"out": 3}},
		}}
	}
	var nets []*graph.Net
	var xs, first [][]float32
	for k, tokens := range []int{3, 9, 5} {
		net := graphtest.RandomNet(t, spec(tokens), uint64(k))
		x := make([]float32, net.InShape().Size())
		for j := range x {
			x[j] = float32(math.Cos(float64(j)*0.4 + float64(k)))
		}
		p := make([]float32, 3)
		if err := net.Forward(p, x); err != nil {
			t.Fatal(err)
		}
		nets, xs, first = append(nets, net), append(xs, x), append(first, p)
	}
	for round := range 3 {
		for k := len(nets) - 1; k >= 0; k-- {
			p := make([]float32, 3)
			var err error
			if round == 1 { // the backward pass's scratch, and its forward's probabilities
				err = nets[k].Grad(xs[k], graph.GradRequest{Targets: []int{0}, Probs: p, Input: make([]float32, len(xs[k])), Params: make([]float32, nets[k].NumParams())})
			} else {
				err = nets[k].Forward(p, xs[k])
			}
			if err != nil {
				t.Fatal(err)
			}
			for j := range p {
				if math.Abs(float64(p[j]-first[k][j])) > 1e-6 {
					t.Fatalf("round %d, network %d: probability %d is %g, first %g", round, k, j, p[j], first[k][j])
				}
			}
		}
	}
}

// TestTransformerCost: Net.Cost counts 2 x the multiply-adds of each
// product: a patch convolution, attention (the in-projection of L
// tokens, 3E x E; L x L scores and their mix of the values, over the
// heads' E features together; the out-projection, E x E), dense layers
// (in x out a token), a linear head; and one operation a value for the
// rest as the op table declares it (layernorm 8 a value, affine 2).
func TestTransformerCost(t *testing.T) {
	spec := graph.Spec{Name: "cost", InChannels: 2, InLen: 24, Nodes: []graph.Node{
		{Name: "patch", Op: "conv1d", Attrs: map[string]any{"out": 4, "kernel": 4, "stride": 4}}, // 6 tokens of 4
		{Name: "tok", Op: "transpose"},
		{Name: "attn", Op: "attention", Attrs: map[string]any{"heads": 2}},
		{Name: "norm", Op: "layernorm"},
		{Name: "scale", Op: "affine", Attrs: map[string]any{"weight": []int64{1, 4}}},
		{Name: "ff", Op: "dense", Attrs: map[string]any{"out": 5}},
		{Name: "tok2", Op: "transpose"},                            // 5 x 6
		{Name: "sq", Op: "matmul", Inputs: []string{"ff", "tok2"}}, // (6 x 5) (5 x 6)
		{Name: "mean", Op: "reducemean", Attrs: map[string]any{"axis": 0}},
		{Name: "vec", Op: "reshape", Attrs: map[string]any{"rows": 6, "cols": 1}},
		{Name: "head", Op: "linear", Attrs: map[string]any{"out": 3}},
	}}
	net, err := graph.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	L, E := 6.0, 4.0
	want := 2*(4*2*4)*L + // patch: 4 outputs x 2 channels x 4 taps, 6 steps
		L*E + // transpose: its input's values
		2*(L*E*3*E+L*L*E+L*L*E+L*E*E) + // attention
		8*L*E + // layernorm
		2*L*E + // affine: a product and a sum a value
		2*L*E*5 + // dense
		L*5 + // transpose of ff
		2*L*5*L + // matmul (6 x 5) (5 x 6)
		L*L + // mean over the rows: its input's values
		L + // reshape
		2*3*L // linear
	if got := net.Cost(); got != want {
		t.Errorf("cost %g, want %g", got, want)
	}
}

// TestTokenAttrBounds: layernorm's eps and attention's dropout are
// accepted at their bounds (eps 0, dropout 0) and refused past them
// (eps < 0, dropout < 0 or 1), naming the attribute.
func TestTokenAttrBounds(t *testing.T) {
	for _, c := range []struct {
		op    string
		attrs map[string]any
		ok    bool
	}{
		{"layernorm", map[string]any{"eps": 0.0}, true}, {"layernorm", map[string]any{"eps": -1e-9}, false},
		{"attention", map[string]any{"heads": 1, "dropout": 0.0}, true}, {"attention", map[string]any{"heads": 1, "dropout": 0.99}, true},
		{"attention", map[string]any{"heads": 1, "dropout": 1.0}, false}, {"attention", map[string]any{"heads": 1, "dropout": -0.1}, false},
	} {
		spec := graph.Spec{Name: "bounds", InChannels: 1, InLen: 8, Nodes: []graph.Node{
			{Name: "patch", Op: "conv1d", Attrs: map[string]any{"out": 2, "kernel": 2, "stride": 2}},
			{Name: "tok", Op: "transpose"},
			{Name: "x", Op: c.op, Attrs: c.attrs},
			{Name: "mean", Op: "reducemean", Attrs: map[string]any{"axis": 0}},
			{Name: "vec", Op: "reshape", Attrs: map[string]any{"rows": 2, "cols": 1}},
		}}
		_, err := graph.Compile(spec)
		if (err == nil) != c.ok {
			t.Errorf("%s %v: %v; want accepted %v", c.op, c.attrs, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "attribute") {
			t.Errorf("%s %v: %v does not name the attribute", c.op, c.attrs, err)
		}
	}
}
