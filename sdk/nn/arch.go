package nn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// Arch is a network architecture: an input of InChannels x InLen samples
// and a graph of ops (sdk/nn/graph) computing its logits or class
// probabilities.
//
// The graph is Graph, or, when Graph is nil, the graph that Layers
// compile to (LayerSpec): a recipe's [[model.layers]] and the paper's
// network (PaperArch) are written so. Layers are kept beside the graph as
// the form the architecture was written in: the recipe's canonical TOML
// and its hash show them (Graph has no TOML form), and the JSON form
// carries both (MarshalJSON fills in Graph). A graph's own in_channels
// and in_len are ignored: the Arch's are the input's.
//
// An Arch without Layers or Graph describes a model known by its shape only: a
// network computed elsewhere (a PyTorch module served by the model
// service) that takes InChannels x InLen inputs and gives Outputs class
// probabilities. Such an Arch builds no network (Validate refuses it unless
// its shape is complete, and OutputShapes refuses it); Classes is its
// Outputs. Outputs is ignored for a network.
type Arch struct {
	Name       string  `toml:"name" json:"name"`
	InChannels int     `toml:"in_channels" json:"in_channels"`
	InLen      int     `toml:"in_len" json:"in_len"`
	Layers     []Layer `toml:"layers" json:"layers,omitempty"`
	Outputs    int     `toml:"outputs,omitempty" json:"outputs,omitempty"`
	// Graph, if not nil, is the network as a graph of ops; with Layers,
	// the graph they compile to.
	Graph *graph.Spec `toml:"-" json:"graph,omitempty"`
}

// ShapeOnly reports whether a describes a model known by its shape only
// (no Layers and no Graph; see Arch).
func (a Arch) ShapeOnly() bool { return len(a.Layers) == 0 && a.Graph == nil }

// PaperArchName is the name of the paper's network (Table 4, tb:DCNN).
const PaperArchName = "paper-1dcnn"

// PaperArch returns the paper's 1-D CNN: 640 -> conv 638 -> conv 636 ->
// maxpool 634 -> bn -> conv 632 -> conv 630 -> global max -> bn -> dense 64
// -> bn -> dense 16, written as layers (its graph is LayerSpec's).
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

// graphSpec is a's network as a graph on a's input: Graph, or the graph
// of its Layers.
func (a Arch) graphSpec() (graph.Spec, error) {
	var s graph.Spec
	switch {
	case a.Graph != nil:
		s = *a.Graph
	case len(a.Layers) > 0:
		var err error
		if s, err = LayerSpec(a.Name, a.Layers); err != nil {
			return graph.Spec{}, err
		}
	case a.Outputs != 0:
		return graph.Spec{}, fmt.Errorf("arch %q: no layers: a model known by its shape only (%d x %d -> %d), computed elsewhere, not a network sdk/nn builds", a.Name, a.InChannels, a.InLen, a.Outputs)
	default:
		return graph.Spec{}, fmt.Errorf("arch %q: no layers and no graph", a.Name)
	}
	s.InChannels, s.InLen = a.InChannels, a.InLen
	if s.Name == "" {
		s.Name = a.Name
	}
	return s, nil
}

// GraphNet compiles a's network on a's input (a fresh Net, its
// parameters zero).
func (a Arch) GraphNet() (*graph.Net, error) { return a.compileGraph() }

// compileGraph compiles a's network on a's input.
func (a Arch) compileGraph() (*graph.Net, error) {
	s, err := a.graphSpec()
	if err != nil {
		return nil, err
	}
	net, err := graph.Compile(s)
	var ne *graph.NodeError
	if err != nil && a.Graph == nil && errors.As(err, &ne) && ne.Index < len(a.Layers) {
		// node i is layer i: name it as the recipe writes it
		return nil, fmt.Errorf("arch %q layer %d (%s): %w", a.Name, ne.Index, a.Layers[ne.Index].Kind, ne.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("arch %q: %w", a.Name, err)
	}
	return net, nil
}

// Reshaped returns a with an input of c channels of t samples and, when k
// > 0, k classes: the output node (or the input of an output softmax),
// which must then be a linear node (a dense layer), gets out = k. The
// network is otherwise a's, so a built-in architecture (the paper's)
// serves data of any channels, length and classes; the result is
// validated. Reshaped(a.InChannels, a.InLen, 0) is a.
func (a Arch) Reshaped(c, t, k int) (Arch, error) {
	b := a
	b.InChannels, b.InLen = c, t
	if k > 0 && k != a.Classes() {
		s, err := a.graphSpec()
		if err != nil {
			return Arch{}, err
		}
		i, err := s.OutputIndex()
		if err != nil {
			return Arch{}, fmt.Errorf("arch %q: %w", a.Name, err)
		}
		if s.Nodes[i].Op == "softmax" {
			if i, err = s.InputIndex(i, 0); err != nil {
				return Arch{}, fmt.Errorf("arch %q: %w", a.Name, err)
			}
		}
		if i < 0 || s.Nodes[i].Op != "linear" {
			return Arch{}, fmt.Errorf("arch %q: its output is not a linear node (dense layer), so its %d logits cannot become %d classes", a.Name, a.Classes(), k)
		}
		if len(a.Layers) > 0 { // the graph of Layers: node i is layer i
			b.Layers = append([]Layer(nil), a.Layers...)
			b.Layers[i].Out = k
			b.Graph = nil // compiled again from b.Layers
		} else {
			s.Nodes = append([]graph.Node(nil), s.Nodes...)
			attrs := map[string]any{}
			for key, v := range s.Nodes[i].Attrs {
				attrs[key] = v
			}
			attrs["out"] = int64(k)
			s.Nodes[i].Attrs = attrs
			b.Graph, b.Layers = &s, nil
		}
	}
	if err := b.Validate(); err != nil {
		return Arch{}, fmt.Errorf("arch %q on %d channel(s) x %d samples: %w", a.Name, c, t, err)
	}
	return b, nil
}

// Shape is the (channels, length) shape of one sample's activation: the
// graph's.
type Shape = graph.Shape

// NamedShape is the output shape of one graph node (a layer of Layers)
// and its name.
type NamedShape struct {
	Name string
	Shape
}

// OutputShapes validates the architecture and returns the output shape of
// every node up to its output node (entry i is node i's,
// graph.Net.NodeShape, named by the node; for Layers, node i is layer i,
// named as LayerSpec names it). The last entry is the logits, Classes x
// 1. The host sends them with a draw's parameters (the protocol's
// Params.layers), so that no plugin needs shape rules of its own. A model
// known by its shape only has none: an error.
func (a Arch) OutputShapes() ([]NamedShape, error) {
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
		out[i] = NamedShape{Name: spec.Nodes[i].Name, Shape: net.NodeShape(i)}
	}
	return out, nil
}

// Classes is the number of logits, the output width of the network; for
// a model known by its shape only, Outputs; 0 for a network that does not
// compile.
func (a Arch) Classes() int {
	if a.ShapeOnly() {
		return a.Outputs
	}
	net, err := a.compileGraph()
	if err != nil {
		return 0
	}
	return net.Classes()
}

// Validate reports whether the architecture is well formed: a network
// that compiles, or a model known by its shape only with InChannels,
// InLen and Outputs >= 1.
func (a Arch) Validate() error {
	if a.ShapeOnly() && a.Outputs != 0 {
		if a.InChannels < 1 || a.InLen < 1 || a.Outputs < 1 {
			return fmt.Errorf("arch %q, known by its shape only: in_channels, in_len and outputs must be >= 1, got %d, %d and %d", a.Name, a.InChannels, a.InLen, a.Outputs)
		}
		return nil
	}
	if a.InChannels < 1 || a.InLen < 1 {
		return fmt.Errorf("arch %q: in_channels and in_len must be >= 1, got %d and %d", a.Name, a.InChannels, a.InLen)
	}
	_, err := a.compileGraph()
	return err
}

// MarshalJSON encodes a with its graph: for an Arch of Layers alone, the
// canonical graph they compile to (graph.Net.Spec), so that a plugin
// reads every network from "graph". An Arch whose Layers do not compile
// is encoded without one.
func (a Arch) MarshalJSON() ([]byte, error) {
	type plain Arch
	if a.Graph == nil && len(a.Layers) > 0 {
		if net, err := a.compileGraph(); err == nil {
			s := net.Spec()
			a.Graph = &s
		}
	}
	return json.Marshal(plain(a))
}

// UnmarshalJSON decodes a as MarshalJSON encodes it, refusing unknown
// fields. An Arch of Layers keeps its Layers alone (Graph nil, compiled
// from them again when needed), so that it decodes to the value that was
// encoded; a graph sent with them must be the one they compile to.
func (a *Arch) UnmarshalJSON(b []byte) error {
	type plain Arch
	var v plain
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&v); err != nil {
		return err
	}
	x := Arch(v)
	if len(x.Layers) > 0 && x.Graph != nil {
		sent, err := json.Marshal(x.Graph)
		if err != nil {
			return err
		}
		x.Graph = nil
		y, err := x.MarshalJSON()
		if err != nil {
			return err
		}
		var back struct {
			Graph json.RawMessage `json:"graph"`
		}
		if err := json.Unmarshal(y, &back); err != nil {
			return err
		}
		if !bytes.Equal(sent, back.Graph) {
			return fmt.Errorf("arch %q: its graph is not the one its layers compile to (accepted: the layers' graph, or none)", x.Name)
		}
	}
	*a = x
	return nil
}

// Same reports whether a and b are the same architecture: equal JSON
// forms (the wire's), so that a graph's attributes compare by value
// whatever their Go types (an int and the int64 it decodes to).
func (a Arch) Same(b Arch) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
