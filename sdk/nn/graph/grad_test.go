package graph

import (
	"github.com/uaxai/uaxai/internal/fdiff"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// residualConcatSpec is a small graph with a residual addition, a value
// read by three nodes, a concatenation of three inputs, asymmetric
// padding, dilation, groups, stride, average pooling with padding,
// flatten and smooth activations (no kinks, so that finite differences
// apply everywhere). softmaxOut ends it with a softmax node.
func residualConcatSpec(softmaxOut bool) Spec {
	n := func(name, op string, inputs []string, attrs map[string]any) Node {
		return Node{Name: name, Op: op, Inputs: inputs, Attrs: attrs}
	}
	s := Spec{Name: "residual-concat", InChannels: 2, InLen: 24, Nodes: []Node{
		n("a", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "padding": []int64{1, 2}}),
		n("b", "tanh", nil, nil),
		n("blk.pad", "pad", nil, map[string]any{"left": 1, "right": 3, "value": 0.25}),
		n("blk.conv", "conv1d", nil, map[string]any{"out": 4, "kernel": 3, "dilation": 2, "groups": 2}),
		n("blk.bn", "batchnorm1d", nil, nil),
		n("blk.add", "add", []string{"b", "blk.bn"}, nil),
		n("f", "gelu", nil, nil),
		n("h", "avgpool1d", []string{"input"}, map[string]any{"kernel": 2, "stride": 1, "padding": 1}),
		n("cat", "concat", []string{"f", "h", "blk.add"}, nil),
		n("j", "conv1d", nil, map[string]any{"out": 6, "kernel": 4, "stride": 2}),
		n("k", "silu", nil, nil),
		n("l", "sigmoid", nil, nil),
		n("flat", "flatten", nil, nil),
		n("gap", "globalavgpool", []string{"k"}, nil),
		n("cat2", "concat", []string{"flat", "gap"}, nil),
		n("fc", "linear", nil, map[string]any{"out": 5}),
		n("drop", "dropout", nil, map[string]any{"p": 0.1}),
	}}
	if softmaxOut {
		s.Nodes = append(s.Nodes, n("probs", "softmax", nil, nil))
	}
	return s
}

func randomNet(t *testing.T, spec Spec, seed uint64) *Net {
	t.Helper()
	net, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, p := range net.Params() {
		for j := range p.Len {
			v := float32(rng.NormFloat64() * 0.6)
			switch {
			case strings.HasSuffix(p.Name, ".running_var"):
				v = 0.5 + rng.Float32()
			case strings.HasSuffix(p.Name, "bn.weight"):
				v = 1 + v/2
			}
			net.Theta[p.Offset+j] = v
		}
	}
	return net
}

// objective is sum_b p_{target_b}(x_b) in float64.
func objective(t *testing.T, net *Net, x []float32, targets []int) float64 {
	K := net.Classes()
	probs := make([]float32, len(targets)*K)
	if err := net.Forward(probs, x); err != nil {
		t.Fatal(err)
	}
	s := 0.0
	for b, c := range targets {
		s += float64(probs[b*K+c])
	}
	return s
}

// TestGradFiniteDifferences: Grad's d p_target / d x and d p_target /
// d theta on the residual+concat graph agree with finite differences of
// Forward, with the output node a softmax and without.
func TestGradFiniteDifferences(t *testing.T) {
	for _, softmaxOut := range []bool{false, true} {
		net := randomNet(t, residualConcatSpec(softmaxOut), 7)
		rng := rand.New(rand.NewPCG(3, 4))
		B := 3
		x := make([]float32, B*net.InShape().Size())
		for j := range x {
			x[j] = float32(rng.NormFloat64())
		}
		targets := []int{1, 4, 0}
		gx := make([]float32, len(x))
		gp := make([]float32, net.NumParams())
		if err := net.Grad(x, GradRequest{Targets: targets, Input: gx, Params: gp}); err != nil {
			t.Fatal(err)
		}
		f := func() float64 { return objective(t, net, x, targets) }
		check := func(what string, got []float32, vals []float32, skip func(int) bool) {
			d := fdiff.Compare(got, vals, f, 0.02, skip)
			top := d.Top
			if top == 0 {
				t.Fatalf("%s: all finite differences are 0", what)
			}
			for j := range got {
				if skip(j) && got[j] != 0 {
					t.Errorf("%s %d: gradient %g of a constant", what, j, got[j])
				}
			}
			worst := d.Worst / top
			t.Logf("softmax output %v: %s: %d values, largest |fd| %.3g, worst |grad - fd| / largest %.2g", softmaxOut, what, len(got), top, worst)
			if !(worst <= 1e-3) {
				t.Errorf("%s: worst |grad - fd| is %.3g of the largest gradient", what, worst)
			}
		}
		check("input", gx, x, func(int) bool { return false })
		trainable := make([]bool, net.NumParams())
		for _, p := range net.Params() {
			for j := range p.Len {
				trainable[p.Offset+j] = p.Trainable
			}
		}
		check("params", gp, net.Theta, func(j int) bool { return !trainable[j] })
	}
}

// TestLayerGradSparseThroughMaxPool: Grad-CAM's request (a layer's
// gradient alone) of a layer that a global max pool reads directly or
// through pointwise ops gives the bits of the dense backward pass (the
// same request with the input's gradient, which runs every node), is
// zero but at one step a row, and runs no node's Backward below the pool
// (counted); a layer read otherwise (through a max pool, an addition)
// takes the dense pass and gives its bits too.
func TestLayerGradSparseThroughMaxPool(t *testing.T) {
	specs := trunkSpecs()
	cases := []struct {
		spec   Spec
		layer  string
		sparse bool
	}{
		{specs[1], "conv3", true}, {specs[1], "relu3", true}, {specs[1], "conv2", false}, {specs[1], "bn1", false},
		{specs[2], "d", true}, {specs[2], "ar", false}, {specs[2], "a", false},
	}
	for ci, tc := range cases {
		n := randomNet(t, tc.spec, uint64(40+ci))
		l, err := n.Layer(tc.layer)
		if err != nil {
			t.Fatal(err)
		}
		gmp, err := n.Layer("gmp")
		if err != nil {
			t.Fatal(err)
		}
		const B = 3
		rng := rand.New(rand.NewPCG(uint64(ci), 5))
		in := n.shapes[0]
		x := randVec(rng, B*in.C*in.T)
		targets := []int{0, 1, 2}
		sz := B * l.Shape.Size()
		sparse, dense := randVec(rng, sz), make([]float32, sz) // stale values: every one must be written
		below := 0
		n.backwardHook = func(i int, _ *Call) {
			if i < gmp.Node {
				below++
			}
		}
		if err := n.Grad(x, GradRequest{Targets: targets, Layer: &l, LayerGrad: sparse}); err != nil {
			t.Fatal(err)
		}
		n.backwardHook = nil
		if err := n.Grad(x, GradRequest{Targets: targets, Layer: &l, LayerGrad: dense, Input: make([]float32, len(x))}); err != nil {
			t.Fatal(err)
		}
		what := tc.spec.Name + " " + tc.layer
		for k := range sparse {
			if math.Float32bits(sparse[k]) != math.Float32bits(dense[k]) {
				t.Fatalf("%s: gradient %d: %v alone, %v in the dense pass", what, k, sparse[k], dense[k])
			}
		}
		if tc.sparse != (below == 0) {
			t.Errorf("%s: %d backward calls below the pool; want the sparse pass %v", what, below, tc.sparse)
		}
		if !tc.sparse {
			continue
		}
		nz := 0
		for _, v := range sparse {
			if v != 0 {
				nz++
			}
		}
		if nz == 0 || nz > B*l.Shape.C {
			t.Errorf("%s: %d nonzero gradients; want 1..%d (one step a row at most)", what, nz, B*l.Shape.C)
		}
	}
}

// TestLayerGradFoldsBelowLayer: a request for a layer's gradient alone
// folds the ReLUs below the layer into the convolutions they read (the
// op's Forward applies it: Op.EvalFuses) and not into a batchnorm (whose
// Forward does not), and gives the bits, the activations' included, of
// the request that also asks for the input's gradient, which folds none;
// on fuseSpec (conv and batchnorm pairs, a residual addition) for every
// layer, and on the paper's trunk for its layers. Each request also runs
// twice on one Net, after the other (no pass reads a value the other
// left); the activations are Run's, and later passes leave them alone.
// The folded nodes' own values and the Net's buffer of the layer's are
// left unwritten (NaN-filled buffers read back). A layer after the output node is an error.
func TestLayerGradFoldsBelowLayer(t *testing.T) {
	for si, spec := range []Spec{fuseSpec(), trunkSpecs()[1]} {
		for li, nd := range spec.Nodes {
			n := randomNet(t, spec, uint64(60+si))
			l, err := n.Layer(nd.Name)
			if err != nil {
				t.Fatal(err)
			}
			const B = 3
			rng := rand.New(rand.NewPCG(uint64(si), uint64(li)))
			in := n.shapes[0]
			x := randVec(rng, B*in.C*in.T)
			targets := []int{0, 2, 1}
			sz := B * l.Shape.Size()
			req := func(input bool) (act, lg []float32) {
				act, lg = randVec(rng, sz), randVec(rng, sz)
				r := GradRequest{Targets: targets, Layer: &l, Act: act, LayerGrad: lg}
				if input {
					r.Input = make([]float32, len(x))
				}
				if err := n.Grad(x, r); err != nil {
					t.Fatal(err)
				}
				return act, lg
			}
			// The request alone leaves unwritten the value of a node
			// whose ReLU is folded below the layer (it is never
			// computed) and the Net's buffer of the layer's value (the
			// pass keeps it in Act), and writes every other value up to
			// the output: the buffers, filled with NaN, are read back.
			req(false)
			for _, a := range n.ws.acts {
				for k := range a {
					a[k] = float32(math.NaN())
				}
			}
			req(false)
			for j := 0; j <= n.output; j++ {
				unwritten := n.keepFuses(j, false, l.Node) || j == l.Node
				nan := true
				for _, v := range n.ws.acts[j+1] {
					nan = nan && v != v
				}
				if nan != unwritten {
					t.Errorf("%s %s: node %s's value left unwritten %v; want %v", spec.Name, nd.Name, n.nodes[j].name, nan, unwritten)
				}
			}
			for range 2 {
				a0, g0 := req(false)
				a1, g1 := req(true)
				for k := range a0 {
					if math.Float32bits(a0[k]) != math.Float32bits(a1[k]) || math.Float32bits(g0[k]) != math.Float32bits(g1[k]) {
						t.Fatalf("%s %s: value %d: activation %v and gradient %v alone, %v and %v with the input's gradient", spec.Name, nd.Name, k, a0[k], g0[k], a1[k], g1[k])
					}
				}
				// The activations are the layer's value of a pass that
				// runs and keeps every node (Run), and a later pass on
				// other inputs leaves them as they are (Grad wrote them
				// in place, then gave the Net its own buffer back).
				keep := slices.Clone(a0)
				if _, err := n.Run(x, false, nil); err != nil {
					t.Fatal(err)
				}
				if kept := n.kept(n.ws, B, x, l.Node+1); !slices.Equal(kept, a0) {
					t.Fatalf("%s %s: Grad's activations differ from Run's", spec.Name, nd.Name)
				}
				if _, err := n.Run(randVec(rng, len(x)), false, nil); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(a0, keep) || !slices.Equal(a1, keep) {
					t.Fatalf("%s %s: a later pass changed Grad's activations", spec.Name, nd.Name)
				}
			}
		}
	}
	// A layer after the output node is refused: no pass computes it.
	after := trunkSpecs()[1]
	after.Output = "fc2"
	after.Nodes = append(after.Nodes, wnode("late", "relu", []string{"fc2"}, nil))
	na := randomNet(t, after, 5)
	late, err := na.Layer("late")
	if err != nil {
		t.Fatal(err)
	}
	in := na.shapes[0]
	sz := 2 * late.Shape.Size()
	err = na.Grad(make([]float32, 2*in.Size()), GradRequest{Targets: []int{0, 1}, Layer: &late, Act: make([]float32, sz), LayerGrad: make([]float32, sz)})
	if want := `layer "late" (node "late") comes after the output node "fc2"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a layer after the output: error %v, want one containing %q", err, want)
	}
	// The plan folds a ReLU below the layer exactly when its producer's
	// Forward applies it.
	n := randomNet(t, fuseSpec(), 1)
	var got []string
	below := len(n.nodes)
	for i := range n.nodes {
		if n.folded[i] && n.keepFuses(n.nodes[i].inputs[0]-1, false, below) {
			got = append(got, n.nodes[i].name)
		}
	}
	if want := []string{"r5"}; !slices.Equal(got, want) {
		t.Errorf("an inference pass folds %v, want %v (c5's; not bn1's or bn2's)", got, want)
	}
}
