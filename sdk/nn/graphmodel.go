package nn

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// GraphModel is a compiled graph network (sdk/nn/graph) with its
// parameters as a Model, so that every explainer computes with it (and
// the model service serves it to explainers in other processes). Its Arch
// is the graph architecture (Arch.Graph): it has no Layers, a layer is a
// module path (graph.Net.Layer), and LayerField gives a layer's receptive
// field in input samples (for Grad-CAM's align = "centre").
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
	pool  sync.Pool                 // *graph.Net
	warm  atomic.Pointer[graph.Net] // one Net kept across garbage collections, with its workspaces

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

// get takes the warm Net, or one of the pool; put gives it back, to the
// warm place when that is free (a pool drops its Nets at every garbage
// collection, and with them the workspaces of the incremental paths).
func (m *GraphModel) get() *graph.Net {
	if n := m.warm.Swap(nil); n != nil {
		return n
	}
	return m.pool.Get().(*graph.Net)
}

func (m *GraphModel) put(n *graph.Net) {
	if !m.warm.CompareAndSwap(nil, n) {
		m.pool.Put(n)
	}
}

// Arch is the graph architecture (GraphArch of the net's spec).
func (m *GraphModel) Arch() Arch { return m.arch }

// Params is the architecture and its parameters.
func (m *GraphModel) Params() Params { return Params{Arch: m.arch, Data: m.theta} }

// InputLen is InChannels*InLen.
func (m *GraphModel) InputLen() int { return m.n }

// Classes is the number of class probabilities.
func (m *GraphModel) Classes() int { return m.k }

// Probs writes the class probabilities of the batch x (Net.Forward).
func (m *GraphModel) Probs(dst, x []float32) {
	n := m.get()
	defer m.put(n)
	if err := n.Forward(dst, x); err != nil {
		panic(err)
	}
}

// PlainProbs writes the class probabilities of the batch x as the
// incremental paths compute them (Net.ForwardUnfolded): WindowProbs and
// SpanProbs of a copy equal to x give these bits, which Probs's folded
// pass does not (it differs by float32 rounding). An explainer that sets
// perturbed copies' probabilities against the unperturbed input's takes
// the latter from here, so that a window that changes nothing scores
// exactly 0.
func (m *GraphModel) PlainProbs(dst, x []float32) {
	n := m.get()
	defer m.put(n)
	if err := n.ForwardUnfolded(dst, x); err != nil {
		panic(err)
	}
}

// InputGrad writes d p_target / d x of each input and, if probs is not
// nil, the probabilities (Net.Grad).
func (m *GraphModel) InputGrad(dst, probs, x []float32, target []int) {
	n := m.get()
	defer m.put(n)
	if err := n.Grad(x, graph.GradRequest{Targets: target, Probs: probs, Input: dst}); err != nil {
		panic(err)
	}
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
	return n.Grad(x, graph.GradRequest{Targets: target, Layer: &l, Act: act, LayerGrad: grad})
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

// PooledLen is graph.Net.PooledLen: the length of the pooled vector of
// the graph's trunk plan, 0 when it has none.
func (m *GraphModel) PooledLen() int {
	n := m.get()
	defer m.put(n)
	return n.PooledLen()
}

// WindowProbsCached is WindowProbs, returning the unperturbed input's
// probability with PlainProbs's bits, by graph.Net.WindowProbsCached with
// the graph cache that c stands for: graph models with the same trunk
// (the draws of MC dropout) share the pooled vectors there.
func (m *GraphModel) WindowProbsCached(dst, x []float32, starts []int, width int, baseline float32, class int, c *TrunkCache) float32 {
	var p0 float32
	m.run(func(n *graph.Net) (p graph.Path, err error) {
		p0, p, err = n.WindowProbsCached(dst, x, nil, starts, width, baseline, class, graphTrunk(c))
		return p, err
	})
	return p0
}

// WindowProbsCachedSignal is WindowProbsCached with the occluded samples
// taken from the baseline signal z of x's layout.
func (m *GraphModel) WindowProbsCachedSignal(dst, x, z []float32, starts []int, width int, class int, c *TrunkCache) float32 {
	var p0 float32
	m.run(func(n *graph.Net) (p graph.Path, err error) {
		p0, p, err = n.WindowProbsCached(dst, x, z, starts, width, 0, class, graphTrunk(c))
		return p, err
	})
	return p0
}

// graphTrunks maps a TrunkCache to the graph cache its graph models
// share, held while the TrunkCache lives.
var graphTrunks = struct {
	sync.Mutex
	m map[weak.Pointer[TrunkCache]]*graph.TrunkCache
}{m: map[weak.Pointer[TrunkCache]]*graph.TrunkCache{}}

// graphTrunk is c's graph cache, of c's size limit (nil for nil).
func graphTrunk(c *TrunkCache) *graph.TrunkCache {
	if c == nil {
		return nil
	}
	k := weak.Make(c)
	graphTrunks.Lock()
	defer graphTrunks.Unlock()
	g, ok := graphTrunks.m[k]
	if !ok {
		g = graph.NewTrunkCache(c.limit)
		graphTrunks.m[k] = g
		runtime.AddCleanup(c, func(k weak.Pointer[TrunkCache]) {
			graphTrunks.Lock()
			delete(graphTrunks.m, k)
			graphTrunks.Unlock()
		}, k)
	}
	return g
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
