package graph

// The folded inference pass (FoldEval). Outside training a batchnorm is
// a per-channel affine map (Op.Affine), y = s x + t, so when it is the
// only reader of a convolution or linear node (Op.Absorb) it can be
// folded into that node's parameters:
//
//	w'[o,·] = s[o] w[o,·],  b'[o] = s[o] b[o] + t[o],
//
// and a ReLU that is the only reader of the result (or of a node whose
// op has EvalFuses, a convolution or an addition) into the node's call
// (Op.EvalFuses, applied to each sample while it is in cache). The node
// then writes the last folded node's value, and the folded nodes' own
// values are never made: Forward runs one node where it ran up to three,
// with a pass over the activations fewer for each folded node.

// evalGroup is what node j computes in a folded pass: aff is the Affine
// node folded into it (-1: none), relu the EvalFuses node after j or aff
// (-1: none), last the node whose value j writes (j: no group).
type evalGroup struct{ aff, relu, last int }

// planEval finds the folded groups and plans the folded pass's buffers
// (like plan's inference plan, with a group's value live from the step
// of the node that writes it and the folded values without a buffer).
func (n *Net) planEval() {
	n.egroup = make([]evalGroup, len(n.nodes))
	n.eskip = make([]bool, len(n.nodes))
	for j := range n.nodes {
		n.egroup[j] = evalGroup{aff: -1, relu: -1, last: j}
	}
	only := func(v int) int { // the only reader of value v up to the output, or -1
		if r := n.readers[v]; len(r) == 1 && r[0] <= n.output && len(n.nodes[r[0]].inputs) == 1 {
			return r[0]
		}
		return -1
	}
	for j, nd := range n.nodes {
		if n.eskip[j] {
			continue // folded into an earlier node
		}
		g := evalGroup{aff: -1, relu: -1, last: j}
		if i := only(j + 1); nd.op.Absorb != nil && i >= 0 && n.nodes[i].op.Affine != nil {
			g.aff, g.last = i, i
			n.eskip[i] = true
		}
		if r := only(g.last + 1); r >= 0 && nd.op.EvalFuses != "" && n.nodes[r].op.Kind == nd.op.EvalFuses {
			g.relu, g.last = r, r
			n.eskip[r] = true
		}
		n.egroup[j] = g
	}
	sizes, start, end := n.lifetimes()
	for j, g := range n.egroup {
		if g.last == j {
			continue // no group (or a node folded into an earlier one)
		}
		for _, i := range []int{j, g.aff} {
			if i >= 0 && i != g.last {
				start[i+1], end[i+1] = 0, -1 // never made
			}
		}
		start[g.last+1] = j // written at node j's step
	}
	n.evSlot, n.evSize = planSlots(sizes, start, end, n.unplanned)
}

// FoldEval folds, for Forward, each batchnorm that is the only reader of
// a conv1d or linear node into that node's weights and bias, with Theta
// as it is now, and a ReLU that is the only reader of a convolution, of
// such a batchnorm after one, or of an addition into that node's call. Forward's probabilities then
// differ from the unfolded pass's by float32 rounding (each folded weight
// is rounded once, where the unfolded pass rounds the convolution's
// output, the normalised value and its affine map), about 1e-7 of a
// value's scale. The folded weights and biases are Theta's at this call:
// after a change of Theta, call FoldEval again (the nodes not folded into
// another read Theta as it is, so Forward would mix the two);
// UnfoldEval returns to the unfolded pass.
// Grad, Run, Backprop and the incremental paths (WindowProbs, SpanProbs)
// are not folded. It returns the number of nodes folded away.
func (n *Net) FoldEval() int {
	if n.evP == nil {
		n.evP = make([][][]float32, len(n.nodes))
	}
	folded := 0
	for j, g := range n.egroup {
		if g.relu >= 0 {
			folded++
		}
		if g.aff < 0 {
			continue
		}
		nd, bn := &n.nodes[j], &n.nodes[g.aff]
		p := n.theta(nil, j)
		if n.evP[j] == nil {
			n.evP[j] = [][]float32{make([]float32, len(p[0])), make([]float32, nd.out.C)}
		}
		C := bn.out.C
		s, t := make([]float64, C), make([]float64, C)
		bn.op.Affine(bn.attrs, n.theta(nil, g.aff), s, t)
		nd.op.Absorb(nd.attrs, nd.in, p, s, t, n.evP[j])
		folded++
	}
	n.evalOn = folded > 0
	return folded
}

// UnfoldEval returns Forward to the unfolded pass.
func (n *Net) UnfoldEval() { n.evalOn = false }

// theta appends node i's parameters, slices of Theta in the op's order,
// to dst.
func (n *Net) theta(dst [][]float32, i int) [][]float32 {
	for _, k := range n.nodes[i].params {
		dst = append(dst, n.Theta[n.params[k].Offset:n.params[k].Offset+n.params[k].Len])
	}
	return dst
}

// EvalFolds lists the folded groups as node names, each the absorbing
// node followed by the nodes folded into it (for reports and tests).
func (n *Net) EvalFolds() [][]string {
	var out [][]string
	for j, g := range n.egroup {
		if g.last == j {
			continue
		}
		names := []string{n.nodes[j].name}
		for _, i := range []int{g.aff, g.relu} {
			if i >= 0 {
				names = append(names, n.nodes[i].name)
			}
		}
		out = append(out, names)
	}
	return out
}
