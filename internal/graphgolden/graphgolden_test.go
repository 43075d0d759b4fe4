// Package graphgolden checks the native graph networks end to end:
// each convolutional network of testdata/golden/archs, built by the op
// table (sdk/nn/graph) from its TOML spec (recipes/archs) and
// state_dict, or from its ONNX export alone (sdk/onnx), is an nn.Model
// (nn.GraphModel) on which Go's explainers run; their maps are compared
// with the files PyTorch and Captum wrote.
package graphgolden

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/plugins/explainer/gradcam"
	"github.com/uaxai/uaxai/plugins/explainer/occlusion"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/onnx"
)

// fromTOML builds a golden network from recipes/archs and its
// model.safetensors.
func fromTOML(t *testing.T, a golden.TorchArch) *nn.GraphModel {
	t.Helper()
	file := a.Name
	if a.Name == "resnet1d-3ph" {
		file = "resnet1d"
	}
	spec, err := graph.ReadSpecFile(filepath.Join(golden.RepoRoot(t), "recipes", "archs", file+".toml"))
	if err != nil {
		t.Fatal(err)
	}
	spec.InChannels = a.Cin
	net, err := graph.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := net.LoadSafetensors(golden.File(t, "archs", a.Name+"/model.safetensors")); err != nil {
		t.Fatal(err)
	}
	return nn.NewGraphModel(net)
}

// fromONNX builds a golden network from its model.onnx alone.
func fromONNX(t *testing.T, a golden.TorchArch) *nn.GraphModel {
	t.Helper()
	net, err := onnx.LoadNet(golden.File(t, "archs", a.Name+"/model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	return nn.NewGraphModel(net)
}

// TestGoldenExplainers: on each of the five convolutional networks, from
// TOML and from ONNX, Go's occlusion (window 60, stride 20, baseline 0,
// one channel at a time: Captum's sliding_window_shapes = (1, 60)) and
// the input gradients equal PyTorch's files within 1e-4 of each map's
// largest |value|; from TOML, raw Grad-CAM on the README's layer
// (align = "none") equals Captum's LayerGradCam too (the ONNX export
// folds BatchNorms into convolutions, so a convolution's own output is
// not a value of its graph). With -short only FCN and StridedNet run.
func TestGoldenExplainers(t *testing.T) {
	ctx := context.Background()
	for _, a := range golden.TorchArchs {
		if a.Name == "lstm" {
			continue // not a graph of these ops
		}
		wf := golden.CSV32(t, golden.File(t, "archs", a.Name+"/waveforms.csv"))
		tg := golden.CSV32(t, golden.File(t, "archs", a.Name+"/targets.csv"))
		x := golden.Flat(wf)
		targets := make([]int, len(tg))
		for i, r := range tg {
			targets[i] = int(r[0])
		}
		for _, route := range []string{"toml", "onnx"} {
			t.Run(a.Name+"/"+route, func(t *testing.T) {
				if testing.Short() && a.Name != "fcn" && a.Name != "stridednet" {
					t.Skip("-short: FCN and StridedNet only (the ResNets and InceptionTime take seconds each on the plain Go kernels)")
				}
				m := fromTOML
				if route == "onnx" {
					m = fromONNX
				}
				model := m(t, a)
				req := sdk.ExplainRequest{X: x, Targets: targets, Config: sdk.Config{"window": int64(60), "stride": int64(20), "baseline": 0.0, "channels": "each"}}
				occ, err := occlusion.New().Explain(ctx, model, req)
				if err != nil {
					t.Fatal(err)
				}
				golden.RowsClose(t, "occlusion", occ, golden.CSV32(t, golden.File(t, "archs", a.Name+"/occlusion.csv")), 1e-4)
				// The maps came by the receptive-field path, which equals
				// full forward passes of the occluded copies bit for bit
				// when they run every node (PlainProbs, the model with
				// its own paths hidden), and within the float32 rounding
				// of the probabilities when they run the folded pass
				// (Probs, graph.Net.FoldEval: about 1e-7 apart, 3e-5 of
				// FCN's largest map value).
				if p := model.Path(); p.Incremental == 0 || p.Fraction() >= 1 {
					t.Errorf("occlusion took %v; want the receptive-field recomputation", p)
				}
				plain, err := occlusion.New().Explain(ctx, struct{ nn.Model }{model}, req)
				if err != nil {
					t.Fatal(err)
				}
				golden.RowsClose(t, "occlusion by folded forward passes", occ, plain, 1e-4)
				unfolded, err := occlusion.New().Explain(ctx, plainPasses{model}, req)
				if err != nil {
					t.Fatal(err)
				}
				golden.RowsClose(t, "occlusion by forward passes", occ, unfolded, 0)
				g := make([]float32, len(x))
				if err := model.InputGrad(ctx, g, nil, x, targets); err != nil {
					t.Fatal(err)
				}
				n := model.InputLen()
				rows := make([][]float64, len(targets))
				for i := range rows {
					for _, v := range g[i*n : (i+1)*n] {
						rows[i] = append(rows[i], float64(v))
					}
				}
				wantGrad := golden.CSV32(t, golden.File(t, "archs", a.Name+"/input_grad.csv"))
				if a.Name == "inceptiontime" {
					// Input 3 has a ReLU input within 1e-6 of zero (inc3.bn
					// channel 28, step 542) whose sign float32 rounding
					// decides: PyTorch's is negative, ours positive, which
					// moves the gradient near step 540 by 0.7% of the map's
					// scale. sdk/nn/graph's TestGoldenArchs checks that row
					// with the ReLU taken as off; here it is left out.
					rows, wantGrad = slices.Delete(rows, 3, 4), slices.Delete(wantGrad, 3, 4)
				}
				golden.RowsClose(t, "input gradient", rows, wantGrad, 1e-4)
				if route == "onnx" {
					return
				}
				req.Config = sdk.Config{"layer": a.Layer, "align": "none"}
				cam, err := gradcam.New().Explain(ctx, model, req)
				if err != nil {
					t.Fatal(err)
				}
				want := golden.CSV32(t, golden.File(t, "archs", a.Name+"/gradcam_raw.csv"))
				for i := range cam {
					cam[i] = cam[i][:len(want[i])] // channel 0's row: the time map
				}
				golden.RowsClose(t, "gradcam", cam, want, 1e-4)
			})
		}
	}
}

// TestModelConcurrent: a nn.GraphModel answers calls from many goroutines
// at once with what one caller gets alone, bit for bit.
func TestModelConcurrent(t *testing.T) {
	a := golden.TorchArchs[1] // resnet1d
	model := fromTOML(t, a)
	x := golden.Flat(golden.CSV32(t, golden.File(t, "archs", a.Name+"/waveforms.csv")))
	want := make([]float32, len(x)/model.InputLen()*model.Classes())
	if err := model.Probs(context.Background(), want, x); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([][]float32, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = make([]float32, len(want))
			if err := model.Probs(context.Background(), got[i], x); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, g := range got {
		if !slices.Equal(g, want) {
			t.Errorf("goroutine %d: probabilities differ from a lone call", i)
		}
	}
}

// plainPasses is a graph model whose Probs runs every node (PlainProbs)
// and whose incremental paths are hidden.
type plainPasses struct{ m *nn.GraphModel }

func (p plainPasses) Arch() nn.Arch { return p.m.Arch() }
func (p plainPasses) InputLen() int { return p.m.InputLen() }
func (p plainPasses) Classes() int  { return p.m.Classes() }
func (p plainPasses) Probs(ctx context.Context, dst, x []float32) error {
	return p.m.PlainProbs(ctx, dst, x)
}
func (p plainPasses) InputGrad(ctx context.Context, dst, probs, x []float32, target []int) error {
	return p.m.InputGrad(ctx, dst, probs, x, target)
}
func (p plainPasses) LayerShape(ctx context.Context, layer string) (nn.Shape, error) {
	return p.m.LayerShape(ctx, layer)
}
func (p plainPasses) LayerGrad(ctx context.Context, act, grad, x []float32, target []int, layer string) error {
	return p.m.LayerGrad(ctx, act, grad, x, target, layer)
}
