package nn

import (
	"fmt"
	"sync"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// GraphModel is a compiled network (sdk/nn/graph) with its parameters as
// a Model, the one Model of sdk/nn, so that every explainer computes with
// it (and the model service serves it to explainers in other processes).
// Its Arch is the one it was opened with (NewModel; GraphArch of the spec
// for NewGraphModel); a layer is a module path (graph.Net.Layer: a
// layer's name, for a network of Layers), and LayerField gives a layer's
// receptive field in input samples (for Grad-CAM's align = "centre").
//
// A GraphModel is safe for concurrent use: each call takes a Net of its
// own from a pool (compiled from the same spec, with the same Theta).
// Probs runs the folded inference pass (graph.Net.FoldEval: a batchnorm
// folded into the convolution before it, and the ReLU after it into the
// convolution's kernel call); gradients, layers, the incremental paths
// and PlainProbs run every node.
// Model's methods return no errors: a failed computation (a non-finite
// probability, an unknown target) panics with an error value, which the
// in-process explainers' driver and the model service recover and report.
type GraphModel struct {
	spec  graph.Spec
	theta []float32
	arch  Arch
	n, k  int
	pool  sync.Pool // *graph.Net

	mu   sync.Mutex
	path graph.Path // the copies of WindowProbs and SpanProbs so far
}

// NewGraphModel returns net, with its current Theta, as a Model. net
// itself is not used afterwards (its spec and Theta are copied).
func NewGraphModel(net *graph.Net) *GraphModel {
	in := net.InShape()
	m := &GraphModel{spec: net.Spec(), theta: append([]float32(nil), net.Theta...), n: in.C * in.T, k: net.Classes()}
	m.arch = GraphArch(m.spec)
	m.pool.New = func() any {
		n, err := graph.Compile(m.spec)
		if err != nil {
			panic(fmt.Errorf("graph %q: recompiling its own spec: %w", m.spec.Name, err)) // it compiled once already
		}
		copy(n.Theta, m.theta)
		n.FoldEval() // theta never changes: Probs runs the folded pass
		return n
	}
	return m
}

// get takes a Net of the pool; put gives it back.
func (m *GraphModel) get() *graph.Net  { return m.pool.Get().(*graph.Net) }
func (m *GraphModel) put(n *graph.Net) { m.pool.Put(n) }

// Arch is the graph architecture (GraphArch of the net's spec).
func (m *GraphModel) Arch() Arch { return m.arch }

// Params is the architecture and its parameters.
func (m *GraphModel) Params() Params { return Params{Arch: m.arch, Data: m.theta} }

// InputLen is InChannels*InLen.
func (m *GraphModel) InputLen() int { return m.n }

// Classes is the number of class probabilities.
func (m *GraphModel) Classes() int { return m.k }

// modelBatch is the most inputs one pass of a GraphModel computes: a
// larger batch runs in parts of modelBatch inputs, so that a Net's buffers
// (kept in the pool) hold modelBatch inputs' values whatever the batch a
// caller (the model service's client) asks for.
const modelBatch = 64

// parts runs f on a Net of the pool for the inputs [b0, b1) of the batch
// x, modelBatch at a time; a batch that is not whole inputs, or whose
// other buffers (want values an input, 0: none) do not fit, runs whole,
// for the Net to report. It panics with f's error.
func (m *GraphModel) parts(x []float32, bufs [][2]int, f func(n *graph.Net, b0, b1 int) error) {
	n := m.get()
	defer m.put(n)
	B := len(x) / m.n
	whole := len(x)%m.n != 0 || B <= modelBatch
	for _, b := range bufs { // {length, values an input}
		whole = whole || b[0] != B*b[1]
	}
	if whole {
		if err := f(n, 0, B); err != nil {
			panic(err)
		}
		return
	}
	for b0 := 0; b0 < B; b0 += modelBatch {
		if err := f(n, b0, min(b0+modelBatch, B)); err != nil {
			panic(err)
		}
	}
}

// Probs writes the class probabilities of the batch x (Net.Forward).
func (m *GraphModel) Probs(dst, x []float32) {
	m.parts(x, [][2]int{{len(dst), m.k}}, func(n *graph.Net, b0, b1 int) error {
		return n.Forward(dst[b0*m.k:b1*m.k], x[b0*m.n:b1*m.n])
	})
}

// PlainProbs writes the class probabilities of the batch x as the
// incremental paths compute them (Net.ForwardUnfolded): WindowProbs and
// SpanProbs of a copy equal to x give these bits, which Probs's folded
// pass does not (it differs by float32 rounding). An explainer that sets
// perturbed copies' probabilities against the unperturbed input's takes
// the latter from here, so that a window that changes nothing scores
// exactly 0.
func (m *GraphModel) PlainProbs(dst, x []float32) {
	m.parts(x, [][2]int{{len(dst), m.k}}, func(n *graph.Net, b0, b1 int) error {
		return n.ForwardUnfolded(dst[b0*m.k:b1*m.k], x[b0*m.n:b1*m.n])
	})
}

// InputGrad writes d p_target / d x of each input and, if probs is not
// nil, the probabilities (Net.Grad).
func (m *GraphModel) InputGrad(dst, probs, x []float32, target []int) {
	bufs, nb := [...][2]int{{len(dst), m.n}, {len(target), 1}, {len(probs), m.k}}, 3
	if probs == nil {
		nb = 2
	}
	m.parts(x, bufs[:nb], func(n *graph.Net, b0, b1 int) error {
		r := graph.GradRequest{Targets: target[b0:b1], Input: dst[b0*m.n : b1*m.n]}
		if probs != nil {
			r.Probs = probs[b0*m.k : b1*m.k]
		}
		return n.Grad(x[b0*m.n:b1*m.n], r)
	})
}

// LayerShape is the output shape of module path layer (Net.Layer).
func (m *GraphModel) LayerShape(layer string) (Shape, error) {
	n := m.get()
	defer m.put(n)
	l, err := n.Layer(layer)
	if err != nil {
		return Shape{}, err
	}
	return Shape{C: l.Shape.C, T: l.Shape.T}, nil
}

// LayerGrad writes the output of module path layer and d p_target / d of
// it, B x C x T each.
func (m *GraphModel) LayerGrad(act, grad, x []float32, target []int, layer string) error {
	n := m.get()
	defer m.put(n)
	l, err := n.Layer(layer)
	if err != nil {
		return err
	}
	B, sz := len(x)/m.n, l.Shape.Size()
	if len(act) < B*sz || len(grad) < B*sz || len(target) != B {
		return fmt.Errorf("layer %q: want act and grad of %d values and %d targets, got %d, %d, %d", layer, B*sz, B, len(act), len(grad), len(target))
	}
	if len(x)%m.n != 0 {
		return n.Grad(x, graph.GradRequest{Targets: target, Layer: &l, Act: act, LayerGrad: grad})
	}
	for b0 := 0; b0 < B; b0 += modelBatch {
		b1 := min(b0+modelBatch, B)
		if err := n.Grad(x[b0*m.n:b1*m.n], graph.GradRequest{Targets: target[b0:b1], Layer: &l, Act: act[b0*sz : b1*sz], LayerGrad: grad[b0*sz : b1*sz]}); err != nil {
			return err
		}
	}
	return nil
}

// LayerField is the receptive field of module path layer in input
// samples (graph.Net.LayerSpan): position l of its output reads input
// samples in [l*stride + lo, l*stride + hi]. It is an error for a layer
// behind a node that reads every step (global pooling, flatten, linear) or
// a join of paths of different strides.
func (m *GraphModel) LayerField(layer string) (stride, lo, hi int, err error) {
	n := m.get()
	defer m.put(n)
	s, err := n.LayerSpan(layer)
	if err != nil {
		return 0, 0, 0, err
	}
	return s.Stride, s.Lo, s.Hi, nil
}

// WindowProbs writes dst[j] = p_class(x with samples starts[j] ..
// starts[j]+width-1 of every channel set to baseline) for the one input x,
// as WindowProbsOf does, by graph.Net.WindowProbs: only the steps whose
// receptive field reads an occluded sample are recomputed (or forward
// passes, when that does not pay; Path says which).
func (m *GraphModel) WindowProbs(dst, x []float32, starts []int, width int, baseline float32, class int) {
	m.run(func(n *graph.Net) (graph.Path, error) {
		return n.WindowProbs(dst, x, nil, starts, width, baseline, class)
	})
}

// WindowProbsSignal is WindowProbs with the occluded samples taken from
// the baseline signal z of x's layout.
func (m *GraphModel) WindowProbsSignal(dst, x, z []float32, starts []int, width int, class int) {
	m.run(func(n *graph.Net) (graph.Path, error) {
		return n.WindowProbs(dst, x, z, starts, width, 0, class)
	})
}

// SpanProbs writes dst[j] = p_class(x with the samples of every span of
// spans[j] set to baseline in every channel), by graph.Net.SpanProbs.
func (m *GraphModel) SpanProbs(dst, x []float32, spans [][]Span, baseline float32, class int) {
	gs := graphSpans(spans, func(s Span) graph.ChannelSpan { return graph.ChannelSpan{Ch: graph.AllChannels, Lo: s.Lo, Hi: s.Hi} })
	m.run(func(n *graph.Net) (graph.Path, error) { return n.SpanProbs(dst, x, gs, baseline, class) })
}

// ChannelSpanProbs writes dst[j] = p_class(x with the spans of spans[j]
// set to baseline, each in its channel or, Ch = AllChannels, in every
// channel), by graph.Net.SpanProbs.
func (m *GraphModel) ChannelSpanProbs(dst, x []float32, spans [][]ChannelSpan, baseline float32, class int) {
	gs := graphSpans(spans, func(s ChannelSpan) graph.ChannelSpan { return graph.ChannelSpan{Ch: s.Ch, Lo: s.Lo, Hi: s.Hi} })
	m.run(func(n *graph.Net) (graph.Path, error) { return n.SpanProbs(dst, x, gs, baseline, class) })
}

// graphSpans converts each span of spans with to.
func graphSpans[S any](spans [][]S, to func(S) graph.ChannelSpan) [][]graph.ChannelSpan {
	gs := make([][]graph.ChannelSpan, len(spans))
	for j, sp := range spans {
		gs[j] = make([]graph.ChannelSpan, len(sp))
		for i, s := range sp {
			gs[j][i] = to(s)
		}
	}
	return gs
}

// run runs f on a Net of the pool, panicking with its error (as Probs
// does), and adds its path to Path's.
func (m *GraphModel) run(f func(n *graph.Net) (graph.Path, error)) {
	n := m.get()
	defer m.put(n)
	p, err := f(n)
	if err != nil {
		panic(err)
	}
	m.mu.Lock()
	m.path = m.path.Add(p)
	m.mu.Unlock()
}

// Path is how the perturbed copies of every WindowProbs,
// WindowProbsSignal, SpanProbs and ChannelSpanProbs call so far were
// computed: how many, how many incrementally, and the share of their
// forward passes' work done.
func (m *GraphModel) Path() graph.Path {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.path
}

var _ Model = (*GraphModel)(nil)
