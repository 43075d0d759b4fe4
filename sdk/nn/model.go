package nn

import "github.com/uaxai/uaxai/sdk/nn/internal/kern"

// Model is the eval-mode view of one network that an explainer works
// against. Batches are flat: x holds B inputs of InputLen() values each.
// Implementations are safe for concurrent use.
type Model interface {
	// Arch is the architecture the model was built from.
	Arch() Arch
	// InputLen is InChannels*InLen, the length of one input.
	InputLen() int
	// Classes is the number of class probabilities.
	Classes() int
	// Probs writes the softmax class probabilities of a batch:
	// dst[b*Classes()+j] = p_j(x_b). len(x) must be a multiple of InputLen().
	Probs(dst, x []float32)
	// InputGrad writes dst[b*InputLen()+t] = d p_{target[b]}(x_b) / d x_b[t],
	// and, if probs is not nil, the class probabilities as Probs does.
	InputGrad(dst, probs, x []float32, target []int)
	// LayerShape is the per-input output shape of the named layer.
	LayerShape(layer string) (Shape, error)
	// LayerGrad writes the named layer's output for each input into act and
	// d p_{target[b]} / d act into grad, both B*C*T values in (B, C, T) order.
	LayerGrad(act, grad, x []float32, target []int, layer string) error
}

// PlainProber is a Model whose Probs runs a faster pass than its
// incremental paths (WindowProbs, SpanProbs) and whose PlainProbs gives
// the incremental paths' bits for unperturbed inputs (GraphModel).
type PlainProber interface {
	PlainProbs(dst, x []float32)
}

// PlainProbs writes m's class probabilities of the batch x by the
// computation of m's incremental paths: PlainProbs where m has it, else
// Probs. Set against the perturbed copies' probabilities of WindowProbs
// or SpanProbs, a copy that changes nothing then scores exactly 0.
func PlainProbs(m Model, dst, x []float32) {
	if p, ok := m.(PlainProber); ok {
		p.PlainProbs(dst, x)
		return
	}
	m.Probs(dst, x)
}

// Accelerated reports whether the AVX2+FMA kernels are in use (see package
// internal/kern); false with the purego build tag or on other CPUs.
func Accelerated() bool { return kern.Accelerated() }
