package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/torchserver"
	"github.com/uaxai/uaxai/internal/golden"
)

// TestModelSourceOf: --model's argument names one case by its extension
// (in any case), and each case says whether the host computes it.
func TestModelSourceOf(t *testing.T) {
	for _, c := range []struct {
		arg    string
		want   ModelSource
		native bool
	}{
		{"net.onnx", ONNXFile{Path: "net.onnx"}, true},
		{"dir/Net.ONNX", ONNXFile{Path: "dir/Net.ONNX"}, true},
		{"recipes/archs/fcn.toml", GraphSpec{Path: "recipes/archs/fcn.toml"}, true},
		{"archs.py:FCN", TorchModule{torchserver.Model{Module: "archs.py:FCN"}}, false},
		{"onnx.py:Net", TorchModule{torchserver.Model{Module: "onnx.py:Net"}}, false},
	} {
		got := ModelSourceOf(c.arg)
		if gs, ok := got.(TorchModule); ok {
			if w, ok := c.want.(TorchModule); !ok || gs.Module != w.Module {
				t.Errorf("%s: %#v, want %#v", c.arg, got, c.want)
			}
		} else if got != c.want {
			t.Errorf("%s: %#v, want %#v", c.arg, got, c.want)
		}
		if got.String() != c.arg || got.Native() != c.native || native(got) != c.native {
			t.Errorf("%s: String %q, Native %v; want %q, %v", c.arg, got.String(), got.Native(), c.arg, c.native)
		}
	}
	if native(nil) {
		t.Error("no --model is native")
	}
}

// TestModelSourceWeights: an ONNX file refuses --weights and a spec wants
// them, each naming the file and what is accepted, before any network is
// built; with the right weights both serve one draw a network, named by
// its file, and release the service on Close.
func TestModelSourceWeights(t *testing.T) {
	root := golden.Dir(t, "archs")
	onnxPath := filepath.Join(root, "fcn", "model.onnx")
	specPath := filepath.Join("..", "..", "recipes", "archs", "fcn.toml")
	w := filepath.Join(root, "fcn", "model.safetensors")
	in := inputs{n: 1, c: 1, t: 640, x: make([]float32, 640), bounds: recipe.DefaultSizeBounds()}
	ctx := context.Background()
	for _, c := range []struct {
		src     ModelSource
		weights []string
		want    string
	}{
		{ONNXFile{Path: onnxPath}, []string{w}, "--model " + onnxPath + ": an ONNX file holds its weights (accepted: no --weights with an .onnx model)"},
		{GraphSpec{Path: specPath}, nil, "--model " + specPath + ": a graph spec holds no weights (accepted: --weights"},
	} {
		_, _, started, _, err := c.src.serve(ctx, c.weights, mcDropout{}, in, limits.Limits{})
		if err == nil || !strings.Contains(err.Error(), c.want) || started != nil {
			t.Errorf("%v with weights %v: %v (closer %v), want %q and nothing to close", c.src, c.weights, err, started, c.want)
		}
	}
	for _, c := range []struct {
		src     ModelSource
		weights []string
		names   []string
	}{
		{ONNXFile{Path: onnxPath}, nil, []string{onnxPath}},
		{GraphSpec{Path: specPath}, []string{w, w}, []string{w, w}},
	} {
		refs, names, started, calls, err := c.src.serve(ctx, c.weights, mcDropout{}, in, limits.Limits{})
		if err != nil {
			t.Fatalf("%v: %v", c.src, err)
		}
		if len(refs) != len(c.names) || strings.Join(names, ",") != strings.Join(c.names, ",") || calls.Limit.Key != "limits.model_call" {
			t.Errorf("%v: %d draws named %v, limit %q; want %v and limits.model_call", c.src, len(refs), names, calls.Limit.Key, c.names)
		}
		k, err := servedShape(ctx, refs, names, 640, calls)
		if err != nil || k < 2 {
			t.Errorf("%v: served draws of %d classes, %v", c.src, k, err)
		}
		if err := started.Close(); err != nil {
			t.Error(err)
		}
	}
	// A spec's draw that does not load names the draw among several.
	_, _, _, _, err := GraphSpec{Path: specPath}.serve(ctx, []string{w, filepath.Join(t.TempDir(), "none.safetensors")}, mcDropout{}, in, limits.Limits{})
	if err == nil || !strings.Contains(err.Error(), "draw 1: weights ") || !strings.Contains(err.Error(), "none.safetensors") {
		t.Errorf("a missing weights file of draw 1: %v", err)
	}
}
