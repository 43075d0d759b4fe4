package paper

import (
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk/nn"
)

// Model returns the golden paper-1dcnn parameters, its 16 waveforms (flat,
// 640 samples each) and their labels, and the golden folder.
func Model(t testing.TB) (p nn.Params, x []float32, y []int, dir string) {
	t.Helper()
	dir = golden.Dir(t, "paper-1dcnn")
	p, err := nn.LoadParams(filepath.Join(dir, "model.safetensors"), nn.PaperArch())
	if err != nil {
		t.Fatal(err)
	}
	x, y = golden.Inputs(t, dir)
	return p, x, y, dir
}

// Inference is Model's network built for inference (nn.NewModel).
func Inference(t testing.TB) (m *nn.GraphModel, x []float32, y []int, dir string) {
	t.Helper()
	p, x, y, dir := Model(t)
	m, err := nn.NewModel(p)
	if err != nil {
		t.Fatal(err)
	}
	return m, x, y, dir
}
