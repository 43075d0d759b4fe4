package graph

import (
	"github.com/uaxai/uaxai/internal/fdiff"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTrainPassFiniteDifferences: in a training pass (batchnorm on the
// batch's statistics, dropout masks from a fixed seed), Backprop's
// gradients of L = sum w . Run(x) with respect to x and to every
// trainable parameter agree with finite differences of Run itself, on the
// residual+concat graph. The batch statistics make every sample's output
// depend on every other sample, which the eval-mode gradient would miss.
func TestTrainPassFiniteDifferences(t *testing.T) {
	net := randomNet(t, residualConcatSpec(false), 11)
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
	run()
	gx := make([]float32, len(x))
	gp := make([]float32, net.NumParams())
	net.Backprop(w, gp, gx)
	evalOut := make([]float32, B*K)
	copy(evalOut, run())
	if e, _ := net.Run(x, false, nil); slices.Equal(e, evalOut) {
		t.Fatal("the training pass gives the evaluation pass's outputs: batch statistics or dropout not used")
	}
	trainable := make([]bool, net.NumParams())
	for _, p := range net.Params() {
		for j := range p.Len {
			trainable[p.Offset+j] = p.Trainable
		}
	}
	for _, c := range []struct {
		what string
		got  []float32
		vals []float32
		skip func(int) bool
	}{
		{"input", gx, x, func(int) bool { return false }},
		{"params", gp, net.Theta, func(j int) bool { return !trainable[j] }},
	} {
		d := fdiff.Compare(c.got, c.vals, f, 0.02, c.skip)
		top, worst := d.Top, d.Worst
		for j := range c.got {
			if c.skip(j) && c.got[j] != 0 {
				t.Errorf("%s %d: gradient %g of a running statistic", c.what, j, c.got[j])
			}
		}
		t.Logf("%s: largest |fd| %.3g, worst |grad - fd| %.3g", c.what, top, worst)
		if top == 0 || !(worst <= 1e-3*top) {
			t.Errorf("%s: worst |grad - fd| %.3g, largest |fd| %.3g", c.what, worst, top)
		}
	}
}

// TestTrainBatchNorm: a training pass through input -> batchnorm ->
// globalavgpool normalises with the batch's statistics, so the batch mean
// of the output is beta (closed form: the normalised values have mean 0
// over batch and time), and updates the running statistics as PyTorch
// does: (1-m) old + m batch mean, and (1-m) old + m unbiased variance.
func TestTrainBatchNorm(t *testing.T) {
	spec := Spec{Name: "bn", InChannels: 3, InLen: 7, Nodes: []Node{
		{Name: "bn", Op: "batchnorm1d", Attrs: map[string]any{"momentum": 0.25}},
		{Name: "gap", Op: "globalavgpool"},
	}}
	net := randomNet(t, spec, 2)
	rng := rand.New(rand.NewPCG(7, 8))
	const B, C, T = 5, 3, 7
	x := make([]float32, B*C*T)
	for j := range x {
		x[j] = float32(2 + 3*rng.NormFloat64())
	}
	theta := append([]float32(nil), net.Theta...)
	view := func(p []float32, suffix string) []float32 {
		for _, q := range net.Params() {
			if q.Name == "bn."+suffix {
				return p[q.Offset : q.Offset+q.Len]
			}
		}
		t.Fatalf("no parameter bn.%s", suffix)
		return nil
	}
	out, err := net.Run(x, true, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	beta := view(theta, "bias")
	for c := range C {
		var s, q float64
		for b := range B {
			s += float64(out[b*C+c])
		}
		if got := s / B; math.Abs(got-float64(beta[c])) > 1e-5 {
			t.Errorf("channel %d: batch mean of the output %.7g, want beta %.7g", c, got, beta[c])
		}
		s = 0
		for b := range B {
			for i := range T {
				s += float64(x[(b*C+c)*T+i])
			}
		}
		mu := s / (B * T)
		for b := range B {
			for i := range T {
				d := float64(x[(b*C+c)*T+i]) - mu
				q += d * d
			}
		}
		unbiased := q / (B*T - 1)
		wantMean := 0.75*float64(view(theta, "running_mean")[c]) + 0.25*mu
		wantVar := 0.75*float64(view(theta, "running_var")[c]) + 0.25*unbiased
		if got := float64(view(net.Theta, "running_mean")[c]); math.Abs(got-wantMean) > 1e-5*math.Abs(wantMean)+1e-6 {
			t.Errorf("channel %d: running_mean %.7g, want %.7g", c, got, wantMean)
		}
		if got := float64(view(net.Theta, "running_var")[c]); math.Abs(got-wantVar) > 1e-5*wantVar {
			t.Errorf("channel %d: running_var %.7g, want %.7g", c, got, wantVar)
		}
	}
	// An evaluation pass leaves the running statistics alone.
	after := append([]float32(nil), net.Theta...)
	if _, err := net.Run(x, false, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(after, net.Theta) {
		t.Error("an evaluation pass changed the parameters")
	}
}

// TestTrainDropout: a training pass through dropout zeroes a share p of
// the values (binomial, within 5 standard deviations) and scales the rest
// by 1/(1-p); the same seed gives the same mask; an evaluation pass is
// the identity; Backprop passes the gradient through the same mask.
func TestTrainDropout(t *testing.T) {
	const T, p = 4000, 0.3
	spec := Spec{Name: "drop", InChannels: 1, InLen: T, Nodes: []Node{
		{Name: "drop", Op: "dropout", Attrs: map[string]any{"p": p}},
		{Name: "flat", Op: "flatten"},
	}}
	net, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, T)
	for j := range x {
		x[j] = float32(j%17) + 1
	}
	out, err := net.Run(x, true, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	got := append([]float32(nil), out...)
	zeros := 0
	for j, v := range got {
		switch v {
		case 0:
			zeros++
		case x[j] * float32(1/(1-p)):
		default:
			t.Fatalf("value %d: %g, want 0 or %g", j, v, x[j]*float32(1/(1-p)))
		}
	}
	sd := math.Sqrt(p * (1 - p) / T)
	if share := float64(zeros) / T; math.Abs(share-p) > 5*sd {
		t.Errorf("share of zeros %.4f, want %.2f +- %.4f", share, p, 5*sd)
	}
	dy := make([]float32, T)
	for j := range dy {
		dy[j] = 1
	}
	dx := make([]float32, T)
	net.Backprop(dy, nil, dx)
	for j := range dx {
		if (dx[j] == 0) != (got[j] == 0) {
			t.Fatalf("value %d: gradient %g through a mask that gave %g", j, dx[j], got[j])
		}
	}
	again, _ := net.Run(x, true, rand.New(rand.NewPCG(3, 3)))
	if !slices.Equal(again, got) {
		t.Error("the same seed gave another mask")
	}
	ev, _ := net.Run(x, false, nil)
	if !slices.Equal(ev, x) {
		t.Error("dropout in an evaluation pass is not the identity")
	}
}

// TestWorkersSameBytes: a pass's outputs, parameter gradients and input
// gradients are the same bits for 1, 2 and 3 workers (a node's samples
// are split into chunks by the batch alone), in training and in
// evaluation, for batches that do not split into 4 equal chunks (5 once
// made a chunk past the batch's end, 6 and 9 an empty one). (That the
// chunks' gradients are right, the finite differences above check: a
// parameter gradient is always chunked.)
func TestWorkersSameBytes(t *testing.T) {
	for _, B := range []int{5, 6, 7, 9} {
		workersSameBytes(t, B)
	}
}

func workersSameBytes(t *testing.T, B int) {
	var ref [][]float32
	for _, workers := range []int{1, 2, 3} {
		net := randomNet(t, residualConcatSpec(false), 3)
		net.Workers = workers
		got := passes(t, net, B, true, false)
		if ref == nil {
			ref = got
			continue
		}
		for k := range got {
			if !slices.Equal(got[k], ref[k]) {
				t.Errorf("batch %d, %d workers: result %d differs from 1 worker's", B, workers, k)
			}
		}
	}
}

// passes runs net on B random samples once for each train flag (dropout
// from one seed), backpropagating a fixed output gradient, and returns
// per pass the outputs, the parameter and input gradients, and Theta
// after it (training updates the running statistics).
func passes(t *testing.T, net *Net, B int, train ...bool) [][]float32 {
	t.Helper()
	x := make([]float32, B*net.InShape().Size())
	r := rand.New(rand.NewPCG(4, 4))
	for j := range x {
		x[j] = float32(r.NormFloat64())
	}
	var got [][]float32
	for _, tr := range train {
		out, err := net.Run(x, tr, rand.New(rand.NewPCG(5, 5)))
		if err != nil {
			t.Fatal(err)
		}
		o := append([]float32(nil), out...)
		dOut := make([]float32, len(o))
		for j := range dOut {
			dOut[j] = float32(j%5) - 2
		}
		gp, gx := make([]float32, net.NumParams()), make([]float32, len(x))
		net.Backprop(dOut, gp, gx)
		got = append(got, o, gp, gx, append([]float32(nil), net.Theta...))
	}
	return got
}

// TestTrainingSkipsGradientsNoOneReads: in a training pass without an
// input gradient, the nodes below every trainable parameter (a pad on the
// input) are not run and the first convolution is asked for no input
// gradient; the parameter gradients are those of the pass that computes
// the input gradient as well, bit for bit.
func TestTrainingSkipsGradientsNoOneReads(t *testing.T) {
	n := func(name, op string, inputs []string, attrs map[string]any) Node {
		return Node{Name: name, Op: op, Inputs: inputs, Attrs: attrs}
	}
	spec := Spec{Name: "padfirst", InChannels: 2, InLen: 40, Nodes: []Node{
		n("pad", "pad", nil, map[string]any{"left": int64(3), "right": int64(4)}),
		n("c1", "conv1d", nil, map[string]any{"out": 4, "kernel": 8}),
		n("r1", "relu", nil, nil),
		n("c2", "conv1d", nil, map[string]any{"out": 5, "kernel": 3, "padding": []int64{1, 1}}),
		n("gap", "globalavgpool", nil, nil),
		n("fc", "linear", nil, map[string]any{"out": 3}),
	}}
	net := randomNet(t, spec, 3)
	B := 4
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, B*net.InShape().Size())
	for j := range x {
		x[j] = float32(rng.NormFloat64())
	}
	dy := make([]float32, B*net.Classes())
	for j := range dy {
		dy[j] = float32(rng.NormFloat64())
	}
	grads := func(withX bool) (gp []float32, ran map[int]bool, dxAsked map[int]bool) {
		ran, dxAsked = map[int]bool{}, map[int]bool{}
		net.backwardHook = func(i int, c *Call) {
			ran[i] = true
			dxAsked[i] = c.DX[0] != nil
		}
		defer func() { net.backwardHook = nil }()
		if _, err := net.Run(x, true, rand.New(rand.NewPCG(9, 9))); err != nil {
			t.Fatal(err)
		}
		gp = make([]float32, net.NumParams())
		var gx []float32
		if withX {
			gx = make([]float32, len(x))
		}
		net.Backprop(dy, gp, gx)
		return gp, ran, dxAsked
	}
	gp, ran, asked := grads(false)
	gpx, ranx, askedx := grads(true)
	if !slices.Equal(gp, gpx) {
		t.Error("the parameter gradients depend on whether the input gradient is asked for")
	}
	if ran[0] || asked[1] {
		t.Errorf("without an input gradient: pad ran %v, conv c1 asked for its input gradient %v", ran[0], asked[1])
	}
	if !ranx[0] || !askedx[1] || !asked[3] {
		t.Errorf("pad ran %v and c1 asked for dx %v with the input gradient; c2 asked for dx %v", ranx[0], askedx[1], asked[3])
	}
}

// TestForwardLogits: the logits of a network whose output node is a
// softmax are the values that softmax reads: the same bits as the
// network without it, whose probabilities are the softmax of its logits.
func TestForwardLogits(t *testing.T) {
	n := func(name, op string, attrs map[string]any) Node { return Node{Name: name, Op: op, Attrs: attrs} }
	nodes := []Node{
		n("c1", "conv1d", map[string]any{"out": int64(4), "kernel": int64(3)}),
		n("r1", "relu", nil),
		n("gap", "globalavgpool", nil),
		n("bn", "batchnorm1d", nil),
		n("fc", "linear", map[string]any{"out": int64(5)}),
	}
	plain := randomNet(t, Spec{Name: "plain", InChannels: 2, InLen: 30, Nodes: nodes}, 4)
	soft, err := Compile(Spec{Name: "soft", InChannels: 2, InLen: 30, Nodes: append(slices.Clone(nodes), n("sm", "softmax", nil))})
	if err != nil {
		t.Fatal(err)
	}
	copy(soft.Theta, plain.Theta)
	rng := rand.New(rand.NewPCG(3, 3))
	B, K := 3, 5
	x := make([]float32, B*60)
	for j := range x {
		x[j] = float32(rng.NormFloat64())
	}
	lp, ls, pp := make([]float32, B*K), make([]float32, B*K), make([]float32, B*K)
	if err := plain.ForwardLogits(lp, x); err != nil {
		t.Fatal(err)
	}
	if err := soft.ForwardLogits(ls, x); err != nil {
		t.Fatal(err)
	}
	if err := plain.Forward(pp, x); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lp, ls) {
		t.Errorf("logits with a softmax output %v, without %v", ls, lp)
	}
	for b := range B {
		var z float64
		for _, v := range lp[b*K : (b+1)*K] {
			z += math.Exp(float64(v))
		}
		for k := range K {
			if p := math.Exp(float64(lp[b*K+k])) / z; math.Abs(p-float64(pp[b*K+k])) > 1e-6 {
				t.Errorf("sample %d class %d: softmax of the logits %v, Forward %v", b, k, p, pp[b*K+k])
			}
		}
	}
}
