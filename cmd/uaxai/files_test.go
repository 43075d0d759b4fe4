package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/uaxai/uaxai/internal/golden"
)

// TestHostileInputFiles: the command refuses, at once and by name, an
// input file that is not a regular file: /dev/zero among --weights (which
// read it until memory ran out), a FIFO as --weights, --input or a graph
// spec (which blocked for ever), /dev/zero as an ONNX model (read to its
// 1 GiB bound first), and a recipe whose [model] graph is /dev/zero or a
// FIFO, or which is a FIFO itself. Each run of the binary has a minute
// (a hang fails the test, it is no measure of speed) and a 1 GiB data
// limit (so that reading /dev/zero fails at once rather than take the
// machine's memory).
func TestHostileInputFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	exe := buildUaxai(t)
	dir := t.TempDir()
	gold := golden.Dir(t, "paper-1dcnn")
	model, in := filepath.Join(gold, "model.safetensors"), filepath.Join(gold, "waveforms.csv")
	fifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return p
	}
	zeroONNX := filepath.Join(dir, "zero.onnx")
	if err := os.Symlink("/dev/zero", zeroONNX); err != nil {
		t.Fatal(err)
	}
	fifoW, fifoIn, fifoSpec, fifoGraph, fifoRecipe := fifo("w.safetensors"), fifo("in.csv"), fifo("spec.toml"), fifo("graph.toml"), fifo("fifo.toml")
	recipeWith := func(name, model string) string {
		p := writeRecipe(t, t.TempDir(), 2, "occlusion", "stride = 10")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, name)
		if err := os.WriteFile(out, append(b, []byte("\n[model]\n"+model+"\n")...), 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"predict", "--weights", model + ",/dev/zero", "--input", in}, []string{"/dev/zero", "it is a device; accepted: a regular file"}},
		{[]string{"explain", "--weights", model + ",/dev/zero", "--input", in, "--explainer", "occlusion", "--target", filepath.Join(gold, "labels.csv")}, []string{"/dev/zero", "accepted: a regular file"}},
		{[]string{"predict", "--weights", fifoW, "--input", in}, []string{fifoW, "it is a FIFO; accepted: a regular file"}},
		{[]string{"predict", "--weights", model, "--input", fifoIn}, []string{fifoIn, "it is a FIFO; accepted: a regular file"}},
		{[]string{"predict", "--model", fifoSpec, "--weights", model, "--input", in}, []string{fifoSpec, "it is a FIFO; accepted: a regular file"}},
		{[]string{"predict", "--model", zeroONNX, "--input", in}, []string{zeroONNX, "it is a device; accepted: a regular file"}},
		{[]string{"explain", "--model", zeroONNX, "--input", in, "--explainer", "occlusion", "--target", filepath.Join(gold, "labels.csv")}, []string{zeroONNX, "accepted: a regular file"}},
		{[]string{"recipe", "check", recipeWith("zero.toml", `graph = "/dev/zero"`)}, []string{"zero.toml", `key "graph" in [model]`, "/dev/zero", "accepted: a regular file"}},
		{[]string{"recipe", "check", recipeWith("zero-onnx.toml", `onnx = "/dev/zero"`)}, []string{"zero-onnx.toml", "/dev/zero", "accepted: a regular file"}},
		{[]string{"recipe", "check", recipeWith("fifo-graph.toml", `graph = "`+fifoGraph+`"`)}, []string{fifoGraph, "it is a FIFO; accepted: a regular file"}},
		{[]string{"recipe", "check", fifoRecipe}, []string{fifoRecipe, "it is a FIFO; accepted: a regular file"}},
		{[]string{"recipe", "check", "/dev/zero"}, []string{"/dev/zero", "it is a device; accepted: a regular file"}},
	} {
		out, code := runLimited(t, exe, c.args...)
		if code != 1 {
			t.Errorf("uaxai %s: exit %d, want 1\n%s", strings.Join(c.args, " "), code, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("uaxai %s:\n%s\nwant it to say %q", strings.Join(c.args, " "), out, w)
			}
		}
	}
}

// runLimited runs the binary with args under a minute's deadline and a
// 1 GiB RLIMIT_DATA, and returns its output and exit code (-1 when it was
// killed: by the deadline, which is an error of the test, or by a
// signal).
func runLimited(t *testing.T, exe string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lim := unix.Rlimit{Cur: 1 << 30, Max: 1 << 30}
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_DATA, &lim, nil); err != nil {
		t.Logf("prlimit: %v (running without a memory limit)", err)
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Errorf("uaxai %s: still running after a minute (killed)", strings.Join(args, " "))
	}
	if err != nil && cmd.ProcessState.ExitCode() < 0 {
		return out.String() + "\n" + err.Error(), -1
	}
	return out.String(), cmd.ProcessState.ExitCode()
}
