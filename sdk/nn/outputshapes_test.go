package nn

import (
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// TestOutputShapesPaper: the paper's network of layers and the same
// network written as a graph (graphtest.PaperGraph, one node a layer)
// give the same output shapes, and they are the sizes of the paper's
// Table 4 (valid convolutions and pooling of kernel 3, each 2 samples
// shorter: 640 -> 638 -> 636 -> 634 -> 632 -> 630, then global pooling
// to 1); the layers' names are carried, "_<index>" for an unnamed layer.
func TestOutputShapesPaper(t *testing.T) {
	layers, err := PaperArch().OutputShapes()
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := GraphArch(graphtest.PaperGraph()).OutputShapes()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != len(PaperArch().Layers) || len(nodes) != len(layers) {
		t.Fatalf("%d layer shapes and %d node shapes for %d layers", len(layers), len(nodes), len(PaperArch().Layers))
	}
	tl := PaperArch().InLen
	for i, l := range PaperArch().Layers {
		if l.Kind == KindConv1D || l.Kind == KindMaxPool1D {
			tl -= l.Kernel - 1
		}
		if l.Kind == KindGlobalMaxPool {
			tl = 1
		}
		if layers[i].T != tl {
			t.Errorf("layer %d (%s): length %d, want %d", i, l.Kind, layers[i].T, tl)
		}
		if layers[i].Shape != nodes[i].Shape {
			t.Errorf("layer %d (%s): %v as a layer, %v as graph node %q", i, l.Kind, layers[i].Shape, nodes[i].Shape, nodes[i].Name)
		}
		want := l.Name
		if want == "" {
			want = "_" + strconv.Itoa(i)
		}
		if layers[i].Name != want || nodes[i].Name != graphtest.PaperGraph().Nodes[i].Name {
			t.Errorf("entry %d named %q and %q, want %q and %q", i, layers[i].Name, nodes[i].Name, want, graphtest.PaperGraph().Nodes[i].Name)
		}
	}
	if last := layers[len(layers)-1].Shape; last != (Shape{C: PaperArch().Classes(), T: 1}) {
		t.Errorf("last shape %v, want the %d logits x 1", last, PaperArch().Classes())
	}
}

// TestOutputShapesGraphOutput: a graph whose output node is not its last
// node gives the shapes of the nodes up to the output only, so that the
// last entry is the logits; a residual addition keeps its inputs' shape.
func TestOutputShapesGraphOutput(t *testing.T) {
	spec := graphtest.MidOutput()
	s, err := GraphArch(spec).OutputShapes()
	if err != nil {
		t.Fatal(err)
	}
	want := []NamedShape{{"conv", Shape{C: 2, T: 10}}, {"add", Shape{C: 2, T: 10}}, {"gap", Shape{C: 2, T: 1}}, {"flat", Shape{C: 2, T: 1}}, {"fc", Shape{C: 3, T: 1}}}
	if len(s) != len(want) {
		t.Fatalf("%d shapes %v, want %d (up to the output node fc)", len(s), s, len(want))
	}
	for i := range want {
		if s[i] != want[i] {
			t.Errorf("entry %d: %v, want %v", i, s[i], want[i])
		}
	}
}

// TestOutputShapesErrors: an architecture that does not build, or a
// model known by its shape only, has no output shapes: the error names
// what is wrong.
func TestOutputShapesErrors(t *testing.T) {
	for _, c := range []struct {
		a    Arch
		want string
	}{
		{Arch{Name: "torch", InChannels: 1, InLen: 8, Outputs: 3}, "known by its shape only"},
		{Arch{Name: "long", InChannels: 1, InLen: 4, Layers: []Layer{{Kind: KindConv1D, Name: "c", Out: 2, Kernel: 9}, {Kind: KindFlatten}}}, "kernel"},
		{GraphArch(graph.Spec{Name: "g", InChannels: 1, InLen: 8, Nodes: []graph.Node{{Name: "r", Op: "relu"}}}), "need K x 1"},
	} {
		if _, err := c.a.OutputShapes(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("arch %q: error %v, want one naming %q", c.a.Name, err, c.want)
		}
	}
}
