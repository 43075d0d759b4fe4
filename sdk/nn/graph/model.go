package graph

import (
	"fmt"
	"sync"

	"github.com/uaxai/uaxai/sdk/nn"
)

// Model is a compiled graph network with its parameters as an nn.Model,
// so that every explainer computes with it (and the model service serves
// it to explainers in other processes). Its Arch is known by its shape
// only (nn.Arch.ShapeOnly: name, InChannels, InLen, Outputs): a layer is
// a module path (Net.Layer), and Grad-CAM takes align "none", "linear" or
// "nearest" on it.
//
// A Model is safe for concurrent use: each call takes a Net of its own
// from a pool (compiled from the same spec, with the same Theta). nn.Model's
// methods return no errors: a failed computation (a non-finite
// probability, an unknown target) panics with an error value, which the
// in-process explainers' driver and the model service recover and report.
type Model struct {
	spec  Spec
	theta []float32
	arch  nn.Arch
	n, k  int
	pool  sync.Pool // *Net
}

// NewModel returns net, with its current Theta, as an nn.Model. net
// itself is not used afterwards (its spec and Theta are copied).
func NewModel(net *Net) *Model {
	in := net.InShape()
	m := &Model{spec: net.Spec(), theta: append([]float32(nil), net.Theta...), n: in.C * in.T, k: net.Classes()}
	m.arch = nn.Arch{Name: net.spec.Name, InChannels: in.C, InLen: in.T, Outputs: m.k}
	m.pool.New = func() any {
		n, err := Compile(m.spec)
		if err != nil {
			panic(fmt.Errorf("graph %q: recompiling its own spec: %w", m.spec.Name, err)) // it compiled once already
		}
		copy(n.Theta, m.theta)
		return n
	}
	return m
}

// get takes a Net of the pool; put gives it back.
func (m *Model) get() *Net  { return m.pool.Get().(*Net) }
func (m *Model) put(n *Net) { m.pool.Put(n) }

// Arch is the network known by its shape: InChannels x InLen -> Outputs.
func (m *Model) Arch() nn.Arch { return m.arch }

// InputLen is InChannels*InLen.
func (m *Model) InputLen() int { return m.n }

// Classes is the number of class probabilities.
func (m *Model) Classes() int { return m.k }

// Probs writes the class probabilities of the batch x (Net.Forward).
func (m *Model) Probs(dst, x []float32) {
	n := m.get()
	defer m.put(n)
	if err := n.Forward(dst, x); err != nil {
		panic(err)
	}
}

// InputGrad writes d p_target / d x of each input and, if probs is not
// nil, the probabilities (Net.Grad).
func (m *Model) InputGrad(dst, probs, x []float32, target []int) {
	n := m.get()
	defer m.put(n)
	if err := n.Grad(x, GradRequest{Targets: target, Probs: probs, Input: dst}); err != nil {
		panic(err)
	}
}

// LayerShape is the output shape of module path layer (Net.Layer).
func (m *Model) LayerShape(layer string) (nn.Shape, error) {
	n := m.get()
	defer m.put(n)
	l, err := n.Layer(layer)
	if err != nil {
		return nn.Shape{}, err
	}
	return nn.Shape{C: l.Shape.C, T: l.Shape.T}, nil
}

// LayerGrad writes the output of module path layer and d p_target / d of
// it, B x C x T each.
func (m *Model) LayerGrad(act, grad, x []float32, target []int, layer string) error {
	n := m.get()
	defer m.put(n)
	l, err := n.Layer(layer)
	if err != nil {
		return err
	}
	return n.Grad(x, GradRequest{Targets: target, Layer: &l, Act: act, LayerGrad: grad})
}

var _ nn.Model = (*Model)(nil)
