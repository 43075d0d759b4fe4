package builtin

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/onnx"
)

// TestEveryExplainerOnTransformer: every built-in explainer runs on the
// golden Transformer imported from its ONNX export (Grad-CAM on the
// encoder's output, a token layer): for 2 inputs of 3 x 640 it gives 2
// maps of 1920 finite values, not all zero, the same bytes when run
// again with the same seeds (the stochastic ones included).
func TestEveryExplainerOnTransformer(t *testing.T) {
	dir := golden.Dir(t, "transformer")
	net, err := onnx.LoadNet(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	m := nn.NewGraphModel(net)
	n := m.InputLen()
	x := golden.Flat(golden.CSV32(t, filepath.Join(dir, "waveforms.csv")))[:2*n]
	req := sdk.ExplainRequest{X: x, Targets: []int{0, 3}, Seeds: []uint64{11, 12}}
	ran := 0
	for _, mk := range Constructors() {
		e, ok := mk().(sdk.Explainer)
		if !ok {
			continue
		}
		id := e.Info().ID
		cfg := sdk.Config{}
		if id == "explainer.gradcam" {
			cfg = sdk.Config{"layer": "enc.layers.1.norm2"}
		}
		req.Config = cfg
		maps, err := e.Explain(context.Background(), m, req)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		again, err := e.Explain(context.Background(), m, req)
		if err != nil {
			t.Fatalf("%s again: %v", id, err)
		}
		if len(maps) != 2 {
			t.Fatalf("%s: %d maps for 2 inputs", id, len(maps))
		}
		for i, mp := range maps {
			nonzero := false
			if len(mp) != n {
				t.Fatalf("%s map %d: %d values, want %d", id, i, len(mp), n)
			}
			for j, v := range mp {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s map %d value %d: %v", id, i, j, v)
				}
				nonzero = nonzero || v != 0
				if again[i][j] != v {
					t.Fatalf("%s map %d value %d: %v, then %v with the same seeds", id, i, j, v, again[i][j])
				}
			}
			if !nonzero {
				t.Errorf("%s map %d: all zero", id, i)
			}
		}
		ran++
	}
	if ran < 8 {
		t.Errorf("%d explainers ran; the built-ins are occlusion, gradcam, lime and the gradient family's 5", ran)
	}
}
