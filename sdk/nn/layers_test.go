package nn

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// TestPaperLayersCompileToPaperGraph: the paper's network of layers
// compiles to the graph written by hand in graphtest.PaperGraph (its
// independent transcription of the paper's Table 4): node for node the
// same ops and canonical attributes (maxpool1d of stride 1, linear for
// dense), and the same state_dict layout; only the unnamed layers' node
// names differ.
func TestPaperLayersCompileToPaperGraph(t *testing.T) {
	got, err := PaperArch().GraphNet()
	if err != nil {
		t.Fatal(err)
	}
	want, err := GraphArch(graphtest.PaperGraph()).GraphNet()
	if err != nil {
		t.Fatal(err)
	}
	gs, ws := got.Spec(), want.Spec()
	if len(gs.Nodes) != len(ws.Nodes) {
		t.Fatalf("%d nodes, want %d", len(gs.Nodes), len(ws.Nodes))
	}
	for i, nd := range gs.Nodes {
		w := ws.Nodes[i]
		a, _ := json.Marshal(nd.Attrs)
		b, _ := json.Marshal(w.Attrs)
		if nd.Op != w.Op || string(a) != string(b) {
			t.Errorf("node %d: %s %s, want %s %s", i, nd.Op, a, w.Op, b)
		}
		if l := PaperArch().Layers[i]; l.Name != "" && nd.Name != l.Name {
			t.Errorf("node %d named %q, want the layer's name %q", i, nd.Name, l.Name)
		}
	}
	gp, wp := got.Params(), want.Params()
	if len(gp) != len(wp) {
		t.Fatalf("%d tensors, want %d", len(gp), len(wp))
	}
	for i := range gp {
		if gp[i].Name != wp[i].Name || gp[i].Offset != wp[i].Offset || gp[i].Len != wp[i].Len || gp[i].Trainable != wp[i].Trainable {
			t.Errorf("tensor %d: %+v, want %+v", i, gp[i], wp[i])
		}
	}
}

// TestLayerSpecRules: each rule of the front end, with the error naming
// the layer: a dropout without p drops nothing (p 0, not the op's default
// 0.5); a field the kind's op has no attribute for is refused unless
// zero; a layer with parameters needs a name; an unknown kind's error
// lists every kind; an unnamed layer's node name avoids a name taken by
// another layer.
func TestLayerSpecRules(t *testing.T) {
	flat := []Layer{{Kind: KindFlatten}, {Kind: KindDense, Name: "d", Out: 2}}
	s, err := LayerSpec("drop", append([]Layer{{Kind: KindDropout}}, flat...))
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes[0].Attrs["p"] != 0.0 {
		t.Errorf("dropout without p: attrs %v, want p 0", s.Nodes[0].Attrs)
	}
	if units, p, err := DropoutInputs(Arch{Name: "drop", InChannels: 2, InLen: 3, Layers: append([]Layer{{Kind: KindDropout}}, flat...)}); err != nil || len(units) != 1 || units[0] != 2 || p[0] != 0 {
		t.Errorf("DropoutInputs: %v %v %v, want one dropout of 2 units and p 0", units, p, err)
	}
	for _, c := range []struct {
		name   string
		layers []Layer
		want   string
	}{
		{"kernel on relu", append([]Layer{{Kind: KindReLU, Kernel: 3}}, flat...), `arch "x" layer 0 (relu): key "kernel" is not one of a relu layer (accepted: kind, name)`},
		{"p on conv", append([]Layer{{Kind: KindConv1D, Name: "c", Out: 1, Kernel: 1, P: 0.5}}, flat...), `layer 0 (conv1d): key "p" is not one of a conv1d layer (accepted: kind, name, out, kernel)`},
		{"unnamed dense", []Layer{{Kind: KindFlatten}, {Kind: KindDense, Out: 2}}, `layer 1 (dense): name is required for a layer with parameters`},
		{"unknown kind", append([]Layer{{Kind: "linear"}}, flat...), `layer 0 (linear): unknown kind "linear" (accepted: batchnorm1d, conv1d, dense, dropout, flatten, globalmaxpool, maxpool1d, relu)`},
	} {
		_, err := LayerSpec("x", c.layers)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	s, err = LayerSpec("names", []Layer{{Kind: KindReLU}, {Kind: KindFlatten}, {Kind: KindDense, Name: "_0", Out: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes[0].Name != "__0" || s.Nodes[1].Name != "_1" {
		t.Errorf("node names %q, %q; want __0 (as _0 is taken) and _1", s.Nodes[0].Name, s.Nodes[1].Name)
	}
	if _, err := graph.Compile(graph.Spec{Name: "names", InChannels: 1, InLen: 3, Nodes: s.Nodes}); err != nil {
		t.Errorf("the spec does not compile: %v", err)
	}
}

// TestLayersArchJSON: an Arch of layers is encoded with the graph it
// compiles to, so that a plugin reads every network from "graph"; it
// decodes to the value encoded (a graph other than the layers' is
// refused), and
// Reshaped of it changes the layers' last dense layer (its graph then
// recompiled), as of the arch before encoding.
func TestLayersArchJSON(t *testing.T) {
	a := PaperArchDropout(0.25)
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct{ Graph graph.Spec }
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	if len(wire.Graph.Nodes) != len(a.Layers) || wire.Graph.Nodes[len(a.Layers)-2].Attrs["p"] != 0.25 {
		t.Fatalf("encoded graph %+v, want the layers' nodes with the dropout's p", wire.Graph)
	}
	var back Arch
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, a) || !a.Same(back) {
		t.Errorf("decoded arch %+v, want %+v", back, a)
	}
	i := strings.LastIndex(string(b), `"p":0.25`) // the graph's, after the layers'
	if i < strings.Index(string(b), `"graph"`) {
		t.Fatalf("the encoding has no graph p to change: %s", b)
	}
	bad := string(b[:i]) + `"p":0.5` + string(b[i+len(`"p":0.25`):])
	if err := json.Unmarshal([]byte(bad), &back); err == nil || !strings.Contains(err.Error(), "not the one its layers compile to") {
		t.Errorf("a graph other than the layers': %v", err)
	}
	for _, x := range []Arch{a, back} {
		r, err := x.Reshaped(2, 50, 3)
		if err != nil {
			t.Fatal(err)
		}
		if r.Classes() != 3 || r.Layers[len(r.Layers)-1].Out != 3 || r.Graph != nil {
			t.Errorf("reshaped: %d classes, last layer %+v, graph %v; want 3 classes, out 3, the graph recompiled", r.Classes(), r.Layers[len(r.Layers)-1], r.Graph)
		}
		if a.Layers[len(a.Layers)-1].Out != 16 {
			t.Fatal("Reshaped changed the original's layers")
		}
	}
}
