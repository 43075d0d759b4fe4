package nn

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

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
// (PerturbedProbs) and PlainProbs run every node.
// A failed computation (a non-finite probability, an unknown target) is
// the call's error.
type GraphModel struct {
	spec  graph.Spec
	theta []float32
	arch  Arch
	n, k  int
	pool  sync.Pool                 // *graph.Net
	warm  atomic.Pointer[graph.Net] // one Net kept across garbage collections, with its workspaces

	mu   sync.Mutex
	path graph.Path // the copies of PerturbedProbs so far
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

// graphBatch is the most inputs one pass of a GraphModel's Probs,
// PlainProbs, InputGrad or LayerGrad computes; a larger batch runs in
// chunks, ctx checked between them (each input's values are its own, so
// the bytes do not depend on the chunks).
const graphBatch = 64

// chunks runs f on the inputs of x in chunks of graphBatch, on a Net of
// the pool, stopping at ctx's end. dst, if not nil, must hold per values
// an input.
func (m *GraphModel) chunks(ctx context.Context, x, dst []float32, per int, f func(n *graph.Net, b0, b1 int) error) error {
	b, err := wholeInputs(x, m.n)
	if err != nil {
		return fmt.Errorf("graph %q: %w", m.spec.Name, err)
	}
	if dst != nil && len(dst) != b*per {
		return fmt.Errorf("graph %q: %d values for the answers of %d inputs; want %d", m.spec.Name, len(dst), b, b*per)
	}
	n := m.get()
	defer m.put(n)
	return inChunks(ctx, b, graphBatch, func(b0, b1 int) error { return f(n, b0, b1) })
}

// Probs writes the class probabilities of the batch x (Net.Forward).
func (m *GraphModel) Probs(ctx context.Context, dst, x []float32) error {
	return m.chunks(ctx, x, dst, m.k, func(n *graph.Net, b0, b1 int) error {
		return n.Forward(dst[b0*m.k:b1*m.k], x[b0*m.n:b1*m.n])
	})
}

// Logits writes the logits of the batch x (Net.ForwardLogits).
func (m *GraphModel) Logits(ctx context.Context, dst, x []float32) error {
	return m.chunks(ctx, x, dst, m.k, func(n *graph.Net, b0, b1 int) error {
		return n.ForwardLogits(dst[b0*m.k:b1*m.k], x[b0*m.n:b1*m.n])
	})
}

// PlainProbs writes the class probabilities of the batch x as the
// incremental paths compute them (Net.ForwardUnfolded): the perturbed
// copies of PerturbedProbs that equal x give these bits, which Probs's
// folded pass does not (it differs by float32 rounding); PerturbedProbs's
// unperturbed probability is this one.
func (m *GraphModel) PlainProbs(ctx context.Context, dst, x []float32) error {
	return m.chunks(ctx, x, dst, m.k, func(n *graph.Net, b0, b1 int) error {
		return n.ForwardUnfolded(dst[b0*m.k:b1*m.k], x[b0*m.n:b1*m.n])
	})
}

// InputGrad writes d p_target / d x of each input and, if probs is not
// nil, the probabilities (Net.Grad).
func (m *GraphModel) InputGrad(ctx context.Context, dst, probs, x []float32, target []int) error {
	if b, err := wholeInputs(x, m.n); err == nil && (len(target) != b || probs != nil && len(probs) != b*m.k) {
		return fmt.Errorf("graph %q: %d targets and %d probabilities for %d inputs; want one target and %d probabilities an input", m.spec.Name, len(target), len(probs), b, m.k)
	}
	return m.chunks(ctx, x, dst, m.n, func(n *graph.Net, b0, b1 int) error {
		r := graph.GradRequest{Targets: target[b0:b1], Input: dst[b0*m.n : b1*m.n]}
		if probs != nil {
			r.Probs = probs[b0*m.k : b1*m.k]
		}
		return n.Grad(x[b0*m.n:b1*m.n], r)
	})
}

// LayerShape is the output shape of module path layer (Net.Layer).
func (m *GraphModel) LayerShape(_ context.Context, layer string) (Shape, error) {
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
func (m *GraphModel) LayerGrad(ctx context.Context, act, grad, x []float32, target []int, layer string) error {
	b, err := wholeInputs(x, m.n)
	if err != nil {
		return fmt.Errorf("graph %q: %w", m.spec.Name, err)
	}
	n := m.get()
	l, err := n.Layer(layer)
	m.put(n)
	if err != nil {
		return err
	}
	sz := l.Shape.Size()
	if len(act) != b*sz || len(grad) != b*sz || len(target) != b {
		return fmt.Errorf("graph %q: layer %q: want act and grad of %d values and %d targets, got %d, %d, %d", m.spec.Name, layer, b*sz, b, len(act), len(grad), len(target))
	}
	return m.chunks(ctx, x, nil, 0, func(n *graph.Net, b0, b1 int) error {
		return n.Grad(x[b0*m.n:b1*m.n], graph.GradRequest{Targets: target[b0:b1], Layer: &l, Act: act[b0*sz : b1*sz], LayerGrad: grad[b0*sz : b1*sz]})
	})
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

// LayerPositions is where the positions of module path layer's output
// lie in the input (graph.Net.LayerPositions): position l stands for the
// input samples [l*stride + lo, l*stride + hi], and rows says that the
// positions are the output's rows (tokens x features, after a transpose)
// rather than its columns. It is an error for a layer after a node that
// mixes its positions (global pooling, a mean over the tokens).
func (m *GraphModel) LayerPositions(layer string) (rows bool, stride, lo, hi int, err error) {
	n := m.get()
	defer m.put(n)
	p, err := n.LayerPositions(layer)
	if err != nil {
		return false, 0, 0, 0, err
	}
	return p.Rows, p.Stride, p.Lo, p.Hi, nil
}

// PerturbedProbs computes a Perturbation (see Perturbed) by
// graph.Net.WindowProbs (windows) or graph.Net.SpanProbs (spans of a
// constant baseline): only the steps whose receptive field reads a
// perturbed sample are recomputed, or forward passes run when that does
// not pay (Path says which). The unperturbed probability is PlainProbs's.
// Spans with a baseline signal it leaves to Perturbed's forward passes.
func (m *GraphModel) PerturbedProbs(ctx context.Context, req Perturbation, dst []float32) (bool, error) {
	if req.Spans != nil && req.Signal != nil {
		return false, nil
	}
	n := m.get()
	defer m.put(n)
	N := req.Copies()
	var p graph.Path
	var err error
	unperturbed := req.Unperturbed // still to compute
	switch {
	case N == 0:
	case req.Spans != nil:
		gs := make([][]graph.ChannelSpan, len(req.Spans))
		for j, sp := range req.Spans {
			gs[j] = make([]graph.ChannelSpan, len(sp))
			for i, s := range sp {
				gs[j][i] = graph.ChannelSpan{Ch: s.Ch, Lo: s.Lo, Hi: s.Hi}
			}
		}
		p, err = n.SpanProbs(dst[:N], req.X, gs, req.Baseline, req.Class)
	default:
		base := req.Baseline
		z := req.windowSignal(m.arch.InLen)
		if z != nil {
			base = 0
		}
		if n.PooledLen() == 0 {
			p, err = n.WindowProbs(dst[:N], req.X, z, req.Starts, req.Width, base, req.Class)
			break
		}
		// The trunk plan: the pooled vectors through req.Cache, shared
		// by the nets of one trunk (MC dropout's draws), and x's own
		// probability with ForwardUnfolded's bits.
		var p0 float32
		p0, p, err = n.WindowProbsCached(dst[:N], req.X, z, req.Starts, req.Width, base, req.Class, req.Cache)
		if err == nil && req.Unperturbed {
			dst[N] = p0
			unperturbed = false
		}
	}
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	m.path = m.path.Add(p)
	m.mu.Unlock()
	if unperturbed {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		probs := make([]float32, m.k)
		if err := n.ForwardUnfolded(probs, req.X); err != nil {
			return false, err
		}
		dst[N] = probs[req.Class]
	}
	return true, nil
}

// Path is how the perturbed copies of every PerturbedProbs call so far
// were computed: how many, how many incrementally, and the share of their
// forward passes' work done.
func (m *GraphModel) Path() graph.Path {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.path
}

var (
	_ Model     = (*GraphModel)(nil)
	_ Perturber = (*GraphModel)(nil)
)

// FeatureLen is the size of the graph's penultimate value
// (graph.Net.Penultimate), or why it has none.
func (m *GraphModel) FeatureLen() (int, error) {
	n := m.get()
	defer m.put(n)
	s, err := n.Penultimate()
	return s.Size(), err
}

// Features writes the penultimate features of the batch x
// (graph.Net.Features).
func (m *GraphModel) Features(ctx context.Context, dst, x []float32) error {
	per, err := m.FeatureLen()
	if err != nil {
		return err
	}
	return m.chunks(ctx, x, dst, per, func(n *graph.Net, b0, b1 int) error {
		return n.Features(dst[b0*per:b1*per], x[b0*m.n:b1*m.n])
	})
}
