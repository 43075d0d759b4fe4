package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
)

// The networks of testdata/golden/archs (its README and manifest.json):
// folder, class in archs.py, --model-args, channels, Grad-CAM layer.
var torchNets = []struct {
	name, class, args string
	cin               int
	layer             string
}{
	{"fcn", "FCN", "", 1, "conv3"},
	{"resnet1d", "ResNet1D", "", 1, "block3"},
	{"inceptiontime", "InceptionTime", "", 1, "inc3"},
	{"stridednet", "StridedNet", "", 1, "conv3"},
	{"resnet1d-3ph", "ResNet1D", "cin=3", 3, "block3"},
	{"lstm", "LSTMNet", "", 1, "lstm"},
}

// TestExplainTorchModel runs the built binary on the six PyTorch
// networks of testdata/golden/archs with --model (one model server a
// command): `uaxai explain --explainer occlusion` (window 60, stride
// 20, baseline 0) reproduces Captum's occlusion.csv and `--explainer
// gradcam --set layer=L --set align=none` its raw Grad-CAM (the layer's
// positions, then zeros to the input's 640 samples, every channel's
// row the same) within 1e-4 of each map's largest |value|, and `uaxai
// predict --model --out` the probabilities within 1e-5. Grad-CAM
// without align=none is refused, naming it. With -short: the
// three-channel network only.
func TestExplainTorchModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	pythontest.Need(t, "torch")
	exe := buildUaxai(t)
	root := golden.Dir(t, "archs")
	for _, n := range torchNets {
		t.Run(n.name, func(t *testing.T) {
			dir := filepath.Join(root, n.name)
			model := []string{"--model", filepath.Join(root, "archs.py") + ":" + n.class, "--weights", filepath.Join(dir, "model.safetensors"),
				"--input", filepath.Join(dir, "waveforms.csv"), "--channels", strconv.Itoa(n.cin)}
			if n.args != "" {
				model = append(model, "--model-args", n.args)
			}
			target := []string{"--target", filepath.Join(dir, "targets.csv")}
			uaxai := func(args ...string) (string, string, error) {
				cmd := exec.Command(exe, args...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				return stdout.String(), stderr.String(), err
			}

			out, errs, err := uaxai(append(append(append([]string{"explain"}, model...), target...), "--explainer", "occlusion", "--set", "window=60", "--set", "stride=20", "--set", "baseline=0")...)
			if err != nil {
				t.Fatalf("explain occlusion: %v\n%s", err, errs)
			}
			golden.RowsClose(t, "occlusion", parseMaps(t, out), golden.CSV32(t, filepath.Join(dir, "occlusion.csv")), 1e-4)

			out, errs, err = uaxai(append(append(append([]string{"explain"}, model...), target...), "--explainer", "gradcam", "--set", "layer="+n.layer, "--set", "align=none")...)
			if err != nil {
				t.Fatalf("explain gradcam: %v\n%s", err, errs)
			}
			want := golden.CSV32(t, filepath.Join(dir, "gradcam_raw.csv"))
			L := len(want[0])
			padded := make([][]float32, len(want))
			for i, row := range want {
				padded[i] = make([]float32, n.cin*640)
				for ch := range n.cin {
					copy(padded[i][ch*640:], row)
				}
			}
			golden.RowsClose(t, "gradcam", parseMaps(t, out), padded, 1e-4)
			if L < 640 {
				for i, row := range parseMaps(t, out) {
					if row[639] != 0 {
						t.Errorf("gradcam: map %d: sample 639, past the layer's %d positions, is %v, want 0", i, L, row[639])
					}
				}
			}

			probs := filepath.Join(t.TempDir(), "probs.csv")
			if _, errs, err = uaxai(append(append([]string{"predict"}, model...), "--out", probs)...); err != nil {
				t.Fatalf("predict: %v\n%s", err, errs)
			}
			b, err := os.ReadFile(probs)
			if err != nil {
				t.Fatal(err)
			}
			golden.RowsClose(t, "predict", parseMaps(t, string(b)), golden.CSV32(t, filepath.Join(dir, "probs.csv")), 1e-5)

			if n.name == "stridednet" {
				_, errs, err = uaxai(append(append(append([]string{"explain"}, model...), target...), "--explainer", "gradcam", "--set", "layer="+n.layer)...)
				if err == nil || !strings.Contains(errs, `accepted: align = "none"`) {
					t.Errorf("gradcam without align=none: %v\n%s", err, errs)
				}
			}
		})
		if testing.Short() {
			break
		}
	}
}

// TestExplainTorchModelFlags: --model's flags are checked before
// anything starts: --arch with --model, --model-args or --model-output
// without --model, a --model-args that is not key=value.
func TestExplainTorchModelFlags(t *testing.T) {
	dir := golden.Dir(t, "archs")
	base := []string{"--weights", filepath.Join(dir, "fcn", "model.safetensors"), "--input", filepath.Join(dir, "fcn", "waveforms.csv")}
	model := append([]string{"--model", filepath.Join(dir, "archs.py") + ":FCN"}, base...)
	ex := []string{"--explainer", "occlusion", "--target", "0"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(append([]string{"explain", "--arch", "paper-1dcnn"}, model...), ex...), "explain: --arch and --model"},
		{append([]string{"predict", "--arch", "paper-1dcnn"}, model...), "predict: --arch and --model"},
		{append(append([]string{"explain", "--model-args", "cin=1"}, base...), ex...), "explain: --model-args without --model"},
		{append([]string{"predict", "--model-output", "logits"}, base...), "predict: --model-output without --model"},
		{append(append([]string{"explain", "--model-args", "cin"}, model...), ex...), `--model-args: "cin" is not key=value`},
		{append([]string{"predict", "--model-args", "cin=1,cin=2"}, model...), `--model-args: key "cin" is set twice`},
		{append([]string{"predict", "--model-output", "softmax"}, model...), `--model-output "softmax": want probs`},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args, code, errb.String(), c.want)
		}
	}
}

// TestExplainTorchModelSignal: SIGTERM to `uaxai explain --model` while
// it explains ends the command and its model server: no process of the
// server is left.
func TestExplainTorchModelSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	pythontest.Need(t, "torch")
	exe := buildUaxai(t)
	dir := golden.Dir(t, "archs")
	cmd := exec.Command(exe, "explain", "--model", filepath.Join(dir, "archs.py")+":ResNet1D", "--weights", filepath.Join(dir, "resnet1d", "model.safetensors"),
		"--input", filepath.Join(dir, "resnet1d", "waveforms.csv"), "--target", "0", "--explainer", "occlusion", "--set", "stride=1", "--workers", "1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	server := 0
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if server == 0 && strings.HasPrefix(sc.Text(), "explain ") {
			if server = childWith(cmd.Process.Pid, "uaxai_plugin.torchmodel"); server == 0 {
				t.Fatalf("no model server under pid %d while it explains:\n%s", cmd.Process.Pid, log.String())
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	if server == 0 {
		t.Fatalf("the command never explained:\n%s", log.String())
	}
	if err == nil {
		t.Fatalf("the command succeeded after SIGTERM:\n%s", log.String())
	}
	gone := func() bool {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(server), "stat"))
		if err != nil {
			return true
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		return len(f) > 0 && f[0] == "Z"
	}
	for deadline := time.Now().Add(5 * time.Second); !gone(); {
		if time.Now().After(deadline) {
			t.Fatalf("model server %d still runs after the command ended:\n%s", server, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
