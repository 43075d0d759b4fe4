package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// This file is the table of layer kinds: everything sdk/nn knows about a
// kind is in its kindDef (its parameters, shape rule, receptive window,
// the properties the passes ask about, and its code in every pass). The
// rest of the package looks a layer's kind up here (Net.defs) instead of
// switching on it; adding a kind is adding an entry. The fused fast paths
// (a conv1d with the ReLU after it, conv1d -> ReLU* -> global max pool in
// the backward pass, and the window and span plans of a local stack ending
// in a global max pool) name the kinds they fuse.

// ParamSpec is one tensor of a layer: its state_dict suffix, its shape
// and whether training updates it.
type ParamSpec struct {
	Suffix    string // the state_dict name after "<layer name>.", e.g. "weight"
	Shape     []int
	Trainable bool // false for a buffer (batchnorm's running statistics)
}

// Size is the product of Shape.
func (p ParamSpec) Size() int {
	n := 1
	for _, d := range p.Shape {
		n *= d
	}
	return n
}

// kindDef is one layer kind. Functions a kind does not need are nil.
type kindDef struct {
	kind LayerKind
	// params lists the layer's tensors on an input of shape in, in
	// state_dict order (nil: none, and then the layer needs no name).
	// Their offsets fill layerOffs's w, b, rm and rv in this order.
	params func(l Layer, in Shape) []ParamSpec
	// out checks l on an input of shape in and returns its output shape;
	// its error says what is accepted.
	out func(l Layer, in Shape) (Shape, error)
	// window is the number of consecutive input positions t..t+window-1
	// output position t reads (1: per position); 0 when the output's
	// positions have no place in time (a global pool, flatten, dense).
	window func(l Layer) int
	// pointwise: output (c, t) reads input (c, t) alone.
	pointwise bool
	// macs is the number of multiply-adds of one input's forward pass.
	macs func(l Layer, in, out Shape) int64
	// batchStats: in train mode the layer needs statistics of the whole
	// batch (a batchnorm): a pass splits at it and runs bnStats,
	// bnReduceStats, bnGradSums and bnReduceGrad on it.
	batchStats bool
	// evalIdentity: in eval mode the output is the input's values in the
	// same order (flatten, dropout).
	evalIdentity bool
	// foldThrough: in eval mode an affine map of each input unit that a
	// pending batchnorm map passes through or composes with on its way to
	// a linear layer (FoldBatchNorm).
	foldThrough bool
	// linearTaps, for a layer linear in its input with weights (out, in,
	// taps) and a bias, is taps; batchnorm and dropout maps fold into its
	// weights.
	linearTaps func(l Layer) int

	// alloc makes layer i's own workspace buffers for capacity samples.
	alloc func(n *Net, ws *Workspace, i, capacity int)
	// scratch is the per-chunk scratch length layer i's backward needs.
	scratch func(n *Net, i int) int
	// prepare runs once a batch before the samples (packing weights,
	// eval statistics, dropout masks), with ws.b and ws.train set.
	prepare func(n *Net, ws *Workspace, p []float32, i int, rnd *rand.Rand)
	// forward computes layer i's output out of sample s from its input in
	// and returns the next layer to run (a layer may run the next one with
	// it when that one is before end).
	forward func(n *Net, ws *Workspace, p []float32, i, s, end int, in, out []float32) int
	// fastBackward, tried before backward, reports whether it handled the
	// layer (and whether it wrote din): the sparse and support paths.
	fastBackward func(n *Net, ws *Workspace, p, dParams []float32, i, s, c, stop int, dout, din []float32) (done, wrote bool)
	// backward propagates sample s's dense output gradient dout into din
	// (nil: not needed) and adds parameter gradients to chunk c's buffer
	// when dParams is not nil.
	backward func(n *Net, ws *Workspace, p, dParams []float32, i, s, c int, dout, din []float32)
	// fold is the layer's step of FoldBatchNorm (nil: copied unchanged).
	fold func(f *bnFolder, i int, l Layer, in Shape)
	// headRow appends the layer to the head of a window plan run one
	// pooled vector at a time (headRows); nil: the head cannot be run so,
	// unless evalIdentity.
	headRow func(head *Net, hp []float32, i int, rows []headStep, width int) ([]headStep, int)
	// localRange recomputes output positions [a, b) of a local layer i
	// (window > 0) of the window plan; plane maps the planes of its input
	// to one plane of its output (span.go) and edgePrep prepares that.
	localRange func(m *Inference, i int, in, out []float32, a, b int, idx []int32)
	plane      func(m *Inference, e *edgePlan, l int, dst, in []float32, n int)
	edgePrep   func(m *Inference, e *edgePlan, l int)
}

// kindTable lists the kinds in the order errors name them.
var kindTable = []*kindDef{
	{
		kind: KindConv1D,
		params: func(l Layer, in Shape) []ParamSpec {
			return []ParamSpec{{"weight", []int{l.Out, in.C, l.Kernel}, true}, {"bias", []int{l.Out}, true}}
		},
		out: func(l Layer, in Shape) (Shape, error) {
			if l.Out < 1 || l.Kernel < 1 {
				return Shape{}, fmt.Errorf("out and kernel must be >= 1, got %d and %d", l.Out, l.Kernel)
			}
			if in.T < l.Kernel {
				return Shape{}, fmt.Errorf("input length %d is shorter than kernel %d", in.T, l.Kernel)
			}
			return Shape{l.Out, in.T - l.Kernel + 1}, nil
		},
		window:     func(l Layer) int { return l.Kernel },
		macs:       func(l Layer, in, out Shape) int64 { return int64(out.T * l.Out * in.C * l.Kernel) },
		linearTaps: func(l Layer) int { return l.Kernel },
		alloc: func(n *Net, ws *Workspace, i, capacity int) {
			l := n.arch.Layers[i]
			ws.wpack[i] = make([]float32, kern.PackedLen(l.Out, n.ins[i].C, l.Kernel))
		},
		scratch: func(n *Net, i int) int {
			// supportConvBackward: G, bs and np <= T/4 rows of DY, XW, DX.
			l := n.arch.Layers[i]
			ck := n.ins[i].C * l.Kernel
			np := n.shapes[i].T / 4
			return l.Out*ck + l.Out + np*(l.Out+2*ck)
		},
		prepare: func(n *Net, ws *Workspace, p []float32, i int, _ *rand.Rand) {
			l := n.arch.Layers[i]
			o, C := n.offs[i], n.ins[i].C
			kern.PackConv(ws.wpack[i], p[o.w:o.w+l.Out*C*l.Kernel], l.Out, C, l.Kernel)
		},
		forward:      convLayerForward,
		fastBackward: convFastBackward,
		backward: func(n *Net, ws *Workspace, p, dParams []float32, i, s, c int, dout, din []float32) {
			l, is, o := n.arch.Layers[i], n.ins[i], n.offs[i]
			w := p[o.w : o.w+l.Out*is.C*l.Kernel]
			var gw, gb []float32
			if dParams != nil {
				gw = ws.cgrad[c][o.w : o.w+len(w)]
				gb = ws.cgrad[c][o.b : o.b+l.Out]
			}
			convBackward(din, gw, gb, dout, n.input(ws, i, s), w, is.C, is.T, l.Out, l.Kernel)
		},
		fold: func(f *bnFolder, i int, l Layer, in Shape) { f.linear(l, in, l.Kernel) },
		localRange: func(m *Inference, i int, in, out []float32, a, b int, _ []int32) {
			net := m.net
			l, is, os, o := net.arch.Layers[i], net.ins[i], net.shapes[i], net.offs[i]
			k := l.Kernel
			w, bias := m.folded[o.w:o.w+l.Out*is.C*k], m.folded[o.b:o.b+l.Out]
			kern.ConvMultiBias(out[a:], nil, os.T, in[a:], is.T, w, nil, bias, l.Out, is.C, k, b-a)
		},
		plane: func(m *Inference, e *edgePlan, l int, dst, in []float32, n int) {
			ly, is, o := m.net.arch.Layers[l], m.level(l), m.net.offs[l]
			kern.ConvMultiBias(dst, nil, n, in, n, e.wr[l], e.pw[l], m.folded[o.b:o.b+ly.Out], ly.Out, ly.Kernel*is.C, 1, n)
		},
		edgePrep: convEdgePrep,
	},
	{
		kind:      KindReLU,
		out:       func(l Layer, in Shape) (Shape, error) { return in, nil },
		window:    func(Layer) int { return 1 },
		pointwise: true,
		forward: func(n *Net, ws *Workspace, p []float32, i, s, end int, in, out []float32) int {
			kern.Relu(out, in)
			return i + 1
		},
		fastBackward: func(n *Net, ws *Workspace, p, dParams []float32, i, s, c, stop int, dout, din []float32) (bool, bool) {
			if n.sparseChain(i, stop) {
				return true, false
			}
			if ws.supAt[s] == i {
				n.supportReluBackward(ws, i, s, dout, din)
				return true, true
			}
			return false, false
		},
		backward: func(n *Net, ws *Workspace, p, dParams []float32, i, s, c int, dout, din []float32) {
			if din == nil {
				return
			}
			osz := n.shapes[i].Size()
			kern.ReluGrad(din, dout, ws.acts[i][s*osz:(s+1)*osz])
		},
		headRow: func(head *Net, hp []float32, i int, rows []headStep, width int) ([]headStep, int) {
			if len(rows) > 0 && rows[len(rows)-1].w != nil && !rows[len(rows)-1].relu {
				rows[len(rows)-1].relu = true
			} else {
				rows = append(rows, headStep{relu: true})
			}
			return rows, width
		},
		localRange: func(m *Inference, i int, in, out []float32, a, b int, _ []int32) {
			is, os := m.net.ins[i], m.net.shapes[i]
			for c := 0; c < os.C; c++ {
				kern.Relu(out[c*os.T+a:c*os.T+b], in[c*is.T+a:c*is.T+b])
			}
		},
		plane: func(m *Inference, e *edgePlan, l int, dst, in []float32, n int) {
			kern.Relu(dst, in[:m.level(l+1).C*n])
		},
	},
	{
		kind: KindMaxPool1D,
		out: func(l Layer, in Shape) (Shape, error) {
			if l.Kernel < 1 || in.T < l.Kernel {
				return Shape{}, fmt.Errorf("kernel must be in [1, %d], got %d", in.T, l.Kernel)
			}
			return Shape{in.C, in.T - l.Kernel + 1}, nil
		},
		window: func(l Layer) int { return l.Kernel },
		alloc:  allocIdx,
		forward: func(n *Net, ws *Workspace, p []float32, i, s, end int, in, out []float32) int {
			l, is, os := n.arch.Layers[i], n.ins[i], n.shapes[i]
			sz := len(out)
			idx := ws.idx[i][s*sz : (s+1)*sz]
			for c := 0; c < is.C; c++ {
				kern.MaxPool(out[c*os.T:(c+1)*os.T], idx[c*os.T:(c+1)*os.T], in[c*is.T:(c+1)*is.T], l.Kernel)
			}
			return i + 1
		},
		backward: func(n *Net, ws *Workspace, p, dParams []float32, i, s, c int, dout, din []float32) {
			if din == nil {
				return
			}
			l, is, os := n.arch.Layers[i], n.ins[i], n.shapes[i]
			osz := os.Size()
			idx := ws.idx[i][s*osz : (s+1)*osz]
			for ch := 0; ch < os.C; ch++ {
				kern.MaxPoolGrad(din[ch*is.T:(ch+1)*is.T], dout[ch*os.T:(ch+1)*os.T], idx[ch*os.T:(ch+1)*os.T], l.Kernel)
			}
		},
		localRange: func(m *Inference, i int, in, out []float32, a, b int, idx []int32) {
			k, is, os := m.net.arch.Layers[i].Kernel, m.net.ins[i], m.net.shapes[i]
			for c := 0; c < os.C; c++ {
				kern.MaxPool(out[c*os.T+a:c*os.T+b], idx[:b-a], in[c*is.T+a:c*is.T+b+k-1], k)
			}
		},
		plane: func(m *Inference, e *edgePlan, l int, dst, in []float32, n int) {
			ly, is, os := m.net.arch.Layers[l], m.level(l), m.level(l+1)
			copy(dst, in[:os.C*n])
			for j := 1; j < ly.Kernel; j++ {
				maxTo(dst, in[j*is.C*n:(j+1)*is.C*n])
			}
		},
	},
	{
		kind:   KindGlobalMaxPool,
		out:    func(l Layer, in Shape) (Shape, error) { return Shape{in.C, 1}, nil },
		window: func(Layer) int { return 0 },
		alloc:  allocIdx,
		forward: func(n *Net, ws *Workspace, p []float32, i, s, end int, in, out []float32) int {
			is := n.ins[i]
			sz := len(out)
			idx := ws.idx[i][s*sz : (s+1)*sz]
			for c := 0; c < is.C; c++ {
				v, j := kern.ArgMax(in[c*is.T : (c+1)*is.T])
				out[c], idx[c] = v, int32(j)
			}
			return i + 1
		},
		fastBackward: func(n *Net, ws *Workspace, p, dParams []float32, i, s, c, stop int, dout, din []float32) (bool, bool) {
			return n.sparseChain(i, stop), false
		},
		backward: func(n *Net, ws *Workspace, p, dParams []float32, i, s, c int, dout, din []float32) {
			if din == nil {
				return
			}
			is := n.ins[i]
			osz := n.shapes[i].Size()
			idx := ws.idx[i][s*osz : (s+1)*osz]
			clear(din)
			for ch := 0; ch < is.C; ch++ {
				din[ch*is.T+int(idx[ch])] = dout[ch]
			}
		},
	},
	{
		kind: KindBatchNorm1D,
		params: func(l Layer, in Shape) []ParamSpec {
			return []ParamSpec{
				{"weight", []int{in.C}, true}, {"bias", []int{in.C}, true},
				{"running_mean", []int{in.C}, false}, {"running_var", []int{in.C}, false},
			}
		},
		out:         func(l Layer, in Shape) (Shape, error) { return in, nil },
		window:      func(Layer) int { return 1 },
		pointwise:   true,
		batchStats:  true,
		foldThrough: true,
		alloc: func(n *Net, ws *Workspace, i, capacity int) {
			C, s := n.ins[i].C, n.shapes[i].Size()
			ws.xhat[i] = make([]float32, capacity*s)
			ws.mean[i] = make([]float64, C)
			ws.istd[i] = make([]float64, C)
			ws.sa[i] = make([]float64, capacity*C)
			ws.sb[i] = make([]float64, capacity*C)
			ws.gk[i] = make([]float32, 3*C)
		},
		prepare: func(n *Net, ws *Workspace, p []float32, i int, _ *rand.Rand) {
			if ws.train {
				return
			}
			o, C := n.offs[i], n.ins[i].C
			for ch := 0; ch < C; ch++ {
				ws.mean[i][ch] = float64(p[o.rm+ch])
				ws.istd[i][ch] = 1 / math.Sqrt(float64(p[o.rv+ch])+BNEps)
			}
		},
		forward: func(n *Net, ws *Workspace, p []float32, i, s, end int, in, out []float32) int {
			n.bnForward(ws, i, p, in, out, s)
			return i + 1
		},
		backward: func(n *Net, ws *Workspace, p, dParams []float32, i, s, c int, dout, din []float32) {
			n.bnBackward(ws, i, p, dout, din, dParams != nil, s)
		},
		fold: foldBatchNormLayer,
		localRange: func(m *Inference, i int, in, out []float32, a, b int, _ []int32) {
			// kern.Normalize's arithmetic, without the xhat output.
			net := m.net
			is, os, o := net.ins[i], net.shapes[i], net.offs[i]
			g, bt, rm, rv := m.folded[o.w:], m.folded[o.b:], m.folded[o.rm:], m.folded[o.rv:]
			for c := 0; c < os.C; c++ {
				mu, istd := float32(rm[c]), float32(1/math.Sqrt(float64(rv[c])+BNEps))
				for t := a; t < b; t++ {
					h := float32(in[c*is.T+t]-mu) * istd
					out[c*os.T+t] = float32(h*g[c]) + bt[c]
				}
			}
		},
		plane: func(m *Inference, e *edgePlan, l int, dst, in []float32, n int) {
			o, os := m.net.offs[l], m.level(l+1)
			g, bt, rm, rv := m.folded[o.w:], m.folded[o.b:], m.folded[o.rm:], m.folded[o.rv:]
			for c := 0; c < os.C; c++ {
				mu, istd := float32(rm[c]), float32(1/math.Sqrt(float64(rv[c])+BNEps))
				for j := 0; j < n; j++ {
					h := float32(in[c*n+j]-mu) * istd
					dst[c*n+j] = float32(h*g[c]) + bt[c]
				}
			}
		},
	},
	{
		kind:         KindFlatten,
		out:          func(l Layer, in Shape) (Shape, error) { return Shape{in.C * in.T, 1}, nil },
		window:       func(Layer) int { return 0 },
		evalIdentity: true,
		foldThrough:  true,
		forward: func(n *Net, ws *Workspace, p []float32, i, s, end int, in, out []float32) int {
			copy(out, in)
			return i + 1
		},
		backward: func(n *Net, ws *Workspace, p, dParams []float32, i, s, c int, dout, din []float32) {
			if din != nil {
				copy(din, dout)
			}
		},
		fold: func(f *bnFolder, i int, l Layer, in Shape) {
			if f.pending != nil {
				T := in.T
				na := &affine{alpha: make([]float64, in.C*T), beta: make([]float64, in.C*T)}
				for c := 0; c < in.C; c++ {
					for t := 0; t < T; t++ {
						na.alpha[c*T+t], na.beta[c*T+t] = f.pending.alpha[c], f.pending.beta[c]
					}
				}
				f.pending = na
			}
			f.out.Layers = append(f.out.Layers, l)
		},
	},
	{
		kind: KindDense,
		params: func(l Layer, in Shape) []ParamSpec {
			return []ParamSpec{{"weight", []int{l.Out, in.C}, true}, {"bias", []int{l.Out}, true}}
		},
		out: func(l Layer, in Shape) (Shape, error) {
			if in.T != 1 {
				return Shape{}, fmt.Errorf("dense needs a flat input (length 1), got %d channels x %d; add a flatten or globalmaxpool layer", in.C, in.T)
			}
			if l.Out < 1 {
				return Shape{}, fmt.Errorf("out must be >= 1, got %d", l.Out)
			}
			return Shape{l.Out, 1}, nil
		},
		window:     func(Layer) int { return 0 },
		macs:       func(l Layer, in, out Shape) int64 { return int64(l.Out * in.C) },
		linearTaps: func(Layer) int { return 1 },
		forward: func(n *Net, ws *Workspace, p []float32, i, s, end int, in, out []float32) int {
			l, o := n.arch.Layers[i], n.offs[i]
			w, bias := p[o.w:o.w+l.Out*n.ins[i].C], p[o.b:o.b+l.Out]
			denseForward(out, in, w, bias)
			return i + 1
		},
		backward: func(n *Net, ws *Workspace, p, dParams []float32, i, s, c int, dout, din []float32) {
			l, o := n.arch.Layers[i], n.offs[i]
			w := p[o.w : o.w+l.Out*n.ins[i].C]
			var gw, gb []float32
			if dParams != nil {
				gw = ws.cgrad[c][o.w : o.w+len(w)]
				gb = ws.cgrad[c][o.b : o.b+l.Out]
			}
			denseBackward(din, gw, gb, dout, n.input(ws, i, s), w)
		},
		fold: func(f *bnFolder, i int, l Layer, in Shape) { f.linear(l, in, 1) },
		headRow: func(head *Net, hp []float32, i int, rows []headStep, width int) ([]headStep, int) {
			l := head.arch.Layers[i]
			nin, o := head.ins[i].Size(), head.offs[i]
			w := hp[o.w : o.w+l.Out*nin]
			pw := make([]float32, kern.PackedLen(l.Out, nin, 1))
			kern.PackConv(pw, w, l.Out, nin, 1)
			rows = append(rows, headStep{w: w, pw: pw, bias: hp[o.b : o.b+l.Out], in: nin, out: l.Out})
			return rows, max(width, l.Out)
		},
	},
	{
		kind: KindDropout,
		out: func(l Layer, in Shape) (Shape, error) {
			if !(l.P >= 0 && l.P < 1) {
				return Shape{}, fmt.Errorf("p must be in [0, 1), got %g", l.P)
			}
			return in, nil
		},
		window:       func(Layer) int { return 1 },
		pointwise:    true,
		evalIdentity: true,
		foldThrough:  true,
		alloc: func(n *Net, ws *Workspace, i, capacity int) {
			ws.mask[i] = make([]float32, capacity*n.shapes[i].Size())
		},
		prepare: func(n *Net, ws *Workspace, p []float32, i int, rnd *rand.Rand) {
			l := n.arch.Layers[i]
			if !ws.train || l.P <= 0 {
				return
			}
			// Masks are drawn up front, layer by layer in batch order.
			if rnd == nil {
				panic("nn: train-mode forward with dropout needs a random source")
			}
			m := ws.mask[i][:ws.b*n.shapes[i].Size()]
			keep := float32(1 / (1 - l.P))
			for j := range m {
				if rnd.Float64() < l.P {
					m[j] = 0
				} else {
					m[j] = keep
				}
			}
		},
		forward: func(n *Net, ws *Workspace, p []float32, i, s, end int, in, out []float32) int {
			n.dropout(ws, i, n.arch.Layers[i], s, out, in)
			return i + 1
		},
		backward: func(n *Net, ws *Workspace, p, dParams []float32, i, s, c int, dout, din []float32) {
			if din != nil { // the same mask scales the gradient
				n.dropout(ws, i, n.arch.Layers[i], s, din, dout)
			}
		},
		localRange: func(m *Inference, i int, in, out []float32, a, b int, _ []int32) {
			is, os := m.net.ins[i], m.net.shapes[i]
			for c := 0; c < os.C; c++ {
				copy(out[c*os.T+a:c*os.T+b], in[c*is.T+a:c*is.T+b])
			}
		},
		plane: func(m *Inference, e *edgePlan, l int, dst, in []float32, n int) {
			copy(dst, in[:m.level(l+1).C*n])
		},
	},
}

// kindOf returns the definition of kind k, or nil for an unknown kind.
func kindOf(k LayerKind) *kindDef {
	for _, d := range kindTable {
		if d.kind == k {
			return d
		}
	}
	return nil
}

// Kinds returns the layer kinds an architecture may use.
func Kinds() []LayerKind {
	ks := make([]LayerKind, len(kindTable))
	for i, d := range kindTable {
		ks[i] = d.kind
	}
	return ks
}

// acceptedKinds is the list of kinds for errors.
func acceptedKinds() string {
	s := make([]string, len(kindTable))
	for i, d := range kindTable {
		s[i] = string(d.kind)
	}
	return strings.Join(s, ", ")
}

// LayerParams returns the tensors of layer l on an input of shape in, in
// state_dict order (nil for a layer without parameters or of an unknown
// kind); a tensor's name is l.Name + "." + Suffix.
func LayerParams(l Layer, in Shape) []ParamSpec {
	d := kindOf(l.Kind)
	if d == nil || d.params == nil {
		return nil
	}
	return d.params(l, in)
}

// LayerMACs returns the multiply-adds of one input's forward pass through
// layer l from shape in to shape out (0 for the layers that only compare,
// copy or scale).
func LayerMACs(l Layer, in, out Shape) int64 {
	d := kindOf(l.Kind)
	if d == nil || d.macs == nil {
		return 0
	}
	return d.macs(l, in, out)
}

// LayerWindow returns the number of consecutive input positions
// t..t+k-1 that output position t of layer l reads (1 for a per-position
// layer), or 0 when the layer's output positions have no place in time
// (a global pool, flatten, dense) or its kind is unknown. The receptive
// field of a stack of such layers is 1 + the sum of (k - 1).
func LayerWindow(l Layer) int {
	d := kindOf(l.Kind)
	if d == nil {
		return 0
	}
	return d.window(l)
}

func allocIdx(n *Net, ws *Workspace, i, capacity int) {
	ws.idx[i] = make([]int32, capacity*n.shapes[i].Size())
}

// convLayerForward is conv1d's forward for sample s; a ReLU at i+1 < end
// runs with it (kern.ConvMultiBias writes both outputs).
func convLayerForward(n *Net, ws *Workspace, p []float32, i, s, end int, in, out []float32) int {
	l, is, o := n.arch.Layers[i], n.ins[i], n.offs[i]
	sz := len(out)
	w, bias := p[o.w:o.w+l.Out*is.C*l.Kernel], p[o.b:o.b+l.Out]
	var rel []float32
	if i+1 < end && n.arch.Layers[i+1].Kind == KindReLU {
		rel = ws.acts[i+1][s*sz : (s+1)*sz]
	}
	convForward(out, rel, in, w, ws.wpack[i], bias, is.C, is.T, l.Out, l.Kernel)
	if rel != nil {
		return i + 2
	}
	return i + 1
}

// convFastBackward takes conv1d's sparse paths: the output gradient of a
// conv -> ReLU* -> global max pool chain, or one nonzero on few steps.
func convFastBackward(n *Net, ws *Workspace, p, dParams []float32, i, s, c, stop int, dout, din []float32) (bool, bool) {
	if n.gmpChain[i] >= 0 && !n.dense {
		n.sparseConvBackward(ws, p, dParams, i, s, c, dout, din)
		return true, true
	}
	if ws.supAt[s] == i && 4*len(ws.sup[s]) <= n.shapes[i].T {
		n.supportConvBackward(ws, p, dParams, i, s, c, dout, din)
		return true, true
	}
	return false, false
}

// convEdgePrep lays out conv layer l's weights as (O, k*C, 1) for the
// plane kernels: wr[o*k*C+j*C+c] = w[o,c,j], and packs them.
func convEdgePrep(m *Inference, e *edgePlan, l int) {
	net := m.net
	ly := net.arch.Layers[l]
	C, K, O := net.ins[l].C, ly.Kernel, ly.Out
	o := net.offs[l]
	w := m.folded[o.w : o.w+O*C*K]
	wr := make([]float32, O*K*C)
	for oo := 0; oo < O; oo++ {
		for c := 0; c < C; c++ {
			for j := 0; j < K; j++ {
				wr[oo*K*C+j*C+c] = w[(oo*C+c)*K+j]
			}
		}
	}
	e.wr[l] = wr
	e.pw[l] = make([]float32, kern.PackedLen(O, K*C, 1))
	kern.PackConv(e.pw[l], wr, O, K*C, 1)
}
