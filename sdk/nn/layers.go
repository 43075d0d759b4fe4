package nn

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// This file is the front end of a list of layers ([[model.layers]], the
// paper's network): it compiles to a graph of ops, one node a layer, which
// sdk/nn/graph computes like every other network. A layer kind is the op
// of the graph's table of the same name (graph.Ops) unless layerOps
// renames it; a Layer's fields are the op's attributes of the same names
// (their toml keys), and layerOps fixes the attributes in which a layer
// kind differs from the op's defaults.

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
// it is the prefix of their state_dict names ("conv1.weight"), and the
// name of its graph node.
type Layer struct {
	Kind   LayerKind `toml:"kind" json:"kind"`
	Name   string    `toml:"name" json:"name,omitempty"`
	Out    int       `toml:"out" json:"out,omitempty"`       // conv1d: output channels; dense: units
	Kernel int       `toml:"kernel" json:"kernel,omitempty"` // conv1d, maxpool1d: window length
	P      float64   `toml:"p" json:"p,omitempty"`           // dropout probability
}

// layerOps is the table of layer kinds: the op of the graph's table each
// compiles to, and the attributes in which the kind differs from the op's
// defaults. Everything else about a kind (its parameters, shape rule,
// passes) is the op's.
var layerOps = map[LayerKind]struct {
	op    string
	fixed map[string]any
}{
	KindConv1D:        {op: "conv1d"},
	KindReLU:          {op: "relu"},
	KindMaxPool1D:     {op: "maxpool1d", fixed: map[string]any{"stride": int64(1)}},
	KindGlobalMaxPool: {op: "globalmaxpool"},
	KindBatchNorm1D:   {op: "batchnorm1d"},
	KindFlatten:       {op: "flatten"},
	KindDense:         {op: "linear"},
	KindDropout:       {op: "dropout", fixed: map[string]any{"p": 0.0}}, // p omitted: no dropout
}

// LayerKinds lists the layer kinds, sorted.
func LayerKinds() []LayerKind {
	ks := make([]LayerKind, 0, len(layerOps))
	for k := range layerOps {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// LayerOp is the op of the graph's table that layer kind k compiles to,
// "" for an unknown kind.
func LayerOp(k LayerKind) string { return layerOps[k].op }

// LayerSpec compiles a list of layers to a graph of ops: node i is
// layers[i], named by its Name, or "_<i>" (with more leading '_' while
// that is taken) for a layer without one; its op is LayerOp(Kind); its
// attributes are the layer's fields of the op's attribute names (the
// fields' toml keys) over layerOps' fixed values. A field the op has no
// attribute for must be zero. The spec's input is left to the Arch (0 x
// 0). Errors name the layer and say what is accepted.
func LayerSpec(name string, layers []Layer) (graph.Spec, error) {
	s := graph.Spec{Name: name, Nodes: make([]graph.Node, len(layers))}
	taken := map[string]bool{}
	for _, l := range layers {
		taken[l.Name] = true
	}
	for i, l := range layers {
		where := fmt.Sprintf("arch %q layer %d (%s)", name, i, l.Kind)
		op, ok := graph.Ops().Lookup(LayerOp(l.Kind))
		if !ok {
			return graph.Spec{}, fmt.Errorf("%s: unknown kind %q (accepted: %s)", where, l.Kind, acceptedKinds())
		}
		attrs := map[string]any{}
		for k, v := range layerOps[l.Kind].fixed {
			attrs[k] = v
		}
		v := reflect.ValueOf(l)
		for f := range v.NumField() {
			key, _, _ := strings.Cut(v.Type().Field(f).Tag.Get("toml"), ",")
			if key == "kind" || key == "name" {
				continue
			}
			has := false
			for _, a := range op.Attrs {
				has = has || a.Name == key
			}
			switch {
			case has:
				attrs[key] = v.Field(f).Interface()
			case !v.Field(f).IsZero():
				return graph.Spec{}, fmt.Errorf("%s: key %q is not one of a %s layer (accepted: %s)", where, key, l.Kind, layerKeys(op))
			}
		}
		nd := graph.Node{Name: l.Name, Op: op.Kind, Attrs: attrs}
		if l.Name == "" {
			if op.Params != nil {
				return graph.Spec{}, fmt.Errorf("%s: name is required for a layer with parameters", where)
			}
			nd.Name = "_" + strconv.Itoa(i)
			for taken[nd.Name] {
				nd.Name = "_" + nd.Name
			}
			taken[nd.Name] = true
		}
		s.Nodes[i] = nd
	}
	return s, nil
}

// acceptedKinds lists the layer kinds for errors.
func acceptedKinds() string {
	var s []string
	for _, k := range LayerKinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

// layerKeys lists the keys a layer of op accepts besides kind and name.
func layerKeys(op *graph.Op) string {
	s := []string{"kind", "name"}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(Layer{})) {
		key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		for _, a := range op.Attrs {
			if a.Name == key {
				s = append(s, key)
			}
		}
	}
	return strings.Join(s, ", ")
}
