package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uaxai/uaxai/internal/proctest"
	"github.com/uaxai/uaxai/plugins/explainer/occlusion"
)

const e2eRecipe = `name = "e2e"
seed = 3
[data]
train_per_class = 10
val_fraction = 0.2
test_splits = 2
test_per_class = %d
[train]
epochs = 1
[[posterior]]
use = "ensemble"
draws = 2
members = 2
[[explainer]]
use = "%s"
%s
[[summary]]
use = "mean"
`

func writeRecipe(t *testing.T, dir string, perClass int, explainer, extra string) string {
	p := filepath.Join(dir, "r.toml")
	body := strings.Replace(strings.Replace(strings.Replace(e2eRecipe, "%d", strconv.Itoa(perClass), 1), "%s", explainer, 1), "%s", extra, 1)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func findRunDir(t *testing.T, root string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(root, "e2e-*"))
	if len(m) != 1 {
		t.Fatalf("run directories under %s: %v", root, m)
	}
	return m[0]
}

// TestRunOutOfProcess runs a recipe through real plugin processes with 1
// and 2 workers: results.json is the same bytes.
func TestRunOutOfProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	exe := buildUaxai(t)
	dir := t.TempDir()
	rec := writeRecipe(t, dir, 2, "occlusion", "stride = 10")
	var results [][]byte
	for _, w := range []string{"1", "2"} {
		out := filepath.Join(dir, "out"+w)
		cmd := exec.Command(exe, "run", rec, "--workers", w, "--out", out, "--no-cache")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("workers %s: %v\n%s", w, err, b)
		}
		b, err := os.ReadFile(filepath.Join(findRunDir(t, out), "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, b)
	}
	if !bytes.Equal(results[0], results[1]) {
		t.Error("results.json differs between 1 and 2 workers")
	}
}

// childWith returns the pid of a child process of parent whose command
// line contains s, or 0.
func childWith(parent int, s string) int {
	for _, p := range proctest.List() {
		if p.PPid == parent && strings.Contains(p.Cmdline, s) {
			return p.Pid
		}
	}
	return 0
}

// TestKilledExplainerIsNamed: the explainer runs as its own process; killed
// during the explanation stage, the run fails with an error naming it, and
// no plugin process is left behind.
func TestKilledExplainerIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	exe := buildUaxai(t)
	dir := t.TempDir()
	rec := writeRecipe(t, dir, 40, "occlusion", "stride = 1")
	cmd := exec.Command(exe, "run", rec, "--workers", "1", "--out", filepath.Join(dir, "out"), "--no-cache")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	killed := false
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if !killed && strings.HasPrefix(line, "explain ") {
			pid := childWith(cmd.Process.Pid, "plugin serve explainer.occlusion")
			if pid == 0 {
				t.Fatalf("no explainer process under pid %d during the run", cmd.Process.Pid)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("the run never reached the explanation stage:\n%s", log.String())
	}
	if err == nil {
		t.Fatalf("the run succeeded after its explainer was killed:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "explainer.occlusion") {
		t.Errorf("the error does not name the explainer:\n%s", log.String())
	}
	time.Sleep(200 * time.Millisecond)
	if pid := childWith(cmd.Process.Pid, "plugin serve"); pid != 0 {
		t.Errorf("plugin process %d left behind", pid)
	}
}

// TestThirdPartyPlugin builds the example gradient x input explainer as its
// own binary, discovers it in a plugin directory and runs it in a recipe.
func TestThirdPartyPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs binaries")
	}
	t.Parallel() // a slow run of the binary: see shared_test.go
	exe := buildUaxai(t)
	plugdir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(plugdir, "uaxai-explainer-gradinput"), "../../plugins/explainer/gradinput/cmd/uaxai-explainer-gradinput")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the plugin: %v\n%s", err, b)
	}
	out, err := exec.Command(exe, "plugins", "--plugins", plugdir, "--scripts", "../../recipes/scripts").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "explainer.gradinput") || !strings.Contains(string(out), plugdir) {
		t.Fatalf("plugins does not list the binary (%v):\n%s", err, out)
	}
	for _, want := range []string{occlusionLine(),
		"explainer.gradinput          explainer  1.0.0    binary   " + filepath.Join(plugdir, "uaxai-explainer-gradinput"),
		"summary.trimmed_mean", "go       script ../../recipes/scripts/trimmed_mean.go"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("plugins output lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	rec := writeRecipe(t, dir, 2, "gradinput", "")
	b, err := exec.Command(exe, "run", rec, "--plugins", plugdir, "--out", filepath.Join(dir, "out"), "--no-cache").CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, b)
	}
	rd := findRunDir(t, filepath.Join(dir, "out"))
	res, err := os.ReadFile(filepath.Join(rd, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"explainer.gradinput"`) {
		t.Error("results.json has no gradinput row")
	}
}

// TestDataGenerate: the command writes every file, the same seed gives the
// same bytes, and the files read back.
func TestDataGenerate(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		var out, errb bytes.Buffer
		if code := run([]string{"data", "generate", "--per-class", "3", "--seed", "5", "--out", d}, &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	}
	for _, f := range []string{"waveforms.csv", "labels.csv", "disturbance.csv", "event.csv", "params.jsonl", "dataset.json"} {
		a, err := os.ReadFile(filepath.Join(dirs[0], f))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dirs[1], f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs with the same seed", f)
		}
	}
	w, _ := os.ReadFile(filepath.Join(dirs[0], "waveforms.csv"))
	lines := strings.Split(strings.TrimSpace(string(w)), "\n")
	if len(lines) != 48 || len(strings.Split(lines[0], ",")) != 640 {
		t.Errorf("waveforms.csv: %d lines of %d values, want 48 of 640", len(lines), len(strings.Split(lines[0], ",")))
	}
	var errb bytes.Buffer
	if code := run([]string{"data", "generate", "--per-class", "3", "--out", t.TempDir(), "--f0", "-1"}, &bytes.Buffer{}, &errb); code == 0 || !strings.Contains(errb.String(), "F0") {
		t.Errorf("f0 = -1: exit %d, %q", code, errb.String())
	}
}

// TestDataGeneratePaper: --paper writes the recipes' splits, and they agree
// with plain generation: train and val together are the "train" pool (as
// sets of lines), val holds round(val*N) records a class, and each test
// split is the plain split of that name, byte for byte.
func TestDataGeneratePaper(t *testing.T) {
	gen := func(args ...string) string {
		t.Helper()
		d := t.TempDir()
		var out, errb bytes.Buffer
		if code := run(append([]string{"data", "generate", "--seed", "9", "--out", d}, args...), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return d
	}
	lines := func(path string) []string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	paper := gen("--paper", "--per-class", "10", "--val", "0.2", "--test-splits", "2", "--test-per-class", "3")
	pool := gen("--split", "train", "--per-class", "10")
	got := append(lines(filepath.Join(paper, "train", "waveforms.csv")), lines(filepath.Join(paper, "val", "waveforms.csv"))...)
	want := lines(filepath.Join(pool, "waveforms.csv"))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("train + val (%d lines) is not the pool (%d lines)", len(got), len(want))
	}
	perClass := map[string]int{}
	for _, l := range lines(filepath.Join(paper, "val", "labels.csv")) {
		perClass[l]++
	}
	if len(perClass) != 16 {
		t.Errorf("val holds %d classes, want 16", len(perClass))
	}
	for c, n := range perClass {
		if n != 2 {
			t.Errorf("val holds %d records of class %s, want round(0.2*10) = 2", n, c)
		}
	}
	test1 := gen("--split", "test-1", "--per-class", "3")
	for _, f := range []string{"waveforms.csv", "labels.csv", "disturbance.csv", "event.csv", "params.jsonl"} {
		if !slices.Equal(lines(filepath.Join(paper, "test-1", f)), lines(filepath.Join(test1, f))) {
			t.Errorf("test-1/%s differs from the plain split test-1", f)
		}
	}
	if _, err := os.Stat(filepath.Join(paper, "test-2")); err == nil {
		t.Error("test-2 written for --test-splits 2")
	}
	var errb bytes.Buffer
	if code := run([]string{"data", "generate", "--paper", "--per-class", "10", "--val", "1", "--out", t.TempDir()}, &bytes.Buffer{}, &errb); code == 0 || !strings.Contains(errb.String(), "--val 1: want a fraction in [0, 1)") {
		t.Errorf("--val 1: exit %d, %q", code, errb.String())
	}
	for _, args := range [][]string{{"--test-splits", "2"}, {"--paper", "--split", "x"}} {
		errb.Reset()
		if code := run(append([]string{"data", "generate", "--out", t.TempDir()}, args...), &bytes.Buffer{}, &errb); code == 0 || !strings.Contains(errb.String(), "--paper") {
			t.Errorf("%v: exit %d, %q", args, code, errb.String())
		}
	}
}

// TestCacheFlags: a run fills the cache; --refit fits again and rewrites
// the entries (same bytes, a fit is deterministic); --no-cache neither
// reads nor writes; the two together are refused.
func TestCacheFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	t.Parallel() // a slow run of the binary: see shared_test.go
	exe := buildUaxai(t)
	dir := t.TempDir()
	rec := writeRecipe(t, dir, 2, "occlusion", "stride = 20")
	cache := filepath.Join(dir, "cache")
	run := func(flags ...string) string {
		t.Helper()
		args := append([]string{"run", rec, "--workers", "2", "--out", filepath.Join(dir, "out"), "--cache", cache}, flags...)
		b, err := exec.Command(exe, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", flags, err, b)
		}
		return string(b)
	}
	entries := func() map[string]time.Time {
		m := map[string]time.Time{}
		files, _ := filepath.Glob(filepath.Join(cache, "posteriors", "*.safetensors"))
		for _, f := range files {
			if st, err := os.Stat(f); err == nil {
				m[f] = st.ModTime()
			}
		}
		return m
	}
	if log := run("--no-cache"); strings.Contains(log, "from the cache") || len(entries()) != 0 {
		t.Fatalf("--no-cache on an empty cache wrote %d entries or hit it:\n%s", len(entries()), log)
	}
	run()
	first := entries()
	if len(first) == 0 {
		t.Fatal("a run stored nothing")
	}
	if log := run(); !strings.Contains(log, "from the cache") {
		t.Errorf("a second run did not use the cache:\n%s", log)
	}
	time.Sleep(20 * time.Millisecond) // modification times must be able to differ
	if log := run("--refit"); strings.Contains(log, "from the cache") {
		t.Errorf("--refit read the cache:\n%s", log)
	}
	refit := entries()
	for f, mt := range first {
		if !refit[f].After(mt) {
			t.Errorf("--refit did not rewrite %s", f)
		}
	}
	if len(refit) != len(first) {
		t.Errorf("--refit left %d entries, want %d", len(refit), len(first))
	}
	if log := run("--no-cache"); strings.Contains(log, "from the cache") || !maps.Equal(entries(), refit) {
		t.Errorf("--no-cache read or wrote the cache:\n%s", log)
	}
	b, err := exec.Command(exe, "run", rec, "--no-cache", "--refit").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "--no-cache and --refit exclude each other") {
		t.Errorf("--no-cache --refit: %v\n%s", err, b)
	}
}

// TestPluginsListsProblems: `uaxai plugins` lists a plugin binary that
// fails to start and a non-executable one, each with its problem, and
// exits non-zero because of the first.
func TestPluginsListsProblems(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	exe := buildUaxai(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "uaxai-explainer-bad"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "uaxai-summary-noexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	badDir := filepath.Join(dir, "uaxai-explainer-badtoml")
	if err := os.Mkdir(badDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(badDir, "plugin.toml"), []byte("command = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "plugins", "--plugins", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("exit: %v, want a non-zero status", err)
	}
	out := stdout.String()
	for _, want := range []string{
		"ID                           KIND       VERSION  LANGUAGE SOURCE\n",
		"explainer.bad                explainer  -        script   " + filepath.Join(dir, "uaxai-explainer-bad") + ": failed to start",
		"summary.noexec               summary    -        -        " + filepath.Join(dir, "uaxai-summary-noexec") + ": not an executable file (mode 0644)",
		occlusionLine(),
		"explainer.badtoml            explainer  -        -        " + badDir + ": bad plugin.toml (see the error)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plugins output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), `starting plugin "explainer.bad"`) {
		t.Errorf("stderr does not name the failing plugin:\n%s", stderr.String())
	}
	if want := "plugin manifest " + filepath.Join(badDir, "plugin.toml") + `: key "command": 3 is an integer, want a string`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
}

// occlusionLine is `uaxai plugins`'s line of the built-in occlusion, at
// its version.
func occlusionLine() string {
	return fmt.Sprintf("explainer.occlusion          explainer  %-8s go       built-in", occlusion.New().Info().Version)
}

// TestOnceWarner: each distinct warning is written once, prefixed.
func TestOnceWarner(t *testing.T) {
	var b strings.Builder
	w := onceWarner(&b)
	for _, m := range []string{"a", "b", "a", "a"} {
		w(m)
	}
	if got := b.String(); got != "uaxai: warning: a\nuaxai: warning: b\n" {
		t.Errorf("%q", got)
	}
}

// TestKernelsEnvRefused: an UAXAI_KERNELS value that cannot be had stops
// every command at once (exit 2) with what is accepted; "portable" runs.
func TestKernelsEnvRefused(t *testing.T) {
	exe := buildUaxai(t)
	cmd := exec.Command(exe, "help")
	cmd.Env = append(os.Environ(), "UAXAI_KERNELS=fast")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), `uaxai: UAXAI_KERNELS="fast" (accepted: avx2, portable, or unset for the CPU's best)`) {
		t.Errorf("UAXAI_KERNELS=fast: %v\n%s", err, out)
	}
	cmd = exec.Command(exe, "help")
	cmd.Env = append(os.Environ(), "UAXAI_KERNELS=portable")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("UAXAI_KERNELS=portable: %v\n%s", err, out)
	}
}
