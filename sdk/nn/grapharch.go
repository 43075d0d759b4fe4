package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// GraphArch returns the architecture of the graph network spec, on an
// input of spec.InChannels x spec.InLen.
func GraphArch(spec graph.Spec) Arch {
	s := spec
	return Arch{Name: spec.Name, InChannels: spec.InChannels, InLen: spec.InLen, Graph: &s}
}

// graphSpec is a's graph on a's input.
func (a Arch) graphSpec() graph.Spec {
	s := *a.Graph
	s.InChannels, s.InLen = a.InChannels, a.InLen
	if s.Name == "" {
		s.Name = a.Name
	}
	return s
}

// compileGraph compiles a's graph on a's input.
func (a Arch) compileGraph() (*graph.Net, error) {
	net, err := graph.Compile(a.graphSpec())
	if err != nil {
		return nil, fmt.Errorf("arch %q: %w", a.Name, err)
	}
	return net, nil
}

// reshapedGraph is Reshaped of a graph architecture: the graph on c
// channels of t samples and, when k > 0, with k classes: its output node,
// or the input of an output softmax, must then be a linear node, whose
// out becomes k.
func (a Arch) reshapedGraph(c, t, k int) (Arch, error) {
	b := a
	b.InChannels, b.InLen = c, t
	s := b.graphSpec()
	s.Nodes = append([]graph.Node(nil), s.Nodes...)
	b.Graph = &s
	if k > 0 && k != a.Classes() {
		i, err := s.OutputIndex()
		if err != nil {
			return Arch{}, fmt.Errorf("arch %q: %w", a.Name, err)
		}
		if s.Nodes[i].Op == "softmax" {
			i, err = s.InputIndex(i, 0)
			if err != nil {
				return Arch{}, fmt.Errorf("arch %q: %w", a.Name, err)
			}
		}
		if i < 0 || s.Nodes[i].Op != "linear" {
			return Arch{}, fmt.Errorf("arch %q: its output is not a linear node, so its %d logits cannot become %d classes", a.Name, a.Classes(), k)
		}
		attrs := map[string]any{}
		for key, v := range s.Nodes[i].Attrs {
			attrs[key] = v
		}
		attrs["out"] = int64(k)
		s.Nodes[i].Attrs = attrs
	}
	if err := b.Validate(); err != nil {
		return Arch{}, fmt.Errorf("arch %q on %d channel(s) x %d samples: %w", a.Name, c, t, err)
	}
	return b, nil
}

// graphLayout is NewLayout of a graph architecture: its parameters in
// node order, named "<node>.<suffix>".
func graphLayout(a Arch) (*Layout, error) {
	net, err := a.compileGraph()
	if err != nil {
		return nil, err
	}
	l := &Layout{index: map[string]int{}}
	for _, p := range net.Params() {
		l.index[p.Name] = len(l.Tensors)
		l.Tensors = append(l.Tensors, TensorInfo{Name: p.Name, Shape: p.Shape, Offset: p.Offset, Size: p.Len, Trainable: p.Trainable})
		l.Size += p.Len
	}
	return l, nil
}

// Open returns the Model of p: an Inference for a network of Layers
// (NewModel), a GraphModel for a graph architecture.
func Open(p Params) (Model, error) {
	if p.Arch.Graph == nil {
		return NewModel(p)
	}
	net, err := p.Arch.compileGraph()
	if err != nil {
		return nil, err
	}
	if len(p.Data) != net.NumParams() {
		return nil, fmt.Errorf("arch %q: %d parameters, the graph has %d", p.Arch.Name, len(p.Data), net.NumParams())
	}
	copy(net.Theta, p.Data)
	m := NewGraphModel(net)
	m.arch = p.Arch
	return m, nil
}

// graphTrainNet is a compiled graph for Train: its Theta is the trained
// vector p of each call.
type graphTrainNet struct {
	net   *graph.Net
	lay   *Layout
	probs bool      // the output node is a softmax: its values are probabilities
	z, dz []float32 // probs: log-probabilities (the logits), and d L / d probs
}

func newGraphTrainNet(a Arch) (*graphTrainNet, error) {
	net, err := a.compileGraph()
	if err != nil {
		return nil, err
	}
	lay, err := graphLayout(a)
	if err != nil {
		return nil, err
	}
	s := net.Spec()
	i, err := s.OutputIndex()
	if err != nil {
		return nil, err
	}
	return &graphTrainNet{net: net, lay: lay, probs: s.Nodes[i].Op == "softmax"}, nil
}

func (t *graphTrainNet) inputLen() int   { return t.net.InShape().Size() }
func (t *graphTrainNet) classes() int    { return t.net.Classes() }
func (t *graphTrainNet) layout() *Layout { return t.lay }

// forward runs the graph (graph.Net.Run); an output softmax's
// probabilities p become the logits log p, whose softmax is p.
func (t *graphTrainNet) forward(p, x []float32, train bool, rnd *rand.Rand) []float32 {
	t.net.Theta = p
	out, err := t.net.Run(x, train, rnd)
	if err != nil {
		panic(err) // Train checked the data's shape
	}
	if !t.probs {
		return out
	}
	t.z = grow(t.z, len(out))
	for i, v := range out {
		t.z[i] = float32(math.Log(float64(max(v, math.SmallestNonzeroFloat32))))
	}
	return t.z
}

// backward backpropagates dz through the graph (graph.Net.Backprop); for
// an output softmax, d L / d p = dz / p (through z = log p).
func (t *graphTrainNet) backward(p, dz, grad []float32) {
	t.net.Theta = p
	if t.probs {
		t.dz = grow(t.dz, len(dz))
		for i, d := range dz {
			t.dz[i] = d / max(float32(math.Exp(float64(t.z[i]))), math.SmallestNonzeroFloat32)
		}
		dz = t.dz
	}
	t.net.Backprop(dz, grad, nil)
}
