package graph

import "github.com/uaxai/uaxai/sdk/nn/ops"

// A training pass hands a gradient on sparse where the op table allows
// it (Op.MaxOverTime, Op.SparseGrad): a MaxOverTime node's input
// gradient, zero but at each row's maximum, goes unformed (HotGrad: the
// node's output gradient and its Idx) to the node producing that input,
// if that node's op takes it; an op that takes a sparse gradient writes
// its own input's gradient in the form its SparseGrad names (a
// convolution: on the steps its taps reach, StepsGrad). A node whose op
// does not take its output gradient's form gets the gradient formed
// (densify) and runs its usual backward. The paper's network so skips
// forming and scanning the mostly-zero gradients between its global max
// pool and its batchnorm (conv4, relu, conv3, relu), as the layer-list
// engine did.

// trainProducer is the node whose training backward reads value v's
// gradient (v >= 1): node v-1, or the node that folded it (Op.Fuses).
func (n *Net) trainProducer(v int) int {
	p := v - 1
	if n.folded[p] {
		for j, f := range n.fuse {
			if f == p {
				return j
			}
		}
	}
	return p
}

// sparseInput reports whether node i's one input value v (its only
// reader being i) may get its gradient from node i in form dy: the form
// node i's op writes it in, or false.
func (n *Net) sparseInput(i int, dy GradForm) (GradForm, bool) {
	nd := &n.nodes[i]
	if nd.op.SparseGrad == nil || len(nd.inputs) != 1 {
		return DenseGrad, false
	}
	if v := nd.inputs[0]; v != 0 && len(n.readers[v]) != 1 {
		return DenseGrad, false
	}
	return nd.op.SparseGrad(nd.attrs, nd.in, dy)
}

// handsOnHot reports whether node i, a MaxOverTime node in a training
// pass, hands its input's gradient on hot: its input is a value of its
// own (not the network's input) read by it alone, whose producer takes
// HotGrad.
func (n *Net) handsOnHot(i int) bool {
	nd := &n.nodes[i]
	if !nd.op.MaxOverTime || len(nd.inputs) != 1 {
		return false
	}
	v := nd.inputs[0]
	if v == 0 || len(n.readers[v]) != 1 {
		return false
	}
	_, ok := n.sparseInput(n.trainProducer(v), HotGrad)
	return ok
}

// hotBuf is value v's buffer of hot values (B x C of its shape).
func (w *workspace) hotBuf(n *Net, v, B int) []float32 {
	C := n.shapes[v].C
	if len(w.hotDY[v]) < B*C {
		w.hotDY[v] = make([]float32, w.capB*C)
	}
	return w.hotDY[v][:B*C]
}

// steps is value v's lists of steps, one a sample, each of capacity T.
func (w *workspace) steps(n *Net, v, B int) [][]int32 {
	if len(w.sup[v]) < B {
		T := n.shapes[v].T
		w.sup[v] = make([][]int32, w.capB)
		for b := range w.sup[v] {
			w.sup[v][b] = make([]int32, 0, T)
		}
	}
	return w.sup[v][:B]
}

// densify forms value v's gradient g (B samples) from its sparse form.
func (n *Net) densify(w *workspace, B, v int, g []float32) {
	s := n.shapes[v]
	switch w.form[v] {
	case HotGrad:
		ops.DensifyHot(g, w.hotDY[v][:B*s.C], w.hotAt[v], s.T)
	case StepsGrad:
		ops.Densify(g, s.C, s.T, w.sup[v][:B])
	}
	w.form[v] = DenseGrad
}
