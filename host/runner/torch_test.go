package runner

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/torchserver"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// The networks of testdata/golden/archs (its README): folder, class in
// archs.py, its constructor arguments, input channels, the README's
// Grad-CAM layer.
var torchArchs = []struct {
	name, class string
	args        map[string]any
	cin         int
	layer       string
}{
	{"fcn", "FCN", nil, 1, "conv3"},
	{"resnet1d", "ResNet1D", nil, 1, "block3"},
	{"inceptiontime", "InceptionTime", nil, 1, "inc3"},
	{"stridednet", "StridedNet", nil, 1, "conv3"},
	{"resnet1d-3ph", "ResNet1D", map[string]any{"cin": int64(3)}, 3, "block3"},
	{"lstm", "LSTMNet", nil, 1, "lstm"},
}

// readGoldenCSV reads a golden CSV of float rows.
func readGoldenCSV(t *testing.T, path string) [][]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]float64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		rows = append(rows, floats(t, strings.Split(line, ",")))
	}
	return rows
}

// TestTorchModelGolden: a PyTorch model served by the kit's model server
// (torchserver.Start, one server a network, reused), explained by Go's
// occlusion (window 60, stride 20, baseline 0, one channel at a time)
// and Grad-CAM (the README's layer, align none) through Explain, and
// predicted by Predict, reproduces the files PyTorch and Captum wrote for
// three networks of testdata/golden/archs (three channels, an LSTM, a
// Grad-CAM layer shorter than the input; cmd/uaxai's test runs all six
// through the command line): the maps within 1e-4 of each
// map's largest |value| (Grad-CAM's map is the layer's L positions then
// zeros to the input's T, the same row for every channel), the
// probabilities within 1e-5. On the three-channel network the Python
// explainer python-occlusion gives Go's occlusion map (its calls go to the
// same server). Grad-CAM with the centre alignment is refused, naming
// align = "none".
func TestTorchModelGolden(t *testing.T) {
	pythontest.Need(t, "torch")
	root := golden.Dir(t, "archs")
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	m := plugin.NewManager(reg, plugin.Options{InProcess: true, Dirs: []string{filepath.Join("..", "..", "plugins", "explainer", "python-occlusion")}})
	t.Cleanup(m.Close)
	ctx := context.Background()
	for _, a := range torchArchs {
		t.Run(a.name, func(t *testing.T) {
			if a.name != "resnet1d-3ph" && a.name != "lstm" && a.name != "stridednet" {
				t.Skip("cmd/uaxai's TestExplainTorchModel checks it")
			}
			dir := filepath.Join(root, a.name)
			weights := []string{filepath.Join(dir, "model.safetensors")}
			srv, err := torchserver.Start(ctx, torchserver.Model{Module: filepath.Join(root, "archs.py") + ":" + a.class, Args: a.args}, weights, a.cin, 640)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := srv.Close(); err != nil {
					t.Error(err)
				}
			}()
			explain := func(explainer string, cfg sdk.Config) ([][]float64, error) {
				opt := ExplainOptions{Plugins: m, Served: srv, Input: filepath.Join(dir, "waveforms.csv"), Channels: a.cin,
					Explainer: explainer, Config: cfg, Target: filepath.Join(dir, "targets.csv")}
				var b bytes.Buffer
				if err := Explain(ctx, opt, &b); err != nil {
					return nil, err
				}
				_, rows := csvRows(t, b.String())
				out := make([][]float64, len(rows))
				for i, r := range rows {
					out[i] = floats(t, r)
				}
				return out, nil
			}
			occ, err := explain("occlusion", sdk.Config{"window": int64(60), "stride": int64(20), "baseline": 0.0})
			if err != nil {
				t.Fatal(err)
			}
			golden.RowsClose(t, "occlusion", occ, readGoldenCSV(t, filepath.Join(dir, "occlusion.csv")), 1e-4)
			if a.cin == 3 {
				py, err := explain("python-occlusion", sdk.Config{"window": int64(60), "stride": int64(20), "baseline": 0.0})
				if err != nil {
					t.Fatal(err)
				}
				golden.RowsClose(t, "python-occlusion", py, occ, 1e-5)
			}

			cam, err := explain("gradcam", sdk.Config{"layer": a.layer, "align": "none"})
			if err != nil {
				t.Fatal(err)
			}
			want := readGoldenCSV(t, filepath.Join(dir, "gradcam_raw.csv"))
			L := len(want[0])
			for i, row := range cam {
				if len(row) != a.cin*640 {
					t.Fatalf("gradcam: map %d has %d values, want %d x 640", i, len(row), a.cin)
				}
				for ch := range a.cin {
					r := row[ch*640 : (ch+1)*640]
					for j := L; j < 640; j++ {
						if r[j] != 0 {
							t.Fatalf("gradcam: map %d channel %d: sample %d past the layer's %d positions is %v, want 0", i, ch, j, L, r[j])
						}
					}
					golden.RowsClose(t, fmt.Sprintf("gradcam channel %d", ch), [][]float64{r[:L]}, want[i:i+1], 1e-4)
				}
			}
			if _, err := explain("gradcam", sdk.Config{"layer": a.layer}); err == nil || !strings.Contains(err.Error(), `accepted: align = "none"`) {
				t.Errorf("gradcam with the centre alignment: %v, want an error naming align = \"none\"", err)
			}

			pred, err := Predict(ctx, PredictOptions{Served: srv, Input: filepath.Join(dir, "waveforms.csv"), Channels: a.cin})
			if err != nil {
				t.Fatal(err)
			}
			got := make([][]float64, len(pred.Probs))
			for i, row := range pred.Probs {
				for _, v := range row {
					got[i] = append(got[i], float64(v))
				}
			}
			wantP := readGoldenCSV(t, filepath.Join(dir, "probs.csv"))
			golden.RowsClose(t, "predict", got, wantP, 1e-5)
			for i, row := range wantP {
				best := 0
				for c, v := range row {
					if v > row[best] {
						best = c
					}
				}
				if pred.Predicted[i] != best {
					t.Errorf("predict: input %d predicted %d, PyTorch's argmax is %d", i, pred.Predicted[i], best)
				}
			}
			if a.name != "lstm" { // the ONNX import has no recurrent op
				checkServedFeatures(t, srv, filepath.Join(dir, "model.onnx"), filepath.Join(dir, "waveforms.csv"), a.cin)
			}
		})
	}
}

// checkServedFeatures: the served module's penultimate features (its
// last linear layer's input, through the service's Layer call) equal the
// same network's from its ONNX export, computed by the Go graph (another
// implementation), within 1e-5 of the largest.
func checkServedFeatures(t *testing.T, srv *torchserver.Server, onnxPath, wave string, C int) {
	t.Helper()
	ctx := t.Context()
	in, err := readInputs(wave, C, recipe.SizeBounds{})
	if err != nil {
		t.Fatal(err)
	}
	net, err := ONNXFile{Path: onnxPath}.net(in)
	if err != nil {
		t.Fatal(err)
	}
	gm := nn.NewGraphModel(net)
	D, err := gm.FeatureLen()
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, in.n*D)
	if err := gm.Features(ctx, want, in.x); err != nil {
		t.Fatal(err)
	}
	refs := srv.Draws()
	m, err := driver.OpenDraw(ctx, sdk.Draw{Served: &refs[0]}, srv.ModelCalls(sdk.CallLimit{}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := make([]float32, in.n*D)
	err = m.Call(ctx, func(nm nn.Model) error {
		f, ok := nm.(nn.Featurer)
		if !ok {
			return fmt.Errorf("the served model (%T) is no nn.Featurer", nm)
		}
		d, err := f.FeatureLen()
		if err != nil || d != D {
			return fmt.Errorf("the service gives %d features (%v); the graph %d", d, err, D)
		}
		return f.Features(ctx, got, in.x)
	})
	if err != nil {
		t.Fatal(err)
	}
	var top, diff float64
	for i := range want {
		top = math.Max(top, math.Abs(float64(want[i])))
		diff = math.Max(diff, math.Abs(float64(got[i]-want[i])))
	}
	if !(top > 0) || diff > 1e-5*top {
		t.Errorf("features: the service's and the ONNX graph's differ by %.3g of the largest %.3g", diff/top, top)
	}
}
