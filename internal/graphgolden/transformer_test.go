package graphgolden

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/plugins/explainer/gradcam"
	"github.com/uaxai/uaxai/plugins/explainer/gradients"
	"github.com/uaxai/uaxai/plugins/explainer/occlusion"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/onnx"
)

// TestGoldenTransformer: a torch.nn.TransformerEncoder classifier
// (testdata/golden/transformer), imported from its ONNX export (the
// attention blocks, layer norms and GELU fused)
// and built from recipes/archs/transformer.toml with its state_dict, gives
// PyTorch's probabilities within 1e-5, and Go's occlusion (window 60,
// stride 20, baseline 0, each channel), input gradients, integrated
// gradients (50 Gauss-Legendre points) and raw Grad-CAM on the patch
// convolution equal Captum 0.8's within 1e-4 of each map's largest
// |value|; and, on the TOML route, Grad-CAM over the tokens of the
// patch's transpose and of the encoder's output (tokens x features: the
// time axis from the graph) equal Captum's patch map and PyTorch's
// autograd computation of the tokens' map.
func TestGoldenTransformer(t *testing.T) {
	ctx := context.Background()
	file := func(name string) string { return golden.File(t, "transformer", name) }
	x := golden.Flat(golden.CSV32(t, file("waveforms.csv")))
	var targets []int
	for _, r := range golden.CSV32(t, file("targets.csv")) {
		targets = append(targets, int(r[0]))
	}
	routes := map[string]func(t *testing.T) *graph.Net{
		"onnx": func(t *testing.T) *graph.Net {
			net, err := onnx.LoadNet(file("model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			return net
		},
		"toml": func(t *testing.T) *graph.Net {
			spec, err := graph.ReadSpecFile(filepath.Join(golden.RepoRoot(t), "recipes", "archs", "transformer.toml"))
			if err != nil {
				t.Fatal(err)
			}
			net, err := graph.Compile(spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := net.LoadSafetensors(file("model.safetensors")); err != nil {
				t.Fatal(err)
			}
			return net
		},
	}
	for _, route := range []string{"onnx", "toml"} {
		t.Run(route, func(t *testing.T) {
			net := routes[route](t)
			K := net.Classes()
			probs := make([]float32, len(targets)*K)
			if err := net.Forward(probs, x); err != nil {
				t.Fatal(err)
			}
			rows := make([][]float64, len(targets))
			for i := range rows {
				for _, v := range probs[i*K : (i+1)*K] {
					rows[i] = append(rows[i], float64(v))
				}
			}
			golden.RowsClose(t, "probabilities", rows, golden.CSV32(t, file("probs.csv")), 1e-5)
			model := nn.NewGraphModel(net)
			explain := func(e sdk.Explainer, cfg sdk.Config) [][]float64 {
				t.Helper()
				if err := e.Check(cfg); err != nil {
					t.Fatal(err)
				}
				m, err := e.Explain(ctx, model, sdk.ExplainRequest{X: x, Targets: targets, Config: cfg})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			golden.RowsClose(t, "occlusion", explain(occlusion.New(), sdk.Config{"window": int64(60), "stride": int64(20), "baseline": 0.0, "channels": "each"}), golden.CSV32(t, file("occlusion.csv")), 1e-4)
			golden.RowsClose(t, "input gradient", explain(gradients.NewSaliency(), sdk.Config{"abs": false}), golden.CSV32(t, file("input_grad.csv")), 1e-4)
			golden.RowsClose(t, "integrated gradients", explain(gradients.NewIntegratedGradients(), sdk.Config{"n_steps": int64(50)}), golden.CSV32(t, file("ig.csv")), 1e-4)
			cam := explain(gradcam.New(), sdk.Config{"layer": "patch", "align": "none"})
			want := golden.CSV32(t, file("gradcam_raw.csv"))
			for i := range cam {
				cam[i] = cam[i][:len(want[i])] // channel 0's row: the time map
			}
			golden.RowsClose(t, "gradcam", cam, want, 1e-4)
			if route == "toml" {
				// token layers: the transpose of the patch convolution
				// (tokens x features) gives Captum's patch map, and the
				// encoder's output the tokens' map autograd gives
				cam = explain(gradcam.New(), sdk.Config{"layer": "tokens", "align": "none"})
				for i := range cam {
					cam[i] = cam[i][:len(want[i])]
				}
				golden.RowsClose(t, "gradcam on the tokens", cam, want, 1e-4)
				cam = explain(gradcam.New(), sdk.Config{"layer": "enc.layers.1.norm2", "align": "none"})
				for i := range cam {
					cam[i] = cam[i][:len(want[i])]
				}
				golden.RowsClose(t, "gradcam on the encoder's output", cam, golden.CSV32(t, file("gradcam_tokens.csv")), 1e-4)
			}
			if p := model.Path(); p.Full == "" {
				t.Errorf("occlusion's path %+v computed no node in full: attention reads every token", p)
			}
		})
	}
}
