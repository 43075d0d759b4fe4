package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pyinterp"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/sdk"
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
// (StartTorchServer, one server a network, reused), explained by Go's
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
			srv, err := StartTorchServer(ctx, TorchModel{Module: filepath.Join(root, "archs.py") + ":" + a.class, Args: a.args}, weights, a.cin, 640)
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
		})
	}
}

// TestTorchServerErrors: a model server that does not start says why, in
// terms of what the user gave: a module that does not import (its
// traceback's last line), a class that needs arguments (the argument,
// and --model-args), a weights file that does not fit (PyTorch's
// mismatch), an interpreter without torch (what to install). Each is a
// server start (about 2 s: torch's import).
func TestTorchServerErrors(t *testing.T) {
	pythontest.Need(t, "torch")
	root := golden.Dir(t, "archs")
	w := []string{filepath.Join(root, "fcn", "model.safetensors")}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.py", "import torch\nimport no_such_package_x\n\nclass Net(torch.nn.Module):\n    pass\n")
	needs := write("needs.py", "import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self, width):\n        super().__init__()\n        self.fc = torch.nn.Linear(640, width)\n\n    def forward(self, x):\n        return torch.softmax(self.fc(x.flatten(1)), 1)\n")
	// A python3 whose torch does not import (a torch.py first on its path).
	block := filepath.Join(dir, "block")
	if err := os.Mkdir(block, 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join("block", "torch.py"), "raise ImportError(\"No module named 'torch'\")\n")
	notorch := write("python3-notorch", "#!/bin/sh\nPYTHONPATH="+block+":$PYTHONPATH exec "+pythontest.Python+" \"$@\"\n")

	ctx := context.Background()
	for _, c := range []struct {
		name   string
		model  TorchModel
		env    string
		want   []string
		weight []string
	}{
		{name: "module does not import", model: TorchModel{Module: bad + ":Net"},
			want: []string{"exited with status 1 before serving", "No module named 'no_such_package_x'", "bad.py"}},
		{name: "class needs arguments", model: TorchModel{Module: needs + ":Net"},
			want: []string{"missing 1 required positional argument: 'width'", "--model-args"}},
		{name: "state_dict does not fit", model: TorchModel{Module: needs + ":Net", Args: map[string]any{"width": int64(16)}},
			want: []string{"model.safetensors", "Error(s) in loading state_dict for Net", "size mismatch for fc.weight", "does not fit the module"}},
		{name: "no torch", model: TorchModel{Module: filepath.Join(root, "archs.py") + ":FCN"}, env: notorch,
			want: []string{notorch + " lacks PyTorch", "apt-get install python3-torch", "$UAXAI_PYTHON"}},
		{name: "no such class", model: TorchModel{Module: filepath.Join(root, "archs.py") + ":Nope"},
			want: []string{"has no torch.nn.Module class 'Nope'", "FCN", "ResNet1D"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv(pyinterp.Env, c.env)
			}
			srv, err := StartTorchServer(ctx, c.model, w, 1, 640)
			if err == nil {
				srv.Close()
				t.Fatal("the server started")
			}
			for _, s := range c.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the error does not say %q:\n%v", s, err)
				}
			}
		})
	}
}

// TestTorchServerRefusals: what is refused before any process starts
// (no Python needed): no module, a module without a class, a file that
// does not exist, no weights, an output that is neither probs nor
// logits, arguments that are not JSON values; and no interpreter with
// the kit's modules, naming each one tried and what to install.
func TestTorchServerRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	py := filepath.Join(dir, "net.py")
	if err := os.WriteFile(py, []byte("import torch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := []string{py} // exists; never read in these cases
	for _, c := range []struct {
		m       TorchModel
		weights []string
		want    string
	}{
		{TorchModel{}, w, "no module (accepted: path/file.py:Class)"},
		{TorchModel{Module: py}, w, "want path/file.py:Class"},
		{TorchModel{Module: py + ":"}, w, "want path/file.py:Class"},
		{TorchModel{Module: filepath.Join(dir, "nope.py") + ":Net"}, w, "nope.py"},
		{TorchModel{Module: py + ":Net"}, nil, "no weights file"},
		{TorchModel{Module: py + ":Net"}, []string{filepath.Join(dir, "none.safetensors")}, "none.safetensors"},
		{TorchModel{Module: py + ":Net", Output: "softmax"}, w, "want probs"},
		{TorchModel{Module: py + ":Net", Args: map[string]any{"x": math.NaN()}}, w, "--model-args"},
	} {
		_, err := StartTorchServer(ctx, c.m, c.weights, 1, 640)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %v: %v, want an error saying %q", c.m, c.weights, err, c.want)
		}
	}

	// No interpreter: every candidate is missing.
	t.Setenv(pyinterp.Env, filepath.Join(dir, "no-python"))
	defer pyinterp.SetDefaults([]string{filepath.Join(dir, "no-python3")})()
	kit, err := filepath.Abs(filepath.Join("..", "..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = StartTorchServer(ctx, TorchModel{Module: py + ":Net", Kit: kit}, w, 1, 640)
	var ne *pyinterp.NoInterpreterError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), "no-python3") || !strings.Contains(err.Error(), pyinterp.Apt) || !strings.Contains(err.Error(), "python3-torch") {
		t.Errorf("no interpreter: %v, want a NoInterpreterError naming each candidate, %s and python3-torch", err, pyinterp.Apt)
	}
}

// TestFindPythonKit: the kit is found on PYTHONPATH first, else above
// the working directory (the repository's sdk/python); a PYTHONPATH entry
// without the kit is passed over.
func TestFindPythonKit(t *testing.T) {
	other := t.TempDir()
	alt := filepath.Join(t.TempDir(), "kit")
	if err := os.MkdirAll(filepath.Join(alt, "uaxai_plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(alt, pythonKitFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", other+string(filepath.ListSeparator)+alt)
	if got, err := FindPythonKit(); err != nil || got != alt {
		t.Errorf("with %s on PYTHONPATH: %q, %v", alt, got, err)
	}
	t.Setenv("PYTHONPATH", other)
	want, err := filepath.Abs(filepath.Join("..", "..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := FindPythonKit(); err != nil || got != want {
		t.Errorf("from %s: %q, %v; want %s", strconv.Quote("host/runner"), got, err, want)
	}
}
