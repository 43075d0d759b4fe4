package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/sdk"
)

// torchNet is a network of testdata/golden/archs (its README and
// manifest.json): folder, class in archs.py, --model-args, channels,
// Grad-CAM layer.
type torchNet struct {
	name, class, args string
	cin               int
	layer             string
}

// torchNets are the networks of testdata/golden/archs.
var torchNets = []torchNet{
	{"fcn", "FCN", "", 1, "conv3"},
	{"resnet1d", "ResNet1D", "", 1, "block3"},
	{"inceptiontime", "InceptionTime", "", 1, "inc3"},
	{"stridednet", "StridedNet", "", 1, "conv3"},
	{"resnet1d-3ph", "ResNet1D", "cin=3", 3, "block3"},
	{"lstm", "LSTMNet", "", 1, "lstm"},
}

// modelArgs are the flags --model and --model-args of n.
func (n torchNet) modelArgs(root string) []string {
	a := []string{"--model", filepath.Join(root, "archs.py") + ":" + n.class}
	if n.args != "" {
		a = append(a, "--model-args", n.args)
	}
	return a
}

// parseModelArgs is the runner.TorchModule's Args that explain's flags
// make of --model-args args ("": none).
func parseModelArgs(args string) (map[string]any, error) {
	fs := flags("explain", io.Discard, io.Discard)
	mf := addModelFlags(fs)
	cl := []string{"--model", "archs.py:Net"}
	if args != "" {
		cl = append(cl, "--model-args", args)
	}
	if _, err := parse(fs, cl); err != nil {
		return nil, err
	}
	m, err := mf.torchModel("explain", fs, nil)
	if err != nil {
		return nil, err
	}
	tm, ok := m.(runner.TorchModule)
	if !ok {
		return nil, fmt.Errorf("--model archs.py:Net gave a %T, want a runner.TorchModule", m)
	}
	return tm.Args, nil
}

// paddedCAM is the raw Grad-CAM map that explain writes for a layer's
// maps want (L positions each) on inputs of cin channels: the layer's
// positions, then zeros to the input's 640 samples, every channel's row
// the same.
func paddedCAM(want [][]float32, cin int) [][]float32 {
	padded := make([][]float32, len(want))
	for i, row := range want {
		padded[i] = make([]float32, cin*640)
		for ch := range cin {
			copy(padded[i][ch*640:], row)
		}
	}
	return padded
}

// TestExplainTorchModel: explain and predict on the six PyTorch networks
// of testdata/golden/archs served by the Python kit's model server, with
// the built command's plugin processes: Explain with occlusion (window
// 60, stride 20, baseline 0) reproduces Captum's occlusion.csv and
// gradcam with layer=L and align=none its raw Grad-CAM (the layer's
// positions, then zeros to the input's 640 samples, every channel's row
// the same) within 1e-4 of each map's largest |value|, and Predict,
// written as predict --out writes it, the probabilities within 1e-5.
// Grad-CAM without align=none is refused, naming it. One model server a
// network serves all of its calls (torchServer), as the command's does
// for one command; the six start together. The subtest command checks
// a run of the binary itself, started beside them, whose command starts
// its own server, on the three-channel network: explain --model
// --model-args cin=3 to stdout. (predict --model's flags are
// explain's, addModelFlags; its --out is TestPredictMean's; the
// command's own server start and end are TestExplainTorchModelSignal's.)
func TestExplainTorchModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel() // a slow run of the binary: see shared_test.go
	pythontest.Need(t, "torch")
	exe := buildUaxai(t)
	root := golden.Dir(t, "archs")
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	m := plugin.NewManager(reg, plugin.Options{Exe: exe, Logger: hclog.NewNullLogger()})
	defer m.Close()
	ctx := context.Background()
	occlusionCfg := sdk.Config{"window": int64(60), "stride": int64(20), "baseline": 0.0}

	// The command's own run and the shared servers start together: each
	// is mostly the wait for torch's import.
	n3 := torchNets[4]
	if n3.name != "resnet1d-3ph" {
		t.Fatalf("torchNets[4] is %s, want the three-channel network", n3.name)
	}
	cliDir := filepath.Join(root, n3.name)
	cli := exec.Command(exe, append(append([]string{"explain"}, n3.modelArgs(root)...), "--weights", filepath.Join(cliDir, "model.safetensors"),
		"--input", filepath.Join(cliDir, "waveforms.csv"), "--channels", strconv.Itoa(n3.cin), "--target", filepath.Join(cliDir, "targets.csv"),
		"--explainer", "occlusion", "--set", "window=60", "--set", "stride=20", "--set", "baseline=0")...)
	var cliOut, cliErr bytes.Buffer
	cli.Stdout, cli.Stderr = &cliOut, &cliErr
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cli.ProcessState == nil { // a failure before the subtest command waited for it
			cli.Process.Kill()
			cli.Wait()
		}
	}()
	startTorchServers(t, torchNets)
	for _, n := range torchNets {
		t.Run(n.name, func(t *testing.T) {
			dir := filepath.Join(root, n.name)
			srv := torchServer(t, n)
			explain := func(explainer string, cfg sdk.Config) (string, error) {
				var b bytes.Buffer
				err := runner.Explain(ctx, runner.ExplainOptions{Plugins: m, Served: srv, Input: filepath.Join(dir, "waveforms.csv"), Channels: n.cin,
					Explainer: explainer, Config: cfg, Target: filepath.Join(dir, "targets.csv")}, &b)
				return b.String(), err
			}

			out, err := explain("occlusion", occlusionCfg)
			if err != nil {
				t.Fatalf("explain occlusion: %v", err)
			}
			golden.RowsClose(t, "occlusion", parseMaps(t, out), golden.CSV32(t, filepath.Join(dir, "occlusion.csv")), 1e-4)

			out, err = explain("gradcam", sdk.Config{"layer": n.layer, "align": "none"})
			if err != nil {
				t.Fatalf("explain gradcam: %v", err)
			}
			want := golden.CSV32(t, filepath.Join(dir, "gradcam_raw.csv"))
			L := len(want[0])
			golden.RowsClose(t, "gradcam", parseMaps(t, out), paddedCAM(want, n.cin), 1e-4)
			if L < 640 {
				for i, row := range parseMaps(t, out) {
					if row[639] != 0 {
						t.Errorf("gradcam: map %d: sample 639, past the layer's %d positions, is %v, want 0", i, L, row[639])
					}
				}
			}
			if _, err := explain("gradcam", sdk.Config{"layer": n.layer}); err == nil || !strings.Contains(err.Error(), `accepted: align = "none"`) {
				t.Errorf("gradcam without align=none: %v", err)
			}

			pred, err := runner.Predict(ctx, runner.PredictOptions{Served: srv, Input: filepath.Join(dir, "waveforms.csv"), Channels: n.cin})
			if err != nil {
				t.Fatalf("predict: %v", err)
			}
			var b bytes.Buffer
			w := bufio.NewWriter(&b)
			if err := writeProbs(w, pred, false); err != nil {
				t.Fatal(err)
			}
			w.Flush()
			golden.RowsClose(t, "predict", parseMaps(t, b.String()), golden.CSV32(t, filepath.Join(dir, "probs.csv")), 1e-5)
		})
	}

	t.Run("command", func(t *testing.T) {
		err := cli.Wait()
		if err != nil {
			t.Fatalf("explain occlusion: %v\n%s", err, cliErr.String())
		}
		golden.RowsClose(t, "occlusion", parseMaps(t, cliOut.String()), golden.CSV32(t, filepath.Join(cliDir, "occlusion.csv")), 1e-4)
	})
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
	t.Parallel() // a slow run of the binary: see shared_test.go
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	pythontest.Need(t, "torch")
	exe := buildUaxai(t)
	dir := golden.Dir(t, "archs")
	cmd := exec.Command(exe, "explain", "--model", filepath.Join(dir, "archs.py")+":ResNet1D", "--weights", filepath.Join(dir, "resnet1d", "model.safetensors"),
		"--input", filepath.Join(dir, "resnet1d", "waveforms.csv"), "--target", "0", "--explainer", "occlusion", "--set", "stride=1", "--workers", "1")
	// Its own TMPDIR, to see that the server's socket directory goes too.
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
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
	// The server, killed with its process group, ends at once; a loaded
	// machine may take seconds to tear down its threads and memory. A
	// server left behind would still run at the deadline.
	for deadline := time.Now().Add(time.Minute); !gone(); {
		if time.Now().After(deadline) {
			t.Fatalf("model server %d still runs after the command ended:\n%s", server, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The server was killed, so it could not remove its socket's
	// directory; the command did, before it ended.
	if left, _ := filepath.Glob(filepath.Join(tmp, "uaxai-torch-*")); len(left) > 0 {
		t.Errorf("the model server's socket directory is left behind: %v", left)
	}
}
