package graph

import (
	"fmt"
	"math"

	"github.com/uaxai/uaxai/sdk/nn/ops"
)

// workspace holds a Net's buffers for batches of up to capB samples.
type workspace struct {
	capB    int
	fwd     [][]float32 // inference slots
	acts    [][]float32 // gradient mode: value v's own buffer (nil for v = 0)
	bwd     [][]float32 // gradient slots
	scratch [][]float32 // per input position: a gradient to be added
	idx     [][]int32   // per node
	logits  []float32
	probs   []float32
	seed    []float32
	calls   []Call
	init    []bool
}

func (n *Net) workspace(B int) *workspace {
	if n.ws != nil && n.ws.capB >= B {
		return n.ws
	}
	w := &workspace{capB: B}
	for _, s := range n.fwdSize {
		w.fwd = append(w.fwd, make([]float32, B*s))
	}
	for _, s := range n.bwdSize {
		w.bwd = append(w.bwd, make([]float32, B*s))
	}
	w.acts = make([][]float32, len(n.shapes))
	maxIn, maxSize := 0, 0
	for _, s := range n.shapes {
		maxSize = max(maxSize, s.Size())
	}
	w.calls = make([]Call, len(n.nodes))
	w.idx = make([][]int32, len(n.nodes))
	for i, nd := range n.nodes {
		maxIn = max(maxIn, len(nd.inputs))
		w.idx[i] = make([]int32, B*nd.idx)
		c := &w.calls[i]
		c.A, c.In, c.Out = nd.attrs, nd.in, nd.out
		c.X = make([][]float32, len(nd.inputs))
		c.DX = make([][]float32, len(nd.inputs))
		c.P = make([][]float32, len(nd.params))
		c.DP = make([][]float32, len(nd.params))
	}
	for range maxIn {
		w.scratch = append(w.scratch, make([]float32, B*maxSize))
	}
	K := n.Classes()
	w.logits = make([]float32, B*K)
	w.probs = make([]float32, B*K)
	w.seed = make([]float32, B*K)
	w.init = make([]bool, len(n.shapes))
	n.ws = w
	return w
}

func (n *Net) batch(x []float32) (int, error) {
	per := n.shapes[0].Size()
	if len(x) == 0 || len(x)%per != 0 {
		return 0, fmt.Errorf("graph %q: input of %d values; need B x %d channels x %d steps = a positive multiple of %d", n.spec.Name, len(x), n.shapes[0].C, n.shapes[0].T, per)
	}
	return len(x) / per, nil
}

// call prepares node i's Call on the value buffers val.
func (n *Net) call(w *workspace, i, B int, val func(v int) []float32) *Call {
	nd := &n.nodes[i]
	c := &w.calls[i]
	c.B = B
	for j, v := range nd.inputs {
		c.X[j] = val(v)
	}
	c.Y = val(i + 1)
	for j, p := range nd.params {
		c.P[j] = n.Theta[n.params[p].Offset : n.params[p].Offset+n.params[p].Len]
	}
	c.Idx = w.idx[i][:B*nd.idx]
	return c
}

// Forward writes the class probabilities of the B = len(x)/(C*T)
// samples of x (B x C x T, channel-major) to probs (B x K): the output
// node's values if its op is softmax, else the softmax of its logits.
// Inference reuses buffers as planned by liveness. It returns an error if
// x has the wrong length or a probability is not finite.
func (n *Net) Forward(probs, x []float32) error {
	B, err := n.batch(x)
	if err != nil {
		return err
	}
	if len(probs) != B*n.Classes() {
		panic(fmt.Sprintf("graph: probs has length %d, want %d", len(probs), B*n.Classes()))
	}
	w := n.workspace(B)
	val := func(v int) []float32 {
		if v == 0 {
			return x
		}
		return w.fwd[n.fwdSlot[v]][:B*n.shapes[v].Size()]
	}
	for i := range n.nodes {
		if i > n.output {
			break
		}
		c := n.call(w, i, B, val)
		n.nodes[i].op.Forward(c)
	}
	return n.finish(probs, val(n.output+1))
}

// finish writes the probabilities from the output node's values y.
func (n *Net) finish(probs, y []float32) error {
	K := n.Classes()
	if n.nodes[n.output].op.Kind == "softmax" {
		copy(probs, y)
	} else {
		ops.Softmax(probs, y, K, 1)
	}
	for j, p := range probs {
		if math.IsNaN(float64(p)) || math.IsInf(float64(p), 0) {
			return fmt.Errorf("graph %q: sample %d class %d: probability %v (the input or the parameters hold non-finite values)", n.spec.Name, j/K, j%K, p)
		}
	}
	return nil
}

// GradRequest says what Grad computes besides the gradients' pass. Every
// slice is optional (nil: not computed) except Targets.
type GradRequest struct {
	// Targets are the classes explained, one per sample, 0 <= t < K.
	Targets []int
	// Probs receives the probabilities (B x K).
	Probs []float32
	// Input receives d p_target / d x (B x C x T).
	Input []float32
	// Params has d p_target / d Theta, summed over the batch, ADDED to it
	// (NumParams values; running statistics get none).
	Params []float32
	// Layer, if non-nil, names a layer whose output A (B x C x T of its
	// Shape) goes to Act and d p_target / d A to LayerGrad.
	Layer          *Layer
	Act, LayerGrad []float32
}

// Grad runs x forward keeping every value, then backpropagates each
// sample's p_target through the graph: a residual addition passes its
// gradient to both inputs, a concatenation splits it, and a value read by
// several nodes sums their gradients.
func (n *Net) Grad(x []float32, r GradRequest) error {
	B, err := n.batch(x)
	if err != nil {
		return err
	}
	K := n.Classes()
	if len(r.Targets) != B {
		return fmt.Errorf("graph %q: %d targets for %d samples", n.spec.Name, len(r.Targets), B)
	}
	for b, t := range r.Targets {
		if t < 0 || t >= K {
			return fmt.Errorf("graph %q: sample %d: target class %d; need 0 <= target < %d", n.spec.Name, b, t, K)
		}
	}
	check := func(what string, s []float32, want int) {
		if s != nil && len(s) != want {
			panic(fmt.Sprintf("graph: %s has length %d, want %d", what, len(s), want))
		}
	}
	check("Probs", r.Probs, B*K)
	check("Input", r.Input, len(x))
	check("Params", r.Params, n.nparam)
	if r.Layer != nil {
		check("Act", r.Act, B*r.Layer.Shape.Size())
		check("LayerGrad", r.LayerGrad, B*r.Layer.Shape.Size())
	}
	w := n.workspace(B)
	val := func(v int) []float32 {
		if v == 0 {
			return x
		}
		sz := B * n.shapes[v].Size()
		if len(w.acts[v]) < sz {
			w.acts[v] = make([]float32, w.capB*n.shapes[v].Size())
		}
		return w.acts[v][:sz]
	}
	for i := 0; i <= n.output; i++ {
		n.nodes[i].op.Forward(n.call(w, i, B, val))
	}
	out := val(n.output + 1)
	probs := w.probs[:B*K]
	if err := n.finish(probs, out); err != nil {
		return err
	}
	if r.Probs != nil {
		copy(r.Probs, probs)
	}
	if r.Layer != nil && r.Act != nil {
		copy(r.Act, val(r.Layer.Node+1))
	}
	grad := func(v int) []float32 {
		if v == 0 {
			return r.Input
		}
		return w.bwd[n.bwdSlot[v]][:B*n.shapes[v].Size()]
	}
	// Seed: d p_target / d (output node's values).
	seed := w.seed[:B*K]
	clear(seed)
	for b, t := range r.Targets {
		seed[b*K+t] = 1
	}
	dout := grad(n.output + 1)
	if n.nodes[n.output].op.Kind == "softmax" {
		copy(dout, seed)
	} else {
		ops.SoftmaxBackward(dout, seed, probs, K, 1)
	}
	clear(w.init)
	w.init[n.output+1] = true
	for i := n.output; i >= 0; i-- {
		if !n.anc[i] {
			continue
		}
		nd := &n.nodes[i]
		c := n.call(w, i, B, val)
		c.DY = grad(i + 1)
		if r.Layer != nil && r.Layer.Node == i && r.LayerGrad != nil {
			copy(r.LayerGrad, c.DY)
		}
		for j, v := range nd.inputs {
			c.DX[j] = nil
			if v == 0 && r.Input == nil {
				continue
			}
			if !w.init[v] && !contains(nd.inputs[:j], v) {
				c.DX[j] = grad(v)
			} else {
				c.DX[j] = w.scratch[j][:B*n.shapes[v].Size()]
			}
		}
		for j, p := range nd.params {
			c.DP[j] = nil
			if q := n.params[p]; r.Params != nil && q.Trainable {
				c.DP[j] = r.Params[q.Offset : q.Offset+q.Len]
			}
		}
		nd.op.Backward(c)
		if n.backwardHook != nil {
			n.backwardHook(i, c)
		}
		for j, v := range nd.inputs {
			if c.DX[j] == nil {
				continue
			}
			if g := grad(v); &c.DX[j][0] != &g[0] {
				for k, d := range c.DX[j] {
					g[k] += d
				}
			}
			w.init[v] = true
		}
	}
	if r.Layer != nil && r.LayerGrad != nil && !n.anc[r.Layer.Node] {
		clear(r.LayerGrad) // the output does not depend on the layer
	}
	if r.Input != nil && !w.init[0] {
		clear(r.Input) // the output does not depend on the input
	}
	return nil
}
