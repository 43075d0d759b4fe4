package nn

import (
	"fmt"
	"strings"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// LayerKind names one layer type of an architecture spec.
type LayerKind string

// The layer kinds an architecture may use.
const (
	KindConv1D        LayerKind = "conv1d"        // valid cross-correlation, stride 1
	KindReLU          LayerKind = "relu"          // max(u, 0)
	KindMaxPool1D     LayerKind = "maxpool1d"     // window Kernel, stride 1
	KindGlobalMaxPool LayerKind = "globalmaxpool" // max over all time steps: (C, T) -> (C, 1)
	KindBatchNorm1D   LayerKind = "batchnorm1d"   // per channel, eps 1e-5, momentum 0.1
	KindFlatten       LayerKind = "flatten"       // (C, T) -> (C*T, 1)
	KindDense         LayerKind = "dense"         // y = W x + b
	KindDropout       LayerKind = "dropout"       // inverted dropout with probability P
)

// Layer is one entry of an architecture spec. A recipe writes it as
//
//	[[model.layers]]
//	kind = "conv1d"
//	name = "conv1"
//	out = 8
//	kernel = 3
//
// Name is required for layers with parameters (conv1d, batchnorm1d, dense):
// it is the prefix of their state_dict names ("conv1.weight").
type Layer struct {
	Kind   LayerKind `toml:"kind" json:"kind"`
	Name   string    `toml:"name" json:"name,omitempty"`
	Out    int       `toml:"out" json:"out,omitempty"`       // conv1d: output channels; dense: units
	Kernel int       `toml:"kernel" json:"kernel,omitempty"` // conv1d, maxpool1d: window length
	P      float64   `toml:"p" json:"p,omitempty"`           // dropout probability
}

// Arch is a network architecture: an input of InChannels x InLen samples
// followed by Layers. The last layer's output is the logit vector; softmax
// is applied on top by the Model and the loss.
//
// An Arch with a Graph is a network written as a graph of ops
// (sdk/nn/graph: residual additions, concatenations, padding, strides,
// the op table's kinds) instead of Layers; see GraphArch. Its graph's own
// in_channels and in_len are ignored: the Arch's are the input's.
//
// An Arch without Layers or Graph describes a model known by its shape only: a
// network computed elsewhere (a PyTorch module served by the model
// service) that takes InChannels x InLen inputs and gives Outputs class
// probabilities. Such an Arch builds no network (Validate and Shapes
// refuse it); Classes is its Outputs. Outputs is ignored when Layers are
// given.
type Arch struct {
	Name       string  `toml:"name" json:"name"`
	InChannels int     `toml:"in_channels" json:"in_channels"`
	InLen      int     `toml:"in_len" json:"in_len"`
	Layers     []Layer `toml:"layers" json:"layers"`
	Outputs    int     `toml:"outputs,omitempty" json:"outputs,omitempty"`
	// Graph, if not nil, is the network as a graph of ops (then Layers
	// is empty).
	Graph *graph.Spec `toml:"-" json:"graph,omitempty"`
}

// ShapeOnly reports whether a describes a model known by its shape only
// (no Layers and no Graph; see Arch).
func (a Arch) ShapeOnly() bool { return len(a.Layers) == 0 && a.Graph == nil }

// PaperArchName is the name of the paper's network (Table 4, tb:DCNN).
const PaperArchName = "paper-1dcnn"

// PaperArch returns the paper's 1-D CNN: 640 -> conv 638 -> conv 636 ->
// maxpool 634 -> bn -> conv 632 -> conv 630 -> global max -> bn -> dense 64
// -> bn -> dense 16.
func PaperArch() Arch {
	return Arch{
		Name: PaperArchName, InChannels: 1, InLen: 640,
		Layers: []Layer{
			{Kind: KindConv1D, Name: "conv1", Out: 8, Kernel: 3},
			{Kind: KindReLU},
			{Kind: KindConv1D, Name: "conv2", Out: 8, Kernel: 3},
			{Kind: KindReLU},
			{Kind: KindMaxPool1D, Kernel: 3},
			{Kind: KindBatchNorm1D, Name: "bn1"},
			{Kind: KindConv1D, Name: "conv3", Out: 16, Kernel: 3},
			{Kind: KindReLU},
			{Kind: KindConv1D, Name: "conv4", Out: 16, Kernel: 3},
			{Kind: KindReLU},
			{Kind: KindGlobalMaxPool},
			{Kind: KindBatchNorm1D, Name: "bn2"},
			{Kind: KindFlatten},
			{Kind: KindDense, Name: "fc1", Out: 64},
			{Kind: KindReLU},
			{Kind: KindBatchNorm1D, Name: "bn3"},
			{Kind: KindDense, Name: "fc2", Out: 16},
		},
	}
}

// PaperArchDropout is the paper's network with dropout of probability p on
// fc2's input, as MC dropout uses it.
func PaperArchDropout(p float64) Arch {
	a := PaperArch()
	a.Name = PaperArchName + "-dropout"
	n := len(a.Layers)
	layers := append([]Layer{}, a.Layers[:n-1]...)
	layers = append(layers, Layer{Kind: KindDropout, P: p}, a.Layers[n-1])
	a.Layers = layers
	return a
}

// LookupArch returns a named built-in architecture.
func LookupArch(name string) (Arch, error) {
	switch name {
	case PaperArchName, "":
		return PaperArch(), nil
	}
	return Arch{}, fmt.Errorf("unknown architecture %q (known: %s)", name, PaperArchName)
}

// Reshaped returns a with an input of c channels of t samples and, when k
// > 0, k logits: the last layer, which must then be dense, gets Out = k.
// The layers are otherwise a's, so a built-in architecture (the paper's)
// serves data of any channels, length and classes; the result is
// validated. Reshaped(a.InChannels, a.InLen, 0) is a.
func (a Arch) Reshaped(c, t, k int) (Arch, error) {
	if a.Graph != nil {
		return a.reshapedGraph(c, t, k)
	}
	b := a
	b.InChannels, b.InLen = c, t
	if k > 0 && k != a.Classes() {
		n := len(a.Layers)
		if n == 0 || a.Layers[n-1].Kind != KindDense {
			return Arch{}, fmt.Errorf("arch %q: its last layer is not dense, so its %d logits cannot become %d classes", a.Name, a.Classes(), k)
		}
		b.Layers = append([]Layer(nil), a.Layers...)
		b.Layers[n-1].Out = k
	}
	if err := b.Validate(); err != nil {
		return Arch{}, fmt.Errorf("arch %q on %d channel(s) x %d samples: %w", a.Name, c, t, err)
	}
	return b, nil
}

// Shape is the (channels, length) shape of one sample's activation.
type Shape struct{ C, T int }

// Size is C*T.
func (s Shape) Size() int { return s.C * s.T }

// Shapes validates the architecture and returns the output shape of every
// layer (index i is the output of Layers[i]); the input shape is
// Shape{InChannels, InLen}.
func (a Arch) Shapes() ([]Shape, error) {
	if a.Graph != nil {
		return nil, fmt.Errorf("arch %q is a graph of ops (sdk/nn/graph), not a list of layers", a.Name)
	}
	if a.InChannels < 1 || a.InLen < 1 {
		return nil, fmt.Errorf("arch %q: in_channels and in_len must be >= 1, got %d and %d", a.Name, a.InChannels, a.InLen)
	}
	if len(a.Layers) == 0 {
		if a.Outputs != 0 {
			return nil, fmt.Errorf("arch %q: no layers: a model known by its shape only (%d x %d -> %d), computed elsewhere, not a network sdk/nn builds", a.Name, a.InChannels, a.InLen, a.Outputs)
		}
		return nil, fmt.Errorf("arch %q: no layers", a.Name)
	}
	cur := Shape{a.InChannels, a.InLen}
	out := make([]Shape, len(a.Layers))
	names := map[string]bool{}
	for i, l := range a.Layers {
		where := fmt.Sprintf("arch %q layer %d (%s)", a.Name, i, l.Kind)
		d := kindOf(l.Kind)
		if d == nil {
			return nil, fmt.Errorf("%s: unknown kind %q (accepted: %s)", where, l.Kind, acceptedKinds())
		}
		if d.params != nil {
			if l.Name == "" {
				return nil, fmt.Errorf("%s: name is required for a layer with parameters", where)
			}
			if strings.ContainsAny(l.Name, ". ") {
				return nil, fmt.Errorf("%s: name %q must not contain '.' or spaces", where, l.Name)
			}
			if names[l.Name] {
				return nil, fmt.Errorf("%s: duplicate layer name %q", where, l.Name)
			}
			names[l.Name] = true
		}
		next, err := d.out(l, cur)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		cur = next
		out[i] = cur
	}
	if cur.T != 1 {
		return nil, fmt.Errorf("arch %q: the last layer must give a flat logit vector, got %d x %d", a.Name, cur.C, cur.T)
	}
	return out, nil
}

// NamedShape is the output shape of one layer or graph node and its name.
type NamedShape struct {
	Name string
	Shape
}

// OutputShapes validates the architecture and returns the output shape of
// every layer with its name (entry i is Layers[i]'s, as Shapes gives
// it, named Layers[i].Name, "" for a layer without one) or, for a graph
// architecture, of every node up to its output node (entry i is node
// i's, graph.Net.NodeShape, named by the node). The last entry is the
// logits, Classes x 1. The host sends them with a draw's parameters
// (the protocol's Params.layers), so that no plugin needs shape rules
// of its own. A model known by its shape only has none: an error.
func (a Arch) OutputShapes() ([]NamedShape, error) {
	if a.Graph != nil {
		net, err := a.compileGraph()
		if err != nil {
			return nil, err
		}
		spec := net.Spec()
		last, err := spec.OutputIndex()
		if err != nil {
			return nil, fmt.Errorf("arch %q: %w", a.Name, err)
		}
		out := make([]NamedShape, last+1)
		for i := range out {
			s := net.NodeShape(i)
			out[i] = NamedShape{Name: spec.Nodes[i].Name, Shape: Shape{s.C, s.T}}
		}
		return out, nil
	}
	s, err := a.Shapes()
	if err != nil {
		return nil, err
	}
	out := make([]NamedShape, len(s))
	for i, sh := range s {
		out[i] = NamedShape{Name: a.Layers[i].Name, Shape: sh}
	}
	return out, nil
}

// Classes is the number of logits, the output width of the last layer;
// for a model known by its shape only, Outputs.
func (a Arch) Classes() int {
	if a.ShapeOnly() {
		return a.Outputs
	}
	if a.Graph != nil {
		net, err := a.compileGraph()
		if err != nil {
			return 0
		}
		return net.Classes()
	}
	s, err := a.Shapes()
	if err != nil {
		return 0
	}
	return s[len(s)-1].C
}

// Validate reports whether the architecture is well formed: a network
// whose layers fit together (Shapes), or a model known by its shape only
// with InChannels, InLen and Outputs >= 1.
func (a Arch) Validate() error {
	if a.ShapeOnly() && a.Outputs != 0 {
		if a.InChannels < 1 || a.InLen < 1 || a.Outputs < 1 {
			return fmt.Errorf("arch %q, known by its shape only: in_channels, in_len and outputs must be >= 1, got %d, %d and %d", a.Name, a.InChannels, a.InLen, a.Outputs)
		}
		return nil
	}
	if a.Graph != nil {
		_, err := a.compileGraph()
		return err
	}
	_, err := a.Shapes()
	return err
}
