package recipe

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/onnx"
)

// TestGraphModel: [model] graph reads a spec file relative to the
// recipe's folder and [model] onnx an ONNX file's graph; either takes the
// data's shape and classes as a built-in does (the output linear's out
// becomes the data's 16 classes), keeps the spec's nodes otherwise, and
// the canonical form (the file's absolute path) parses to the same
// recipe.
func TestGraphModel(t *testing.T) {
	root := golden.RepoRoot(t)
	dir := filepath.Join(root, "recipes")
	for _, c := range []struct{ key, file string }{
		{"graph", "archs/stridednet.toml"},
		{"onnx", filepath.Join(root, "testdata", "golden", "archs", "fcn", "model.onnx")},
	} {
		text := minimal + "[model]\n" + c.key + " = \"" + c.file + "\"\n"
		r, err := Parse("graph.toml", []byte(text), dir)
		if err != nil {
			t.Fatalf("%s: %v", c.key, err)
		}
		a, err := r.Arch()
		if err != nil {
			t.Fatal(err)
		}
		var spec graph.Spec
		if c.key == "graph" {
			spec, err = graph.ReadSpecFile(filepath.Join(dir, c.file))
		} else {
			spec, _, err = onnx.LoadSpec(c.file)
		}
		if err != nil {
			t.Fatal(err)
		}
		want, err := nn.GraphArch(spec).Reshaped(1, 640, 16)
		if err != nil {
			t.Fatal(err)
		}
		if a.Graph == nil || !a.Same(want) || a.Classes() != 16 || a.InLen != 640 {
			t.Errorf("%s: arch %q of %d classes on %d samples, want the file's graph reshaped to 16 classes on 640", c.key, a.Name, a.Classes(), a.InLen)
		}
		checkCanonical(t, r, dir)
	}
}

// TestGraphModelErrors: each misuse of [model] graph or onnx is an error
// at its line naming what is accepted.
func TestGraphModelErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("name = \"bad\"\nin_channels = 1\nin_len = 64\n[[nodes]]\nname = \"a\"\nop = \"conv1d\"\nout = 4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(golden.RepoRoot(t), "recipes", "archs", "fcn.toml")
	for _, c := range []struct {
		model, marker string
		fragments     []string
	}{
		{"graph = \"" + spec + "\"\narch = \"x\"\n", "arch =", []string{"does not go with [model] graph"}},
		{"graph = \"" + spec + "\"\ntorch = \"m.py:M\"\n", "torch =", []string{"does not go with [model] graph"}},
		{"graph = \"" + spec + "\"\nonnx = \"m.onnx\"\n", "onnx =", []string{"[model] graph both give the architecture"}},
		{"graph = \"missing.toml\"\n", "graph =", []string{"missing.toml"}},
		{"graph = \"bad.toml\"\n", "graph =", []string{"bad.toml", "kernel"}},
		{"onnx = \"" + spec + "\"\n", "onnx =", []string{"fcn.toml"}},
		{"graph = \"\"\n", "graph =", []string{"accepted: a path relative to the recipe's folder"}},
		{"graph = \"" + spec + "\"\nclasses = 0\n", "classes =", []string{"accepted: 1.."}},
	} {
		text := minimal + "[model]\n" + c.model
		_, err := Parse("graph.toml", []byte(text), dir)
		wantErr(t, err, lineOf(t, text, c.marker), c.fragments...)
	}
}

// TestInlineGraph: [[model.nodes]] write a graph of ops in the recipe
// (each node as a spec file's [[nodes]]): the same architecture as the
// same nodes in a file, taking the data's classes; the canonical form
// writes the nodes back and parses to the same recipe; a node the op
// table refuses is an error at its [[model.nodes]] line.
func TestInlineGraph(t *testing.T) {
	nodes := `[[model.nodes]]
name = "conv1"
op = "conv1d"
out = 4
kernel = 5
padding = [2, 2]

[[model.nodes]]
name = "relu1"
op = "relu"

[[model.nodes]]
name = "gap"
op = "globalavgpool"
inputs = ["relu1"]

[[model.nodes]]
name = "fc"
op = "linear"
out = 3
`
	text := minimal + "[model]\narch = \"tiny-graph\"\nin_channels = 1\nin_len = 640\n" + nodes
	dir := t.TempDir()
	r, err := Parse("inline.toml", []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Arch()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "tiny.toml")
	if err := os.WriteFile(file, []byte("name = \"tiny-graph\"\nin_channels = 1\nin_len = 640\n"+strings.ReplaceAll(nodes, "model.nodes", "nodes")), 0o600); err != nil {
		t.Fatal(err)
	}
	spec, err := graph.ReadSpecFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want, err := nn.GraphArch(spec).Reshaped(1, 640, 16)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Same(want) || a.Classes() != 16 {
		t.Errorf("inline arch %q of %d classes differs from the file's reshaped to 16 classes", a.Name, a.Classes())
	}
	checkCanonical(t, r, dir)
	bad := strings.Replace(text, "kernel = 5", "kernel = 5\nstrides = 2", 1)
	_, err = Parse("inline.toml", []byte(bad), dir)
	wantErr(t, err, lineOf(t, bad, "[[model.nodes]]"), `unknown attribute "strides" of op conv1d`, "accepted")
	missing := strings.Replace(text, "in_len = 640\n", "", 1)
	_, err = Parse("inline.toml", []byte(missing), dir)
	wantErr(t, err, 0, `needs key "in_len"`)
}
