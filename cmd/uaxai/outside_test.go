package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
)

// TestBinaryOutsideRepository: a uaxai binary built into a directory of
// its own, run from a directory outside the repository with no
// PYTHONPATH, explains a PyTorch module of the user's (model.py:FCN with
// its state_dict): it unpacks the Python kit it embeds into its cache
// directory and reproduces the golden FCN's occlusion maps (Captum's
// equivalent) within 1e-4.
func TestBinaryOutsideRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel()
	pythontest.Need(t, "torch")
	exe := buildUaxai(t)
	src := filepath.Join(golden.Dir(t, "archs"), "fcn")
	work, cache := t.TempDir(), t.TempDir()
	for from, to := range map[string]string{
		filepath.Join(src, "..", "archs.py"):    "model.py",
		filepath.Join(src, "model.safetensors"): "w.safetensors",
		filepath.Join(src, "waveforms.csv"):     "x.csv",
		filepath.Join(src, "targets.csv"):       "t.csv",
	} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(exe, "explain", "--model", "model.py:FCN", "--weights", "w.safetensors", "--input", "x.csv", "--target", "t.csv",
		"--explainer", "occlusion", "--set", "window=60", "--set", "stride=20", "--set", "baseline=0")
	cmd.Dir = work
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PYTHONPATH=") && !strings.HasPrefix(e, "UAXAI_CACHE=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env, "UAXAI_CACHE="+cache)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("explain outside the repository: %v\n%s", err, errb.String())
	}
	kits, _ := filepath.Glob(filepath.Join(cache, "python-kit-*", "sdk", "python", "uaxai_plugin", "torchmodel.py"))
	if len(kits) != 1 {
		t.Errorf("the unpacked kit in the cache: %q; want one", kits)
	}
	var got [][]float64
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var row []float64
		for _, f := range strings.Split(line, ",") {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatalf("output %q: %v", line, err)
			}
			row = append(row, v)
		}
		got = append(got, row)
	}
	golden.RowsClose(t, "occlusion", got, golden.CSV32(t, filepath.Join(src, "occlusion.csv")), 1e-4)
}
