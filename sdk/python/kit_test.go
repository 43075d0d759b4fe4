// Package python_test checks the Python kit (uaxai_plugin) against the Go
// side it talks to: the layer shapes a Load carries (wire.LoadParams,
// nn.Arch.OutputShapes) are what the kit's shapes and Model give, for
// networks of layers and graph networks, through the protocol's bytes.
package python_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	gproto "google.golang.org/protobuf/proto"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/graphtest"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/sdk/internal/wire"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

var update = flag.Bool("update", false, "rewrite tests/testdata/archs.json from the Go architectures")

// archs are the architectures of the kit's tests (sdk/python/tests),
// defined here, where the shape rules are.
func archs(t *testing.T) []nn.Arch {
	t.Helper()
	toml := func(name string) graph.Spec {
		spec, err := graph.ReadSpecFile(filepath.Join(golden.RepoRoot(t), "recipes", "archs", name+".toml"))
		if err != nil {
			t.Fatal(err)
		}
		return spec
	}
	resnet := nn.GraphArch(toml("resnet1d"))
	// The golden graph networks of testdata/golden/archs, for the Captum
	// bridge's torch rebuild, and a graph of every op kind.
	ph3 := toml("resnet1d")
	ph3.Name, ph3.InChannels = "resnet1d-3ph", 3
	// The golden Transformer's spec, and every token op (with Go's
	// probabilities for the rebuild to match: entry.Check).
	tokens := graphtest.Transformer()
	tokens.Name = "token-ops"
	goldens := []nn.Arch{nn.GraphArch(toml("fcn")), nn.GraphArch(toml("inceptiontime")), nn.GraphArch(toml("stridednet")), nn.GraphArch(ph3), nn.GraphArch(graphtest.EveryOp()),
		nn.GraphArch(toml("transformer")), nn.GraphArch(tokens)}
	conv := func(name string, out, k int) nn.Layer {
		return nn.Layer{Kind: nn.KindConv1D, Name: name, Out: out, Kernel: k}
	}
	dense := func(name string, out int) nn.Layer { return nn.Layer{Kind: nn.KindDense, Name: name, Out: out} }
	relu, flat, gmp := nn.Layer{Kind: nn.KindReLU}, nn.Layer{Kind: nn.KindFlatten}, nn.Layer{Kind: nn.KindGlobalMaxPool}
	res := nn.GraphArch(graphtest.MidOutput())
	return append([]nn.Arch{
		nn.PaperArch(),
		nn.PaperArchDropout(0.5),
		// Every kind, a dense layer after a flatten of C x T > 1 and one
		// after a global max pool.
		{Name: "kinds", InChannels: 2, InLen: 9, Layers: []nn.Layer{
			conv("c", 3, 2), relu, {Kind: nn.KindMaxPool1D, Kernel: 3}, {Kind: nn.KindBatchNorm1D, Name: "bn"},
			{Kind: nn.KindDropout, P: 0.5}, flat, dense("d", 4), {Kind: nn.KindReLU, Name: "r"}, gmp, dense("out", 3)}},
		{Name: "tiny", InChannels: 1, InLen: 8, Layers: []nn.Layer{conv("conv1", 2, 3), gmp, flat, dense("fc", 3)}},
		{Name: "tiny2", InChannels: 2, InLen: 12, Layers: []nn.Layer{
			conv("conv1", 3, 3), relu, {Kind: nn.KindMaxPool1D, Kernel: 2}, {Kind: nn.KindBatchNorm1D, Name: "bn"},
			conv("conv2", 4, 3), relu, flat, {Kind: nn.KindDropout, P: 0.3}, dense("fc", 3)}},
		{Name: "lin", InChannels: 1, InLen: 5, Layers: []nn.Layer{flat, dense("fc", 4)}},
		resnet,
		res,
	}, goldens...)
}

// entry is one architecture of tests/testdata/archs.json: the arch as the
// host sends it (arch_json) and the layers of its Load (Params.layers).
type entry struct {
	Arch   json.RawMessage `json:"arch"`
	Layers []layer         `json:"layers"`
	Check  *check          `json:"check,omitempty"`
}

// check is, for the token-ops graph, what Go's engine computes, for the
// torch rebuild of the Captum bridge to match: its probabilities of 2
// inputs x under the parameters params (graphtest.RandomNet, seed 3).
type check struct {
	Params []float32 `json:"params"`
	X      []float32 `json:"x"`
	Probs  []float32 `json:"probs"`
}

type layer struct {
	Name     string `json:"name"`
	Channels int64  `json:"channels"`
	Length   int64  `json:"length"`
}

// TestArchsGolden: tests/testdata/archs.json, the architectures and layer
// shapes the kit's Python tests use, is what wire.LoadParams sends for
// them (go test ./sdk/python -update rewrites it); "kinds" has every
// layer kind; a network's shapes are its graph's nodes' up to the output
// (a network of layers: node i is layer i), the last the classes x 1.
func TestArchsGolden(t *testing.T) {
	var names []string
	out := map[string]entry{}
	for _, a := range archs(t) {
		e := loadEntry(t, a)
		if a.Name == "token-ops" {
			e.Check = engineCheck(t, a)
		}
		out[a.Name] = e
		names = append(names, a.Name)
		{
			net, err := a.GraphNet()
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range e.Layers {
				if s := net.NodeShape(i); l.Channels != int64(s.C) || l.Length != int64(s.T) || l.Name != net.Spec().Nodes[i].Name {
					t.Errorf("%s node %d: sent %+v, the net's %v (name %q)", a.Name, i, l, s, net.Spec().Nodes[i].Name)
				}
			}
			if e.Layers[len(e.Layers)-1].Name != net.Spec().Output {
				t.Errorf("%s: the last shape sent is node %q's, want the output %q's", a.Name, e.Layers[len(e.Layers)-1].Name, net.Spec().Output)
			}
		}
		if last := e.Layers[len(e.Layers)-1]; last.Channels != int64(a.Classes()) || last.Length != 1 {
			t.Errorf("%s: last shape %+v, want the %d classes x 1", a.Name, last, a.Classes())
		}
	}
	kinds := map[nn.LayerKind]bool{}
	for _, a := range archs(t) {
		if a.Name == "kinds" {
			for _, l := range a.Layers {
				kinds[l.Kind] = true
			}
		}
	}
	for _, k := range nn.LayerKinds() {
		if !kinds[k] {
			t.Errorf("arch \"kinds\" has no %s layer; it should have every kind", k)
		}
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	path := filepath.Join("tests", "testdata", "archs.json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./sdk/python -run TestArchsGolden -update writes it)", err)
	}
	if !bytes.Equal(old, b) {
		t.Errorf("%s is not what wire.LoadParams sends for %s: rewrite it with go test ./sdk/python -run TestArchsGolden -update", path, strings.Join(names, ", "))
	}
}

// engineCheck is Go's probabilities of a's graph for two inputs of
// sines under random parameters.
func engineCheck(t *testing.T, a nn.Arch) *check {
	t.Helper()
	net := graphtest.RandomNet(t, *a.Graph, 3)
	n := net.InShape().Size()
	c := &check{Params: net.Theta, X: make([]float32, 2*n), Probs: make([]float32, 2*net.Classes())}
	for i := range c.X {
		c.X[i] = float32(math.Sin(0.37*float64(i)) + 0.1*float64(i%5))
	}
	if err := net.Forward(c.Probs, c.X); err != nil {
		t.Fatal(err)
	}
	return c
}

// loadEntry is the Load's Params of a (zero parameters) as an entry.
func loadEntry(t *testing.T, a nn.Arch) entry {
	t.Helper()
	m, err := wire.LoadParams(nn.Params{Arch: a})
	if err != nil {
		t.Fatalf("%s: %v", a.Name, err)
	}
	e := entry{Arch: m.GetArchJson()}
	for _, l := range m.GetLayers() {
		e.Layers = append(e.Layers, layer{l.GetName(), l.GetChannels(), l.GetLength()})
	}
	return e
}

// kitScript reads the Params messages named on its command line (the
// protocol's bytes), builds the kit's Model of each (Model.from_wire) and
// prints, per file, the kit's shapes of the model's arch, its classes and
// input length, or the kit's error.
const kitScript = `
import json, sys
sys.path.insert(0, sys.argv[1])
import uaxai_plugin as kit
from uaxai_plugin._pb import plugin_pb2
out = {}
for path in sys.argv[2:]:
    with open(path, "rb") as f:
        m = plugin_pb2.Params.FromString(f.read())
    try:
        model = kit.Model.from_wire(m)
        out[path] = {"shapes": kit.shapes(model.arch), "classes": model.classes, "input_len": model.input_len}
    except ValueError as e:
        out[path] = {"error": "%s: %s" % (type(e).__name__, e)}
print(json.dumps(out))
`

// TestKitShapes: the kit's shapes of a draw the host loads into a Python
// explainer are nn.Arch.OutputShapes's, its classes and input length
// Arch.Classes and in_channels x in_len, for the paper's network, a
// network with every kind of layer and graph networks (resnet1d of
// recipes/archs, a graph whose output is not its last node), through the
// protocol's bytes; Params without the layers' shapes (a host without
// them) are refused, naming what is missing.
func TestKitShapes(t *testing.T) {
	pythontest.Need(t)
	dir := t.TempDir()
	args := []string{"-c", kitScript, "."}
	byPath := map[string]nn.Arch{}
	for _, a := range archs(t) {
		lay, err := nn.NewLayout(a)
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.LoadParams(nn.Params{Arch: a, Data: make([]float32, lay.Size)})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, a.Name+".bin")
		writeMessage(t, path, m)
		args = append(args, path)
		byPath[path] = a
	}
	bare, err := wire.Params(nn.Params{Arch: nn.PaperArch()})
	if err != nil {
		t.Fatal(err)
	}
	noLayers := filepath.Join(dir, "no-layers.bin")
	writeMessage(t, noLayers, bare)
	args = append(args, noLayers)

	cmd := exec.Command(pythontest.Python, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var got map[string]struct {
		Shapes   [][2]int `json:"shapes"`
		Classes  int      `json:"classes"`
		InputLen int      `json:"input_len"`
		Error    string   `json:"error"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	for path, a := range byPath {
		g := got[path]
		if g.Error != "" {
			t.Errorf("%s: %s", a.Name, g.Error)
			continue
		}
		want, err := a.OutputShapes()
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Shapes) != len(want) {
			t.Errorf("%s: the kit gives %d shapes, Go %d", a.Name, len(g.Shapes), len(want))
			continue
		}
		for i, w := range want {
			if g.Shapes[i] != [2]int{w.C, w.T} {
				t.Errorf("%s entry %d (%q): the kit gives %v, Go %d x %d", a.Name, i, w.Name, g.Shapes[i], w.C, w.T)
			}
		}
		if g.Classes != a.Classes() || g.InputLen != a.InChannels*a.InLen {
			t.Errorf("%s: the kit's classes %d and input_len %d, want %d and %d", a.Name, g.Classes, g.InputLen, a.Classes(), a.InChannels*a.InLen)
		}
	}
	if e := got[noLayers].Error; !strings.Contains(e, "WireError") || !strings.Contains(e, "Params.layers") {
		t.Errorf("Params without layers: %q, want a WireError naming Params.layers", e)
	}
}

func writeMessage(t *testing.T, path string, m gproto.Message) {
	t.Helper()
	b, err := gproto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
