package graph

import "fmt"

// Span is the composite receptive field of a layer in input samples:
// position l of the layer's output reads input samples in
//
//	[l*Stride + Lo, l*Stride + Hi],   Lo <= Hi,
//
// the hull of what it reads (a dilation leaves samples in between unread;
// padding puts Lo below 0 or Hi past the input's last sample, where it
// reads padding). Its centre is l*Stride + (Lo+Hi)/2.
type Span struct{ Stride, Lo, Hi int }

// after is the span of a node with field f (Local) whose input has span
// s: the node's step t reads input steps t*f.Stride - f.PadLeft +
// k*f.Dilation, k < f.Kernel, that is [t*f.Stride + a, t*f.Stride + b]
// with a = -PadLeft, b = a + (Kernel-1)*Dilation, and each input step u
// reads samples [u*s.Stride + s.Lo, u*s.Stride + s.Hi], so step t reads
//
//	[t*f.Stride*s.Stride + a*s.Stride + s.Lo, t*f.Stride*s.Stride + b*s.Stride + s.Hi].
func (s Span) after(f Field) Span {
	a := -f.PadLeft
	b := a + (f.Kernel-1)*f.Dilation
	return Span{Stride: f.Stride * s.Stride, Lo: a*s.Stride + s.Lo, Hi: b*s.Stride + s.Hi}
}

// maxSpan bounds a span's stride and ends, and maxOp an op's window, so
// that after computes in int64 without overflow.
const (
	maxSpan = 1 << 36
	maxOp   = 1 << 24
)

// fits reports whether s.after(f) has its stride and ends within maxSpan.
func (s Span) fits(f Field) bool {
	if f.Stride > maxOp || f.PadLeft > maxOp || f.Kernel > maxOp || f.Dilation > maxOp || f.Kernel*f.Dilation > maxOp {
		return false
	}
	t := s.after(f)
	return t.Stride <= maxSpan && t.Lo >= -maxSpan && t.Hi <= maxSpan
}

// Pos places the positions of a value in the input: position l stands
// for the input samples [l*Stride + Lo, l*Stride + Hi] (its receptive
// field after Local nodes, the field of the patch it came from after
// nodes that keep positions: a Transformer's token l is the patch the
// patch convolution read). Rows says that the positions are the value's
// rows (a token value: L tokens x E features, after a transpose), not
// its steps (columns).
type Pos struct {
	Span
	Rows bool
}

// keepPositions is the Positions of an op that keeps its first input's
// positions when they are rows (tokens: attention, a dense layer on each
// token) and has none when they are steps, which it mixes.
func keepPositions(kind string) func(Attrs, []Shape, []Pos) (Pos, error) {
	return func(_ Attrs, _ []Shape, pos []Pos) (Pos, error) {
		if !pos[0].Rows {
			return Pos{}, fmt.Errorf("op %s reads every step of each channel at once (its positions would be rows of tokens)", kind)
		}
		return pos[0], nil
	}
}

// samePositions is the Positions of an op that keeps its first input's
// positions in either layout (layernorm, affine).
func samePositions(_ Attrs, _ []Shape, pos []Pos) (Pos, error) { return pos[0], nil }

// LayerSpan returns the receptive field in input samples of the output of
// module path (the node Net.Layer names), composed through every node from
// the input: a node's field (Net.Field; pointwise ops and batchnorm are
// the identity) applied to its input's span, a node of several inputs
// (add, concat) taking the hull over its inputs, which must have one
// stride. It refuses a layer that reads the whole input through a node
// that is not local (global pooling, flatten, linear) and a layer behind
// a join of paths of different strides: their positions have no one place
// in the input; and, so that the integers cannot overflow, a field past
// 2^36 samples or an op's window past 2^24 steps.
func (n *Net) LayerSpan(path string) (Span, error) {
	p, node, err := n.layerPos(path, false)
	if err != nil && node != "" {
		err = fmt.Errorf("graph %q: layer %q (node %q) has no receptive field in time: %w (accepted: a layer before the network's global pooling, flatten or linear nodes, whose joins add or concatenate paths of one stride)", n.spec.Name, path, node, err)
	}
	return p.Span, err
}

// LayerPositions returns where the positions of module path's output lie
// in the input: its receptive field (LayerSpan) through Local nodes, and
// through the nodes that keep positions (Op.Positions: a transpose, which
// makes the steps rows of tokens, attention, layernorm, a dense layer on
// each token) the positions they keep. A layer after a node that mixes
// its positions (global pooling, a mean over the tokens, a reshape) has
// none: the error says which node.
func (n *Net) LayerPositions(path string) (Pos, error) {
	p, node, err := n.layerPos(path, true)
	if err != nil && node != "" {
		err = fmt.Errorf("graph %q: layer %q (node %q) has no positions in time: %w (accepted: a layer before the network's global pooling, flatten, linear or mean nodes, and before any node that mixes its positions)", n.spec.Name, path, node, err)
	}
	return p, err
}

// layerPos composes the positions of path's node from the input; with
// kept, through the nodes of Op.Positions too (otherwise a node that is
// not Local ends them). It returns the node's name with the error of a
// layer that has none.
func (n *Net) layerPos(path string, kept bool) (Pos, string, error) {
	l, err := n.Layer(path)
	if err != nil {
		return Pos{}, "", err
	}
	spans := make([]Pos, l.Node+2) // value v: 0 the input, i+1 node i
	errs := make([]error, l.Node+2)
	spans[0] = Pos{Span: Span{Stride: 1}}
	for i := range l.Node + 1 {
		nd := &n.nodes[i]
		f := nd.op.Field(nd.attrs)
		if errs[i+1] = n.inputErr(nd, errs); errs[i+1] != nil {
			continue
		}
		if kept && nd.op.Positions != nil {
			in := make([]Pos, len(nd.inputs))
			for j, v := range nd.inputs {
				in[j] = spans[v]
			}
			p, err := nd.op.Positions(nd.attrs, nd.in, in)
			if err != nil {
				errs[i+1] = fmt.Errorf("node %q: %w", nd.name, err)
			}
			spans[i+1] = p
			continue
		}
		var s Pos
		for j, v := range nd.inputs {
			if !f.Local {
				errs[i+1] = fmt.Errorf("node %q (op %s) reads every step of its input, so its output and what follows it read the whole input", nd.name, nd.op.Kind)
				break
			}
			if spans[v].Rows && !nd.op.Pointwise {
				errs[i+1] = fmt.Errorf("node %q (op %s) reads across the rows of tokens of %q, so its positions are mixed", nd.name, nd.op.Kind, n.valueName(v))
				break
			}
			if !spans[v].fits(f) {
				errs[i+1] = fmt.Errorf("node %q (op %s) takes its input's field beyond %d input samples or reads a window beyond %d steps (stride %d, kernel %d, dilation %d, padding %d)", nd.name, nd.op.Kind, maxSpan, maxOp, f.Stride, f.Kernel, f.Dilation, f.PadLeft)
				break
			}
			sv := Pos{Span: spans[v].after(f), Rows: spans[v].Rows}
			if j == 0 {
				s = sv
				continue
			}
			if sv.Rows != s.Rows {
				errs[i+1] = fmt.Errorf("node %q (op %s) joins %q and %q, one of rows of tokens and one of steps", nd.name, nd.op.Kind, n.valueName(nd.inputs[0]), n.valueName(v))
				break
			}
			if sv.Stride != s.Stride {
				errs[i+1] = fmt.Errorf("node %q (op %s) joins %q, of stride %d input samples, and %q, of stride %d, so its positions have no one place in the input",
					nd.name, nd.op.Kind, n.valueName(nd.inputs[0]), s.Stride, n.valueName(v), sv.Stride)
				break
			}
			s.Lo, s.Hi = min(s.Lo, sv.Lo), max(s.Hi, sv.Hi)
		}
		spans[i+1] = s
	}
	if err := errs[l.Node+1]; err != nil {
		return Pos{}, l.Name, err
	}
	return spans[l.Node+1], "", nil
}

// inputErr is the first error of node nd's inputs' positions.
func (n *Net) inputErr(nd *node, errs []error) error {
	for _, v := range nd.inputs {
		if errs[v] != nil {
			return errs[v]
		}
	}
	return nil
}

// valueName is the name of value v: Input, or node v-1's.
func (n *Net) valueName(v int) string {
	if v == 0 {
		return Input
	}
	return n.nodes[v-1].name
}
