package files

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/onnx"
)

// TestGraphMembers: members of a graph architecture read from an ONNX
// file (the golden FCN's export: its graph is the architecture) and from
// the same network's state_dict under its TOML spec give PyTorch's golden
// probabilities (within 1e-5); an ONNX file of another graph is refused
// at the first node that differs, and an ONNX file for a network of
// layers is refused with what is accepted.
func TestGraphMembers(t *testing.T) {
	onnxFile := golden.File(t, "archs", "fcn/model.onnx")
	spec, _, err := onnx.LoadSpec(onnxFile)
	if err != nil {
		t.Fatal(err)
	}
	fromONNX := nn.GraphArch(spec)
	toml, err := graph.ReadSpecFile(filepath.Join(golden.RepoRoot(t), "recipes", "archs", "fcn.toml"))
	if err != nil {
		t.Fatal(err)
	}
	fromTOML := nn.GraphArch(toml)
	wf := golden.CSV32(t, golden.File(t, "archs", "fcn/waveforms.csv"))
	want := golden.CSV32(t, golden.File(t, "archs", "fcn/probs.csv"))
	x := golden.Flat(wf)
	for _, c := range []struct {
		arch nn.Arch
		file string
	}{{fromONNX, onnxFile}, {fromTOML, golden.File(t, "archs", "fcn/model.safetensors")}} {
		req := sdk.FitRequest{Arch: c.arch, Config: sdk.Config{KeyFiles: []any{c.file, c.file}}}
		a, err := New().Fit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		draws, err := New().Sample(context.Background(), a, sdk.SampleRequest{Config: req.Config, Seeds: []uint64{0, 1}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := nn.Open(draws[1])
		if err != nil {
			t.Fatal(err)
		}
		K := m.Classes()
		got := make([]float32, len(wf)*K)
		if err := m.Probs(context.Background(), got, x); err != nil {
			t.Fatal(err)
		}
		for i, row := range want {
			for k, p := range row {
				if math.Abs(float64(got[i*K+k]-p)) > 1e-5 {
					t.Fatalf("%s: input %d class %d: probability %g, PyTorch's %g", filepath.Base(c.file), i, k, got[i*K+k], p)
				}
			}
		}
	}
	other, _, err := onnx.LoadSpec(golden.File(t, "archs", "stridednet/model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Read(onnxFile, nn.GraphArch(other))
	if err == nil || !strings.Contains(err.Error(), "differs from the run's architecture") || !strings.Contains(err.Error(), "model.onnx") {
		t.Errorf("another graph's ONNX file: %v", err)
	}
	_, _, err = Read(onnxFile, nn.PaperArch())
	if err == nil || !strings.Contains(err.Error(), `its graph differs from the run's architecture "paper-1dcnn" at node 0`) {
		t.Errorf("ONNX file for a network of layers: %v", err)
	}
}
