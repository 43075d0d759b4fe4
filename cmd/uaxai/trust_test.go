package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// trustRecipe is a recipe of built-ins (e2eRecipe's) with a plugin
// directory, to which extra adds tables.
func trustRecipe(t *testing.T, dir, name, plugdir, extra string) string {
	t.Helper()
	p := writeRecipe(t, dir, 2, "occlusion", "stride = 10")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "seed = 3\n", fmt.Sprintf("seed = 3\nplugin_dirs = [%q]\n", plugdir), 1) + extra
	out := filepath.Join(dir, name)
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheckRunsNoRecipeCode: a recipe whose plugin_dirs hold an
// executable uaxai-explainer-nice (a shell script that writes a marker
// file when it runs) and whose summary script panics in its top-level
// code. `uaxai recipe check` and `uaxai slurm submit --dry-run` run
// neither (no marker, no panic), say what they did not start, and still
// fail on a bad key of a built-in's table; the dry run writes nothing.
// `recipe check --trial` runs both. (Before --trial existed, recipe
// check and the dry run started the plugin: the marker was written.)
func TestCheckRunsNoRecipeCode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	exe := buildUaxai(t)
	dir := t.TempDir()
	plugdir := filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugdir, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "nice-ran")
	nicePath := filepath.Join(plugdir, "uaxai-explainer-nice")
	if err := os.WriteFile(nicePath, []byte(fmt.Sprintf("#!/bin/sh\necho \"$$\" > '%s'\nexit 1\n", marker)), 0o755); err != nil {
		t.Fatal(err)
	}
	const panicText = "the top-level code of loud.go ran"
	script := filepath.Join(dir, "loud.go")
	src := "package loud\n\nvar ran = func() int { panic(\"" + panicText + "\") }()\n\n" +
		"func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) { return nil, nil }\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	nice := "\n[[explainer]]\nuse = \"nice\"\n"
	loud := "\n[[summary]]\nscript = \"" + script + "\"\n"
	good := trustRecipe(t, dir, "good.toml", plugdir, nice+loud)
	bad := trustRecipe(t, dir, "bad.toml", plugdir, nice+loud+"\n[[explainer]]\nuse = \"occlusion\"\nlabel = \"o2\"\nwindw = 60\n")
	cli := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	noMarker := func(what, out string) {
		t.Helper()
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s ran %s (marker: %v):\n%s", what, nicePath, err, out)
		}
		if strings.Contains(out, panicText) {
			t.Fatalf("%s ran the top-level code of %s:\n%s", what, script, out)
		}
	}

	out, err := cli("recipe", "check", good)
	noMarker("recipe check", out)
	if err != nil {
		t.Fatalf("recipe check: %v\n%s", err, out)
	}
	for _, w := range []string{"ok (1 posteriors, 2 explainers, 2 summaries)", "not started", "explainer.nice: " + nicePath, "summary script " + script} {
		if !strings.Contains(out, w) {
			t.Errorf("recipe check says\n%s\nwithout %q", out, w)
		}
	}
	out, err = cli("recipe", "check", bad)
	noMarker("recipe check of a bad recipe", out)
	if err == nil || !strings.Contains(out, `unknown key "windw"`) {
		t.Errorf("recipe check of a bad key: %v\n%s", err, out)
	}

	runDir := filepath.Join(dir, "run")
	out, err = cli("slurm", "submit", "--dry-run", "--run-dir", runDir, good)
	noMarker("slurm submit --dry-run", out)
	if err != nil || !strings.Contains(out, "explainer.nice: "+nicePath) || !strings.Contains(out, "nothing written, nothing submitted") {
		t.Errorf("slurm submit --dry-run: %v\n%s", err, out)
	}
	if _, err := os.Stat(runDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("slurm submit --dry-run made %s: %v", runDir, err)
	}
	out, err = cli("slurm", "submit", "--dry-run", "--run-dir", runDir, bad)
	noMarker("slurm submit --dry-run of a bad recipe", out)
	if err == nil || !strings.Contains(out, `unknown key "windw"`) {
		t.Errorf("slurm submit --dry-run of a bad key: %v\n%s", err, out)
	}

	// The trial runs what the recipe brings: the plugin writes its
	// marker (and then fails, being no plugin); the script panics.
	out, err = cli("recipe", "check", "--trial", trustRecipe(t, dir, "nice.toml", plugdir, nice))
	if _, serr := os.Stat(marker); serr != nil || err == nil {
		t.Errorf("recipe check --trial: %v, marker %v\n%s", err, serr, out)
	}
	out, err = cli("recipe", "check", "--trial", trustRecipe(t, dir, "loud.toml", plugdir, loud))
	if err == nil || !strings.Contains(out, panicText) {
		t.Errorf("recipe check --trial of the script: %v\n%s", err, out)
	}
	if _, err := cli("slurm", "submit", "--trial", good); err == nil {
		t.Error("slurm submit --trial without --dry-run was accepted")
	}
}

// TestDryRunOfBuiltins: for a recipe of built-ins, slurm submit --dry-run
// writes the run directory and prints the scripts and sbatch lines, as it
// always did.
func TestDryRunOfBuiltins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	exe := buildUaxai(t)
	dir := t.TempDir()
	rec := writeRecipe(t, dir, 2, "occlusion", "stride = 10")
	runDir := filepath.Join(dir, "run")
	cmd := exec.Command(exe, "slurm", "submit", "--dry-run", "--run-dir", runDir, rec)
	b, err := cmd.CombinedOutput()
	out := string(b)
	if err != nil || strings.Contains(out, "not started") || !strings.Contains(out, "# dry run: nothing submitted") || !strings.Contains(out, "sbatch") {
		t.Fatalf("slurm submit --dry-run: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(runDir, "units", "plan.json")); err != nil {
		t.Errorf("no plan: %v", err)
	}
}
