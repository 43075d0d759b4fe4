package graph

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/uaxai/uaxai/internal/checked"
	"github.com/uaxai/uaxai/sdk/nn/ops"
)

// workspace holds a Net's buffers for batches of up to capB samples.
type workspace struct {
	capB    int
	fwd     [][]float32 // inference slots
	evf     [][]float32 // the folded inference pass's slots (made on first use)
	evcalls []Call      // the folded pass's calls of absorbing nodes (made with evf)
	acts    [][]float32 // gradient mode: value v's own buffer (nil for v = 0)
	bwd     [][]float32 // gradient slots
	scratch [][]float32 // per input position: a gradient to be added
	idx     [][]int32   // per node
	logits  []float32
	probs   []float32
	seed    []float32
	calls   []Call
	init    []bool
	state   [][]float32     // per node: training scratch (Op.State)
	chunks  [][]Call        // per node: its chunk calls (chunks.go)
	chunkDP [][][][]float32 // per node, chunk, parameter: gradient buffers
	// per value: the form of its gradient in a training backward pass,
	// and its hot values and steps (sparsegrad.go)
	form  []GradForm
	hotDY [][]float32
	hotAt [][]int32
	sup   [][][]int32
	seg   []int // forwardKeep's run of nodes (samples.go)
	st    stage // the parallel step (stage.go) and its work
	cw    callsWork
	sw    samplesWork
	bw    backWork
	// backpropTrain's run (samples.go): the planned steps, and per
	// gradient buffer the value that holds it in the run (-1: none)
	bsteps   []bstep
	slotVal  []int
	slotUsed []int
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
	w.state = make([][]float32, len(n.nodes))
	w.form = make([]GradForm, len(n.shapes))
	w.hotDY = make([][]float32, len(n.shapes))
	w.hotAt = make([][]int32, len(n.shapes))
	w.sup = make([][][]int32, len(n.shapes))
	w.seg = make([]int, 0, len(n.nodes))
	n.ws = w
	return w
}

func (n *Net) batch(x []float32) (int, error) {
	per := n.shapes[0].Size()
	if len(x) == 0 || len(x)%per != 0 {
		return 0, fmt.Errorf("graph %q: input of %d values; need B x %d channels x %d steps = a positive multiple of %d", n.spec.Name, len(x), n.shapes[0].C, n.shapes[0].T, per)
	}
	B := len(x) / per
	if _, ok := checked.Mul(B, n.values); !ok {
		return 0, fmt.Errorf("graph %q: a batch of %d samples of %d values each overflows an int; need a smaller batch", n.spec.Name, B, n.values)
	}
	return B, nil
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
	c.Fused, c.Train = false, false
	c.P = n.theta(c.P[:0], i)
	c.Idx = w.idx[i][:B*nd.idx]
	c.HotAt, c.HotDY, c.Steps, c.DXSteps = nil, nil, nil, nil
	return c
}

// Forward writes the class probabilities of the B = len(x)/(C*T)
// samples of x (B x C x T, channel-major) to probs (B x K): the output
// node's values if its op is softmax, else the softmax of its logits.
// Inference reuses buffers as planned by liveness. It returns an error if
// x has the wrong length or a probability is not finite.
func (n *Net) Forward(probs, x []float32) error { return n.forward(probs, x, n.evalOn, false) }

// ForwardLogits is Forward that writes the logits (B x K) instead: the
// values the softmax turns into the probabilities, the input of a softmax
// output node or else the output node's values.
func (n *Net) ForwardLogits(logits, x []float32) error {
	return n.forward(logits, x, n.evalOn, true)
}

// ForwardUnfolded is Forward without the folded pass (FoldEval): every
// node runs by itself, the arithmetic of the incremental paths
// (WindowProbs and SpanProbs compute an unperturbed input's probabilities
// with these bits).
func (n *Net) ForwardUnfolded(probs, x []float32) error { return n.forward(probs, x, false, false) }

func (n *Net) forward(probs, x []float32, fold, logits bool) error {
	B, err := n.batch(x)
	if err != nil {
		return err
	}
	if len(probs) != B*n.Classes() {
		panic(fmt.Sprintf("graph: probs has length %d, want %d", len(probs), B*n.Classes()))
	}
	w := n.workspace(B)
	slots, slot := w.fwd, n.fwdSlot
	if fold {
		if w.evf == nil {
			for _, s := range n.evSize {
				w.evf = append(w.evf, make([]float32, w.capB*s))
			}
			w.evcalls = make([]Call, len(n.nodes))
		}
		slots, slot = w.evf, n.evSlot
	}
	val := func(v int) []float32 {
		if v == 0 {
			return x
		}
		if slot[v] < 0 {
			return nil // folded away (evalfold.go)
		}
		return slots[slot[v]][:B*n.shapes[v].Size()]
	}
	for i := range n.nodes {
		if i > n.output {
			break
		}
		if fold && n.eskip[i] {
			continue // computed by the node that absorbed it
		}
		c := n.call(w, i, B, val)
		if g := n.egroup[i]; fold && g.last != i {
			fc := &w.evcalls[i] // a copy: c.P's slots are refilled from Theta by every call
			*fc = *c
			fc.Y, fc.Fused = val(g.last+1), g.relu >= 0
			if g.aff >= 0 {
				fc.P = n.evP[i]
			}
			c = fc
		}
		n.chunked(w, i, c, n.nodes[i].op.Forward, false)
	}
	if logits {
		y := val(n.output + 1)
		if n.nodes[n.output].op.Kind == "softmax" {
			y = val(n.nodes[n.output].inputs[0]) // alive: no node runs after the output
		}
		if y == nil { // folded into another node's pass
			return n.forward(probs, x, false, true)
		}
		copy(probs, y)
		return n.finite(probs, "logit")
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
	return n.finite(probs, "probability")
}

// finite reports the first value of out (B x K) that is not finite.
func (n *Net) finite(out []float32, what string) error {
	K := n.Classes()
	for j, p := range out {
		if math.IsNaN(float64(p)) || math.IsInf(float64(p), 0) {
			return fmt.Errorf("graph %q: sample %d class %d: %s %v (the input or the parameters hold non-finite values)", n.spec.Name, j/K, j%K, what, p)
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
	// Layer, if non-nil, names a layer at or before the output node whose
	// output A (B x C x T of its Shape) goes to Act (written during the
	// forward pass, which keeps A there) and d p_target / d A to
	// LayerGrad. Asked for LayerGrad alone (no Input, no Params), the
	// pass folds the ReLUs below the layer into the convolutions they
	// read, with the same bits.
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
		if r.Layer.Node > n.output {
			return fmt.Errorf("graph %q: layer %q (node %q) comes after the output node %q, so no pass computes it; need a layer at or before the output (spec key \"output\")", n.spec.Name, r.Layer.Path, r.Layer.Name, n.nodes[n.output].name)
		}
	}
	// Asked for a layer's gradient alone, the backward pass stops at the
	// layer (backprop), so below it no node's Backward reads a value:
	// there a node folds the ReLU that is its only reader where its
	// Forward applies it (planFusion, Op.EvalFuses: a convolution), with
	// the bits of the two run one after the other.
	below := -1
	if r.Layer != nil && r.LayerGrad != nil && r.Input == nil && r.Params == nil && n.anc[r.Layer.Node] {
		below = r.Layer.Node
	}
	w := n.workspace(B)
	if r.Layer != nil && r.Act != nil {
		// The pass keeps the layer's value in Act itself: no copy.
		v := r.Layer.Node + 1
		own := w.acts[v]
		w.acts[v] = r.Act
		defer func() { w.acts[v] = own }()
	}
	out := n.forwardKeep(x, B, false, nil, below)
	probs := w.probs[:B*K]
	if err := n.finish(probs, out); err != nil {
		return err
	}
	if r.Probs != nil {
		copy(r.Probs, probs)
	}
	// Seed: d p_target / d (output node's values).
	seed := w.seed[:B*K]
	clear(seed)
	for b, t := range r.Targets {
		seed[b*K+t] = 1
	}
	dout := n.gradBuf(w, B, r.Input, n.output+1)
	if n.nodes[n.output].op.Kind == "softmax" {
		copy(dout, seed)
	} else {
		ops.SoftmaxBackward(dout, seed, probs, K, 1)
	}
	n.backprop(B, x, false, r.Params, r.Input, r.Layer, r.LayerGrad)
	return nil
}

// Run runs the B samples of x (B x C x T) forward keeping every value for
// Backprop, and returns the output node's values, B x K: logits, or
// probabilities if its op is softmax (valid until the next call). With
// train set it is a training pass: batchnorm normalises with the batch's
// statistics and updates its running statistics in Theta, dropout draws
// its masks from rnd; otherwise it computes what Forward does.
func (n *Net) Run(x []float32, train bool, rnd *rand.Rand) ([]float32, error) {
	B, err := n.batch(x)
	if err != nil {
		return nil, err
	}
	if train && rnd == nil {
		panic("graph: a training pass needs a random source")
	}
	n.last = lastRun{x: x, B: B, train: train}
	return n.forwardKeep(x, B, train, rnd, -1), nil
}

// Backprop propagates dOut (B x K), the gradient of a loss with respect
// to the output values the last Run returned, back through that pass: it
// adds d loss / d Theta to dTheta (running statistics get none) and writes
// d loss / d x to dx; either may be nil. A training pass's batchnorm
// gradient includes the batch statistics' dependence on x.
func (n *Net) Backprop(dOut, dTheta, dx []float32) {
	l := n.last
	if l.x == nil {
		panic("graph: Backprop without a Run")
	}
	K := n.Classes()
	if len(dOut) != l.B*K || (dTheta != nil && len(dTheta) != n.nparam) || (dx != nil && len(dx) != len(l.x)) {
		panic(fmt.Sprintf("graph: Backprop of dOut %d (want %d), dTheta %d (want %d), dx %d (want %d)", len(dOut), l.B*K, len(dTheta), n.nparam, len(dx), len(l.x)))
	}
	copy(n.gradBuf(n.ws, l.B, dx, n.output+1), dOut)
	n.backprop(l.B, l.x, l.train, dTheta, dx, nil, nil)
}

// lastRun is what Backprop needs of the last Run.
type lastRun struct {
	x     []float32
	B     int
	train bool
}

// kept is value v of a pass that keeps every value (v = 0: the input x).
func (n *Net) kept(w *workspace, B int, x []float32, v int) []float32 {
	if v == 0 {
		return x
	}
	sz := B * n.shapes[v].Size()
	if len(w.acts[v]) < sz {
		w.acts[v] = make([]float32, w.capB*n.shapes[v].Size())
	}
	return w.acts[v][:sz]
}

// gradBuf is the gradient buffer of value v (v = 0: dx).
func (n *Net) gradBuf(w *workspace, B int, dx []float32, v int) []float32 {
	if v == 0 {
		return dx
	}
	return w.bwd[n.bwdSlot[v]][:B*n.shapes[v].Size()]
}

// forwardKeep runs every node up to the output keeping its value, and
// returns the output node's values. A training pass folds each planned
// pair (planFusion: the folded node's value is then written by the node
// it reads, whose own value is not); an inference pass folds the pairs
// whose folded node comes before node below (no pair for below < 0) and
// whose Forward applies the folded op (Op.EvalFuses): nothing reads
// their first node's value afterwards.
func (n *Net) forwardKeep(x []float32, B int, train bool, rnd *rand.Rand, below int) []float32 {
	w := n.workspace(B)
	val := func(v int) []float32 { return n.kept(w, B, x, v) }
	seg := w.seg[:0] // training: the nodes since the last TrainForward (samples.go)
	for i := 0; i <= n.output; i++ {
		if n.folded[i] && n.keepFuses(n.nodes[i].inputs[0]-1, train, below) {
			continue // computed by the node it reads (planFusion)
		}
		c := n.call(w, i, B, val)
		op := n.nodes[i].op
		c.Train, c.Rand, c.Workers = train, rnd, n.Workers
		if f := n.fuse[i]; n.keepFuses(i, train, below) {
			c.Y, c.Fused = val(f+1), true
		}
		if train && op.TrainForward != nil {
			n.forwardSamples(w, seg, B)
			seg = seg[:0]
			c.State = n.state(w, i, B)
			op.TrainForward(c)
			continue
		}
		if train {
			seg = append(seg, i)
			continue
		}
		n.chunked(w, i, c, op.Forward, false)
	}
	n.forwardSamples(w, seg, B)
	return val(n.output + 1)
}

// keepFuses says whether node j of forwardKeep's pass computes the node
// it folds (planFusion) as well.
func (n *Net) keepFuses(j int, train bool, below int) bool {
	f := n.fuse[j]
	return f >= 0 && (train || f < below && n.nodes[j].op.EvalFuses == n.nodes[f].op.Kind)
}

// state is node i's training scratch for a batch of B.
func (n *Net) state(w *workspace, i, B int) []float32 {
	nd := &n.nodes[i]
	if nd.op.State == nil {
		return nil
	}
	sz := nd.op.State(nd.attrs, nd.in, B)
	if len(w.state[i]) < sz {
		w.state[i] = make([]float32, nd.op.State(nd.attrs, nd.in, w.capB))
	}
	return w.state[i][:sz]
}

// backprop runs the backward pass of a forwardKeep whose output gradient
// is in its gradient buffer: a residual addition passes its gradient to
// both inputs, a concatenation splits it, and a value read by several
// nodes sums their gradients. It adds parameter gradients to dTheta,
// writes dx, and copies layer's gradient to layerGrad (each if not nil).
func (n *Net) backprop(B int, x []float32, train bool, dTheta, dx []float32, layer *Layer, layerGrad []float32) {
	if train {
		n.backpropTrain(B, x, dTheta, dx) // samples.go
		return
	}
	w := n.ws
	val := func(v int) []float32 { return n.kept(w, B, x, v) }
	grad := func(v int) []float32 { return n.gradBuf(w, B, dx, v) }
	clear(w.init)
	w.init[n.output+1] = true
	for i := n.output; i >= 0; i-- {
		if !n.anc[i] || (train && n.folded[i]) {
			continue
		}
		nd := &n.nodes[i]
		c := n.call(w, i, B, val)
		c.Train = train
		c.DY = grad(i + 1)
		if f := n.fuse[i]; train && f >= 0 {
			c.Y, c.DY, c.Fused = val(f+1), grad(f+1), true
		}
		if layer != nil && layerGrad != nil && dx == nil && dTheta == nil && !train && nd.op.MaxOverTime {
			if chain, ok := n.sparseChain(i, layer.Node); ok {
				n.sparseLayerGrad(w, B, x, c, chain, layer.Node, layerGrad)
				return
			}
		}
		if layer != nil && layer.Node == i && layerGrad != nil {
			copy(layerGrad, c.DY)
			if dx == nil && dTheta == nil {
				return // nothing below the layer is asked for (Grad-CAM)
			}
		}
		n.gradTargets(w, c, i, B, dx, dTheta, grad)
		if train && nd.op.TrainBackward != nil {
			c.State = n.state(w, i, B)
			c.Workers = n.Workers
			nd.op.TrainBackward(c)
		} else {
			n.chunked(w, i, c, nd.op.Backward, false)
		}
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
	if layer != nil && layerGrad != nil && !n.anc[layer.Node] {
		clear(layerGrad) // the output does not depend on the layer
	}
	if dx != nil && !w.init[0] {
		clear(dx) // the output does not depend on the input
	}
}

// sparseChain returns, for node g (MaxOverTime) and an earlier node l,
// the nodes between them when g reads l's value through a chain of
// one-input Pointwise nodes without parameters, each value of which
// (l's included) has one reader: the chain from g's reader's side down,
// empty when g reads l itself. Then the gradient of l's value is zero but
// at the maximum of each row g pools (sparseLayerGrad).
func (n *Net) sparseChain(g, l int) ([]int, bool) {
	var chain []int
	v := n.nodes[g].inputs[0]
	for {
		if len(n.readers[v]) != 1 {
			return nil, false
		}
		a := v - 1
		if a == l {
			return chain, true
		}
		nd := &n.nodes[a]
		if a < l || !nd.op.Pointwise || len(nd.inputs) != 1 || len(nd.params) != 0 {
			return nil, false
		}
		chain = append(chain, a)
		v = nd.inputs[0]
	}
}

// sparseLayerGrad writes to layerGrad the gradient of value l+1, which
// the MaxOverTime node of call c reads through chain (sparseChain): for
// each sample and channel, the pool's gradient at the row's maximum (the
// step in c.Idx, the one GlobalMaxPoolBackward scatters it to) passed
// back through the chain's Backward on that one value, and zero at every
// other step: what the dense pass computes, without its passes over the
// B x C x T values.
func (n *Net) sparseLayerGrad(w *workspace, B int, x []float32, c *Call, chain []int, l int, layerGrad []float32) {
	clear(layerGrad)
	C, T := c.In[0].C, c.In[0].T
	var one [3][1]float32 // the value's input, dy and dx of a chain node
	var pc Call
	pc.In, pc.X, pc.DX = []Shape{{1, 1}}, [][]float32{nil}, [][]float32{nil}
	pc.Out, pc.B = Shape{1, 1}, 1
	for b := 0; b < B; b++ {
		for ch := 0; ch < C; ch++ {
			t := int(c.Idx[b*C+ch])
			at := (b*C+ch)*T + t
			d := c.DY[b*C+ch]
			for _, a := range chain {
				nd := &n.nodes[a]
				one[0][0] = n.kept(w, B, x, nd.inputs[0])[at]
				one[1][0] = d
				pc.A, pc.X[0], pc.Y, pc.DY, pc.DX[0] = nd.attrs, one[0][:], n.kept(w, B, x, a+1)[at:at+1], one[1][:], one[2][:]
				nd.op.Backward(&pc)
				d = one[2][0]
			}
			layerGrad[at] = d
		}
	}
}

// gradTargets points call c of node i's backward pass at its gradients:
// DX[j] at input j's gradient buffer where nothing wrote it yet, else at
// a scratch to be added to it (nil for the input x when dx is), DP at
// dTheta's slices of its trainable parameters (nil without dTheta).
func (n *Net) gradTargets(w *workspace, c *Call, i, B int, dx, dTheta []float32, grad func(v int) []float32) {
	nd := &n.nodes[i]
	for j, v := range nd.inputs {
		c.DX[j] = nil
		if dx == nil && (v == 0 || c.Train && !n.learns[v]) {
			continue // no one reads this gradient
		}
		if !w.init[v] && !contains(nd.inputs[:j], v) {
			c.DX[j] = grad(v)
		} else {
			c.DX[j] = w.scratch[j][:B*n.shapes[v].Size()]
		}
	}
	for j, p := range nd.params {
		c.DP[j] = nil
		if q := n.params[p]; dTheta != nil && q.Trainable {
			c.DP[j] = dTheta[q.Offset : q.Offset+q.Len]
		}
	}
}
