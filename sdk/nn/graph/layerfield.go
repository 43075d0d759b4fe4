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
	l, err := n.Layer(path)
	if err != nil {
		return Span{}, err
	}
	spans := make([]Span, l.Node+2) // value v: 0 the input, i+1 node i
	errs := make([]error, l.Node+2)
	spans[0] = Span{Stride: 1}
	for i := range l.Node + 1 {
		nd := &n.nodes[i]
		f := nd.op.Field(nd.attrs)
		var s Span
		for j, v := range nd.inputs {
			if errs[v] != nil {
				errs[i+1] = errs[v]
				break
			}
			if !f.Local {
				errs[i+1] = fmt.Errorf("node %q (op %s) reads every step of its input, so its output and what follows it read the whole input", nd.name, nd.op.Kind)
				break
			}
			if !spans[v].fits(f) {
				errs[i+1] = fmt.Errorf("node %q (op %s) takes its input's field beyond %d input samples or reads a window beyond %d steps (stride %d, kernel %d, dilation %d, padding %d)", nd.name, nd.op.Kind, maxSpan, maxOp, f.Stride, f.Kernel, f.Dilation, f.PadLeft)
				break
			}
			sv := spans[v].after(f)
			if j == 0 {
				s = sv
				continue
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
		return Span{}, fmt.Errorf("graph %q: layer %q (node %q) has no receptive field in time: %w (accepted: a layer before the network's global pooling, flatten or linear nodes, whose joins add or concatenate paths of one stride)", n.spec.Name, path, l.Name, err)
	}
	return spans[l.Node+1], nil
}

// valueName is the name of value v: Input, or node v-1's.
func (n *Net) valueName(v int) string {
	if v == 0 {
		return Input
	}
	return n.nodes[v-1].name
}
