package nn

import (
	"context"

	"github.com/uaxai/uaxai/sdk/nn/graph"

	"github.com/uaxai/uaxai/sdk/nn/internal/kern"
)

// Model is the eval-mode view of one network that an explainer works
// against. Batches are flat: x holds B inputs of InputLen() values each.
// Implementations are safe for concurrent use.
//
// The calls that compute take a context first and return an error: a
// model may be a client of a service (the model service of the protocol)
// whose requests fail, and a long call (a batch of many inputs, computed
// in chunks) stops at the first chunk after ctx ends, returning ctx.Err()
// wrapped. A bad argument (x not whole inputs, a target out of range, an
// unknown layer) is an error too, never a panic.
type Model interface {
	// Arch is the architecture the model was built from.
	Arch() Arch
	// InputLen is InChannels*InLen, the length of one input.
	InputLen() int
	// Classes is the number of class probabilities.
	Classes() int
	// Probs writes the softmax class probabilities of a batch:
	// dst[b*Classes()+j] = p_j(x_b). len(x) must be a multiple of InputLen().
	Probs(ctx context.Context, dst, x []float32) error
	// InputGrad writes dst[b*InputLen()+t] = d p_{target[b]}(x_b) / d x_b[t],
	// and, if probs is not nil, the class probabilities as Probs does.
	InputGrad(ctx context.Context, dst, probs, x []float32, target []int) error
	// LayerShape is the per-input output shape of the named layer.
	LayerShape(ctx context.Context, layer string) (Shape, error)
	// LayerGrad writes the named layer's output for each input into act and
	// d p_{target[b]} / d act into grad, both B*C*T values in (B, C, T) order.
	LayerGrad(ctx context.Context, act, grad, x []float32, target []int, layer string) error
}

// Logiter is a Model that gives its logits as well: dst[b*Classes()+j]
// = f_j(x_b), the values its softmax turns into the probabilities. The
// explanation metrics that read the logit (Quantus's softmax = false)
// need it.
type Logiter interface {
	Logits(ctx context.Context, dst, x []float32) error
}

// Perturbation asks for the class probabilities of perturbed copies of one
// input X (C channels of T samples, channel-major): copies by windows
// (Starts, Width, Channel: occlusion) or by sets of spans (Spans: LIME),
// never both. A perturbed sample at index i takes Signal[i], or Baseline
// when Signal is nil. Perturbed computes it for any Model.
type Perturbation struct {
	// X is the input, InputLen() values.
	X []float32
	// Class is the class whose probability each copy gets.
	Class int
	// Baseline is what a perturbed sample becomes, unless Signal is set.
	Baseline float32
	// Signal, if not nil, is a baseline signal of X's layout (InputLen()
	// values): a perturbed sample at index i becomes Signal[i], so a
	// sample is replaced by the same value in every copy.
	Signal []float32
	// Starts and Width are windows: copy j has the samples Starts[j] ..
	// Starts[j]+Width-1 replaced, in channel Channel, or in every channel
	// when Channel is AllChannels.
	Starts  []int
	Width   int
	Channel int
	// Spans are sets of spans: copy j has the samples of each span of
	// Spans[j] replaced, each in its channel (every channel for Ch =
	// AllChannels); spans may overlap and come in any order. Channel
	// must then be AllChannels.
	Spans [][]ChannelSpan
	// Unperturbed asks for one value more, after the copies': p_Class(X)
	// by the computation of the copies, so that a copy that changes
	// nothing scores exactly p_Class(X).
	Unperturbed bool
	// Cache, if not nil, is a cache of trunk computations shared between
	// models (MC dropout's draws share their layers up to the global max
	// pool; see graph.TrunkCache) that a model's own path may read and
	// fill. The result is the same bytes with or without it.
	Cache *TrunkCache
}

// TrunkCache is the graph's cache of pooled vectors of perturbed copies
// (graph.TrunkCache), keyed by the trunk's digest: the nets of one trunk
// share it, and no other net can read an entry.
type TrunkCache = graph.TrunkCache

// NewTrunkCache returns a TrunkCache of at most limit bytes of entries.
func NewTrunkCache(limit int64) *TrunkCache { return graph.NewTrunkCache(limit) }

// Copies is the number of perturbed copies of r: its windows or its sets
// of spans.
func (r Perturbation) Copies() int {
	if r.Spans != nil {
		return len(r.Spans)
	}
	return len(r.Starts)
}

// Perturber is a Model with a path of its own to the probabilities of
// perturbed copies of an input that is faster than forward passes of the
// copies (a receptive-field recomputation, a service's own computation).
// It is optional; an explainer calls Perturbed, never the method.
type Perturber interface {
	// PerturbedProbs writes what Perturbed writes for req, whose fields
	// Perturbed has checked against the model, and reports true; or
	// reports false, having written nothing, for a request the model has
	// no path for, which Perturbed then computes by forward passes. The
	// copies' values equal forward passes' up to float32 rounding.
	PerturbedProbs(ctx context.Context, req Perturbation, dst []float32) (bool, error)
}

// Accelerated reports whether the AVX2+FMA kernels are in use (see package
// internal/kern); false with the purego build tag or on other CPUs.
func Accelerated() bool { return kern.Accelerated() }

// Kernels names the kernels in use, "avx2" or "portable": the CPU's best,
// or what the environment variable UAXAI_KERNELS chose at start. The two
// give the same bits; a run's manifest records which ran, for its speed.
func Kernels() string { return kern.Path() }

// KernelsError is the error of an UAXAI_KERNELS value that cannot be had
// (an unknown one, or avx2 on a CPU without it), or nil.
func KernelsError() error { return kern.EnvError() }

// PenultimateLayer is the layer name under which a model service gives
// its penultimate features (shape D x 1): the input of the last linear
// layer, when it gives the class scores.
const PenultimateLayer = "@penultimate"

// Featurer is a Model that gives its penultimate features: the values
// its last linear layer maps to the class scores (for a GraphModel,
// graph.Net.Penultimate). The feature-space out-of-distribution score (a
// Mahalanobis distance to the training records' features) needs it; a
// Model without it gets the input-level check only.
type Featurer interface {
	// FeatureLen is the number of features of one input, or an error
	// saying why the model has none.
	FeatureLen() (int, error)
	// Features writes the features of the batch x: dst[b*FeatureLen()+j].
	Features(ctx context.Context, dst, x []float32) error
}
