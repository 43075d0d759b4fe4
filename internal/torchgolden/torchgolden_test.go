// Package torchgolden checks the model service across languages: the
// Python kit's server over PyTorch modules (sdk/python/uaxai_plugin,
// torchmodel.py) serves each network of testdata/golden/archs with its
// model.safetensors, and Go's explainers run on it through the sdk's
// client of the service (sdk.DialModel), as a Go explainer does on a
// PyTorch draw. Their maps are compared with the files PyTorch wrote.
package torchgolden

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/plugins/explainer/gradcam"
	"github.com/uaxai/uaxai/plugins/explainer/occlusion"
	"github.com/uaxai/uaxai/sdk"
)

const archsDir = "../../testdata/golden/archs"

// serve starts the Python model server on one network and returns its
// address and handle; the server ends when the test does (its standard
// input closes).
func serve(t testing.TB, name, class string, cin int) (string, uint64) {
	t.Helper()
	abs, err := filepath.Abs(archsDir)
	if err != nil {
		t.Fatal(err)
	}
	kit, err := filepath.Abs("../../sdk/python")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pythontest.Python, "-m", "uaxai_plugin.torchmodel",
		"--module", filepath.Join(abs, "archs.py")+":"+class, "--args", fmt.Sprintf(`{"cin": %d}`, cin),
		"--weights", filepath.Join(abs, name, "model.safetensors"), "--in-channels", strconv.Itoa(cin), "--in-len", "640", "--threads", "1")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+kit)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the model server of %s: %v", name, err)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the model server of %s printed no address: %v", name, err)
	}
	var hello struct {
		Address string   `json:"address"`
		Handles []string `json:"handles"`
	}
	if err := json.Unmarshal([]byte(line), &hello); err != nil || len(hello.Handles) != 1 {
		t.Fatalf("the model server of %s: %q: %v", name, line, err)
	}
	h, err := strconv.ParseUint(hello.Handles[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return hello.Address, h
}

// readCSV reads a golden CSV of float32 rows (%.9g).
func readCSV(t testing.TB, name, file string) [][]float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(archsDir, name, file))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]float64
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var row []float64
		for j, f := range strings.Split(line, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 32)
			if err != nil {
				t.Fatalf("%s/%s line %d value %d: %v", name, file, i+1, j+1, err)
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	return rows
}

// TestGoldenThroughPythonServer: Go's occlusion (window 60, stride 20,
// baseline 0, one channel at a time: Captum's sliding_window_shapes =
// (1, 60), strides = (1, 20)), Grad-CAM on the README's layer (raw) and
// the input gradients, computed through the model service on the
// PyTorch module served by the Python kit, equal PyTorch's files within
// 1e-4 of each map's largest |value|; a receptive-field alignment is
// refused, naming what is accepted. With -short only the three-channel
// network and the LSTM run (each network takes a few seconds, most of it
// the Python server's start).
func TestGoldenThroughPythonServer(t *testing.T) {
	pythontest.Need(t, "torch")
	for _, a := range golden.TorchArchs {
		t.Run(a.Name, func(t *testing.T) {
			if testing.Short() && a.Name != "resnet1d-3ph" && a.Name != "lstm" {
				t.Skip("-short: the three-channel network and the LSTM only")
			}
			addr, h := serve(t, a.Name, a.Class, a.Cin)
			ctx := context.Background()
			m, closeModel, err := sdk.DialModel(ctx, addr, h)
			if err != nil {
				t.Fatal(err)
			}
			defer closeModel()
			if got := m.Arch(); got.InChannels != a.Cin || got.InLen != 640 || len(got.Layers) != 0 || m.Classes() != 16 {
				t.Fatalf("Describe: %+v, %d classes", got, m.Classes())
			}
			wf := readCSV(t, a.Name, "waveforms.csv")
			tg := readCSV(t, a.Name, "targets.csv")
			x := make([]float32, 0, len(wf)*m.InputLen())
			targets := make([]int, len(tg))
			for i, row := range wf {
				for _, v := range row {
					x = append(x, float32(v))
				}
				targets[i] = int(tg[i][0])
			}
			req := sdk.ExplainRequest{X: x, Targets: targets}
			grad := make([]float32, len(x))
			req.Config = sdk.Config{"window": int64(60), "stride": int64(20), "baseline": 0.0, "channels": "each"}
			occ, err := occlusion.New().Explain(ctx, m, req)
			if err != nil {
				t.Fatal(err)
			}
			req.Config = sdk.Config{"layer": a.Layer, "align": "none"}
			cam, err := gradcam.New().Explain(ctx, m, req)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.InputGrad(ctx, grad, nil, x, targets); err != nil {
				t.Fatal(err)
			}
			golden.RowsClose(t, "occlusion", occ, readCSV(t, a.Name, "occlusion.csv"), 1e-4)
			want := readCSV(t, a.Name, "gradcam_raw.csv")
			L := len(want[0])
			for i, row := range cam {
				for ch := range a.Cin {
					r := row[ch*640 : (ch+1)*640]
					for j := L; j < 640; j++ {
						if r[j] != 0 {
							t.Fatalf("gradcam: map %d channel %d: sample %d past the layer's %d positions is %v, want 0", i, ch, j, L, r[j])
						}
					}
					cam[i] = r[:L] // every channel's row is the same time map; compare the last
				}
			}
			golden.RowsClose(t, "gradcam", cam, want, 1e-4)
			if L < 640 {
				// A shorter layer resampled to the input as PyTorch's
				// F.interpolate does (testdata/peers/interp_golden.py).
				req.Config = sdk.Config{"layer": a.Layer, "align": "linear"}
				lin, err := gradcam.New().Explain(ctx, m, req)
				if err != nil {
					t.Fatal(err)
				}
				for i := range lin {
					lin[i] = lin[i][(a.Cin-1)*640:]
				}
				golden.RowsClose(t, "gradcam, align linear", lin, readCSV(t, a.Name, "gradcam_linear.csv"), 1e-4)
			}
			g := make([][]float64, len(targets))
			for i := range g {
				for _, v := range grad[i*m.InputLen() : (i+1)*m.InputLen()] {
					g[i] = append(g[i], float64(v))
				}
			}
			golden.RowsClose(t, "input gradient", g, readCSV(t, a.Name, "input_grad.csv"), 1e-4)

			req.Config = sdk.Config{"layer": a.Layer}
			if _, err := gradcam.New().Explain(ctx, m, req); err == nil || !strings.Contains(err.Error(), `accepted: align = "none"`) {
				t.Errorf("gradcam with the centre alignment on a PyTorch model: %v", err)
			}
			req.Config = sdk.Config{"layer": "fc", "align": "none"}
			if _, err := gradcam.New().Explain(ctx, m, req); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q (", a.Layer)) {
				t.Errorf("gradcam on a layer the model does not list: %v", err)
			}
		})
	}
}

// BenchmarkOcclusionResNet1D times Go's occlusion through the Python
// server on resnet1d's 8 records (window 60, baseline 0; stride 20 as
// the golden files, and stride 1): ns/op is per map.
func BenchmarkOcclusionResNet1D(b *testing.B) {
	pythontest.Need(b, "torch")
	for _, stride := range []int64{20, 1} {
		b.Run(fmt.Sprintf("stride%d", stride), func(b *testing.B) {
			addr, h := serve(b, "resnet1d", "ResNet1D", 1)
			ctx := context.Background()
			m, closeModel, err := sdk.DialModel(ctx, addr, h)
			if err != nil {
				b.Fatal(err)
			}
			defer closeModel()
			wf := readCSV(b, "resnet1d", "waveforms.csv")
			tg := readCSV(b, "resnet1d", "targets.csv")
			var x []float32
			var targets []int
			for i, row := range wf {
				for _, v := range row {
					x = append(x, float32(v))
				}
				targets = append(targets, int(tg[i][0]))
			}
			req := sdk.ExplainRequest{X: x, Targets: targets, Config: sdk.Config{"window": int64(60), "stride": stride, "baseline": 0.0}}
			e := occlusion.New()
			b.ResetTimer()
			for n := range b.N {
				i := n % len(targets) // one map an op, cycling through the records
				r := sdk.ExplainRequest{X: req.X[i*640 : (i+1)*640], Targets: req.Targets[i : i+1], Config: req.Config}
				if _, err := e.Explain(ctx, m, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
