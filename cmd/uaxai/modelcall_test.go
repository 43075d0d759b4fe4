package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uaxai/uaxai/internal/proctest"
	"github.com/uaxai/uaxai/internal/pythontest"
)

// hangModule is a PyTorch module whose forward answers zeros (the model
// server's first forward pass, two zero inputs, as it loads the module)
// and sleeps for an hour on any other input: it hangs on its second call,
// the first of real waveforms.
const hangModule = `import time
import torch


class Hang(torch.nn.Module):
    def __init__(self, cin=1, n=640, classes=16):
        super().__init__()
        self.fc = torch.nn.Linear(cin * n, classes)

    def forward(self, x):
        if bool((x != 0).any()):
            time.sleep(3600)
        return torch.softmax(self.fc(x.flatten(1)), dim=1)
`

// hangModel writes hangModule and a state_dict of it (hang.pt) into dir
// and returns the module's "file.py:Class" and the weights file.
func hangModel(t *testing.T, dir string) (module, weights string) {
	t.Helper()
	py := filepath.Join(dir, "hang.py")
	if err := os.WriteFile(py, []byte(hangModule), 0o644); err != nil {
		t.Fatal(err)
	}
	weights = filepath.Join(dir, "hang.pt")
	script := fmt.Sprintf("import sys, torch; sys.path.insert(0, %q); import hang; torch.manual_seed(0); torch.save(hang.Hang().state_dict(), %q)", dir, weights)
	if out, err := exec.Command(pythontest.Python, "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("writing the weights: %v\n%s", err, out)
	}
	return py + ":Hang", weights
}

// uaxaiWithin runs the binary with args under an outer bound of two
// minutes, far above the 2 s model_call limit of the tests, so that a
// command that hangs fails the test instead of hanging it.
func uaxaiWithin(t *testing.T, exe string, args ...string) (stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("uaxai %s hung: killed after 2 minutes (the model's call had no deadline)\n%s", strings.Join(args, " "), errb.String())
	}
	return errb.String(), err
}

// groupGone fails the test unless, within a minute, no live process
// (zombies aside) is left in process group pgid.
func groupGone(t *testing.T, pgid int, log string) {
	t.Helper()
	live := func() []int {
		var pids []int
		for _, p := range proctest.List() {
			if p.Live() && p.PGrp == pgid {
				pids = append(pids, p.Pid)
			}
		}
		return pids
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		pids := live()
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of the model's process group %d still run after the command failed:\n%s", pids, pgid, log)
		}
	}
}

// killedPid is the pid the error gives the killed process: "(pid N)" or
// "(PATH, pid N)" before the call's message.
func killedPid(t *testing.T, stderr string) int {
	t.Helper()
	m := regexp.MustCompile(`pid (\d+)\)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("the error names no pid of the killed process:\n%s", stderr)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// TestModelCallHangs (issue 34, item 7): a PyTorch model whose forward
// hangs on its second call (the first of real waveforms) fails `uaxai
// predict`, `uaxai explain --target predicted` (the host's own calls),
// `uaxai explain --target 0` (occlusion's calls from its own process),
// all three with --model, and `uaxai run` ([model] torch,
// posterior.torch, in its prediction step) at the
// limits.model_call of --limit, 2 s: the error names the model (its
// module and weights file, or its posterior and draw), the call and its
// batch, and the key; the model's process group is killed (none of its
// processes is left); the run keeps its run directory, whose manifest
// says failed. The run's recipe sets model_call = "1h": the command
// line's --limit goes over it. Without a deadline each command hangs,
// which the tests' outer two minutes turn into a failure.
func TestModelCallHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary with a PyTorch model")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	pythontest.Need(t, "torch")
	exe := buildUaxai(t)
	dir := t.TempDir()
	module, weights := hangModel(t, dir)
	input := filepath.Join(dir, "x.csv")
	var csv strings.Builder
	for i := range 3 {
		for j := range 640 {
			if j > 0 {
				csv.WriteByte(',')
			}
			csv.WriteString(strconv.FormatFloat(float64((i+j)%9+1)/10, 'g', -1, 64))
		}
		csv.WriteByte('\n')
	}
	if err := os.WriteFile(input, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	model := []string{"--model", module, "--weights", weights, "--input", input, "--limit", "model_call=2s"}

	t.Run("predict", func(t *testing.T) {
		stderr, err := uaxaiWithin(t, exe, append([]string{"predict"}, model...)...)
		if err == nil {
			t.Fatalf("predict succeeded on a model that hangs:\n%s", stderr)
		}
		for _, want := range []string{"draw 0 (" + weights + ")", "the PyTorch model server (--model) " + module,
			"Probs of 3 inputs: no answer within 2s (limits.model_call); killed its process group"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("predict's error lacks %q:\n%s", want, stderr)
			}
		}
		groupGone(t, killedPid(t, stderr), stderr)
	})

	t.Run("explain", func(t *testing.T) {
		stderr, err := uaxaiWithin(t, exe, append([]string{"explain", "--explainer", "occlusion", "--target", "predicted"}, model...)...)
		if err == nil {
			t.Fatalf("explain succeeded on a model that hangs:\n%s", stderr)
		}
		for _, want := range []string{"target predicted", "draw 0 (" + weights + ")", "Probs of 3 inputs: no answer within 2s (limits.model_call); killed its process group"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("explain's error lacks %q:\n%s", want, stderr)
			}
		}
		groupGone(t, killedPid(t, stderr), stderr)
	})

	// The explainer's own calls (occlusion's windows, in its process,
	// straight to the model's server) have the limit too.
	t.Run("explainer", func(t *testing.T) {
		stderr, err := uaxaiWithin(t, exe, append([]string{"explain", "--explainer", "occlusion", "--target", "0", "--set", "window=64", "--set", "stride=64"}, model...)...)
		if err == nil {
			t.Fatalf("explain succeeded on a model that hangs:\n%s", stderr)
		}
		// Which call of the model occlusion makes first is its business.
		for _, want := range []string{"explainer.occlusion: Explain: ", "the PyTorch model server (--model) " + module, "draw 0 (" + weights + ")",
			": no answer within 2s (limits.model_call); killed its process group"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("explain's error lacks %q:\n%s", want, stderr)
			}
		}
		groupGone(t, killedPid(t, stderr), stderr)
	})

	t.Run("run", func(t *testing.T) {
		runs := filepath.Join(dir, "runs")
		recipe := filepath.Join(dir, "hang.toml")
		text := fmt.Sprintf(`name = "hang"
seed = 1
out = %q

[data]
source = "pqd"
train_per_class = 2
val_fraction = 0.5
test_splits = 1
test_per_class = 1

[model]
torch = %q

[[posterior]]
use = "torch"
weights = %q

[[explainer]]
use = "occlusion"
window = 64
stride = 64

[[summary]]
use = "mean"

[limits]
model_call = "1h"
`, runs, module, weights)
		if err := os.WriteFile(recipe, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		stderr, err := uaxaiWithin(t, exe, "run", "--no-cache", "--limit", "model_call=2s", recipe)
		if err == nil {
			t.Fatalf("run succeeded on a model that hangs:\n%s", stderr)
		}
		for _, want := range []string{"posterior posterior.torch: predicting records 0..", "draw 0: posterior.torch (",
			"Probs of 16 inputs: no answer within 2s (limits.model_call); killed its process group"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("run's error lacks %q:\n%s", want, stderr)
			}
		}
		groupGone(t, killedPid(t, stderr), stderr)
		mans, _ := filepath.Glob(filepath.Join(runs, "*", "manifest.json"))
		if len(mans) != 1 {
			t.Fatalf("run directories with a manifest: %v; want the failed run's", mans)
		}
		b, err := os.ReadFile(mans[0])
		if err != nil {
			t.Fatal(err)
		}
		var man struct{ Status, Error string }
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatal(err)
		}
		if man.Status != "failed" || !strings.Contains(man.Error, "limits.model_call") {
			t.Errorf("manifest: status %q, error %q; want failed with the model_call error", man.Status, man.Error)
		}
	})
}
