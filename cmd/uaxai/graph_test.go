package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
)

// graphExe runs the uaxai binary with args and returns its output, its
// standard error and its exit code.
func graphExe(t *testing.T, exe string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// TestExplainGraphModel: --model takes a native graph network, computed
// in Go with no Python: an ONNX export (its weights inside) or a TOML
// graph spec with state_dict weights. On the golden networks explain
// reproduces Captum's occlusion and raw Grad-CAM within 1e-4 and
// predict PyTorch's probabilities within 1e-5; the flags that do not go
// with a graph are refused, naming what is accepted.
func TestExplainGraphModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	exe := buildUaxai(t)
	uaxaiRun := func(args ...string) (string, string, int) { return graphExe(t, exe, args...) }
	root := golden.Dir(t, "archs")
	specs := filepath.Join(golden.RepoRoot(t), "recipes", "archs")
	fcn := filepath.Join(root, "fcn")
	onnx := []string{"--model", filepath.Join(fcn, "model.onnx"), "--input", filepath.Join(fcn, "waveforms.csv")}
	out, errs, code := uaxaiRun(append(append([]string{"explain"}, onnx...), "--target", filepath.Join(fcn, "targets.csv"),
		"--explainer", "occlusion", "--set", "window=60", "--set", "stride=20", "--set", "baseline=0")...)
	if code != 0 {
		t.Fatalf("explain --model fcn/model.onnx: exit %d\n%s", code, errs)
	}
	golden.RowsClose(t, "occlusion from ONNX", parseMaps(t, out), golden.CSV32(t, filepath.Join(fcn, "occlusion.csv")), 1e-4)
	if !strings.Contains(errs, "graph model: receptive-field recomputation of ") {
		t.Errorf("explain --model fcn/model.onnx: stderr does not say that occlusion took the receptive-field path:\n%s", errs)
	}

	for _, name := range []string{"fcn", "stridednet"} {
		dir := filepath.Join(root, name)
		probs := filepath.Join(t.TempDir(), "probs.csv")
		if _, errs, code := uaxaiRun("predict", "--model", filepath.Join(dir, "model.onnx"), "--input", filepath.Join(dir, "waveforms.csv"), "--out", probs); code != 0 {
			t.Fatalf("predict --model %s/model.onnx: exit %d\n%s", name, code, errs)
		}
		b, err := os.ReadFile(probs)
		if err != nil {
			t.Fatal(err)
		}
		golden.RowsClose(t, "predict "+name+" from ONNX", parseMaps(t, string(b)), golden.CSV32(t, filepath.Join(dir, "probs.csv")), 1e-5)
	}

	r3 := filepath.Join(root, "resnet1d-3ph")
	toml := []string{"--model", filepath.Join(specs, "resnet1d.toml"), "--weights", filepath.Join(r3, "model.safetensors"),
		"--input", filepath.Join(r3, "waveforms.csv"), "--channels", "3"}
	out, errs, code = uaxaiRun(append(append([]string{"explain"}, toml...), "--target", filepath.Join(r3, "targets.csv"),
		"--explainer", "gradcam", "--set", "layer=block3", "--set", "align=none")...)
	if code != 0 {
		t.Fatalf("explain --model resnet1d.toml: exit %d\n%s", code, errs)
	}
	want := golden.CSV32(t, filepath.Join(r3, "gradcam_raw.csv"))
	maps := parseMaps(t, out)
	for i := range maps {
		for ch := 1; ch < 3; ch++ {
			if !slices.Equal(maps[i][ch*640:(ch+1)*640], maps[i][:640]) {
				t.Fatalf("gradcam map %d: channel %d's row differs from channel 0's (one time map for every channel)", i, ch)
			}
		}
		maps[i] = maps[i][:640]
	}
	golden.RowsClose(t, "gradcam from TOML", maps, want, 1e-4)

	for _, c := range []struct {
		args []string
		want string
	}{
		{append(append([]string{"predict"}, onnx...), "--weights", filepath.Join(fcn, "model.safetensors")), "an ONNX file holds its weights (accepted: no --weights"},
		{[]string{"predict", "--model", filepath.Join(specs, "fcn.toml"), "--input", filepath.Join(fcn, "waveforms.csv")}, "a graph spec holds no weights (accepted: --weights"},
		{append(append([]string{"predict"}, onnx...), "--model-args", "cin=1"), "--model-args with --model"},
		{[]string{"predict", "--model", filepath.Join(specs, "resnet1d.toml"), "--weights", filepath.Join(fcn, "model.safetensors"), "--input", filepath.Join(fcn, "waveforms.csv")}, "missing"},
		{[]string{"predict", "--model", filepath.Join(root, "resnet1d-3ph", "model.onnx"), "--input", filepath.Join(fcn, "waveforms.csv")}, "takes inputs of 3 channel(s) x 640 samples, and the input's waveforms have 1 x 640"},
	} {
		_, errs, code := uaxaiRun(c.args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, %q; want an error with %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
}
