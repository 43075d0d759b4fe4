package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/recipe"
)

func inProcess(t *testing.T) *plugin.Manager {
	t.Helper()
	reg, err := builtin.Registry()
	if err != nil {
		t.Fatal(err)
	}
	m := plugin.NewManager(reg, plugin.Options{InProcess: true})
	t.Cleanup(m.Close)
	return m
}

func lineOf(text, needle string) int {
	return strings.Count(text[:strings.Index(text, needle)], "\n") + 1
}

// TestTooManyDrawsIsACheckError: a finite posterior rejects more draws than
// members at check time, at the line of draws.
func TestTooManyDrawsIsACheckError(t *testing.T) {
	dir := t.TempDir()
	text := strings.Replace(tinyRecipe(dir, ""), "label = \"Deterministic\"", "label = \"Deterministic\"\ndraws = 2", 1)
	r, err := recipe.Parse("tiny.toml", []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	err = Check(context.Background(), r, inProcess(t))
	want := fmt.Sprintf("line %d", lineOf(text, "draws = 2"))
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "accepted: 1..1") {
		t.Errorf("draws = 2 of the deterministic posterior: %v; want an error at %s", err, want)
	}
}

// TestWrongLengthTestSplit: a test folder whose waveforms do not fit the
// model is an error naming it, before any training, never a panic.
func TestWrongLengthTestSplit(t *testing.T) {
	dir := t.TempDir()
	cfg := data.DefaultConfig()
	train, err := data.MakeSplit(context.Background(), cfg, 1, "train", 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	short := data.Split{Name: "short"}
	for _, rec := range train.Records[:3] {
		rec.X, rec.D, rec.Event = rec.X[:320], rec.D[:320], rec.Event[:320]
		short.Records = append(short.Records, rec)
	}
	for name, s := range map[string]data.Split{"train": train, "short": short} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := data.WriteCSV(filepath.Join(dir, name), s); err != nil {
			t.Fatal(err)
		}
	}
	top := `name = "files"
out = "` + filepath.Join(dir, "runs") + `"`
	text := filesRecipe(top, `train = "train"
test = ["short"]
[train]
epochs = 1`)
	r, err := recipe.Parse("files.toml", []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), r, Options{Plugins: inProcess(t)})
	if err == nil || !strings.Contains(err.Error(), "short") || !strings.Contains(err.Error(), "320") {
		t.Errorf("a test split of 320-sample waveforms: %v; want an error naming the folder and the length", err)
	}
}

// cancelAt cancels the run when a stage starts.
type cancelAt struct {
	stage  string
	cancel func()
}

func (c cancelAt) Stage(name string, _ int) {
	if strings.Contains(name, c.stage) {
		c.cancel()
	}
}
func (cancelAt) Advance(int, string) {}
func (cancelAt) Note(string)         {}

// TestInterruptedRunKeepsResults: interrupted while fitting the second
// posterior, the run keeps the first posterior's rows and says so.
func TestInterruptedRunKeepsResults(t *testing.T) {
	dir := t.TempDir()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), "")), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = Run(ctx, r, Options{Plugins: inProcess(t), Observer: cancelAt{stage: "fit Ensemble", cancel: cancel}})
	if err == nil {
		t.Fatal("the interrupted run succeeded")
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "tiny-*"))
	if len(runs) != 1 {
		t.Fatalf("run directories: %v", runs)
	}
	man := string(read(t, filepath.Join(runs[0], "manifest.json")))
	if !strings.Contains(man, `"status": "interrupted"`) || !strings.Contains(man, `"error"`) {
		t.Errorf("manifest of an interrupted run:\n%s", man)
	}
	res := string(read(t, filepath.Join(runs[0], "results.json")))
	if !strings.Contains(res, `"posterior.deterministic"`) || strings.Contains(res, `"posterior.ensemble"`) {
		t.Errorf("results.json should hold the finished deterministic rows only:\n%.400s", res)
	}
	if st, err := os.Stat(filepath.Join(runs[0], "results.json")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("results.json mode %v, want 0644 (%v)", st.Mode().Perm(), err)
	}
	// The files say so themselves, first: a reader of results.json or
	// tables.md alone cannot take the rows for a whole run.
	var first struct{ Key string }
	dec := json.NewDecoder(strings.NewReader(res))
	if _, err := dec.Token(); err == nil {
		if k, err := dec.Token(); err == nil {
			first.Key, _ = k.(string)
		}
	}
	if first.Key != "incomplete" || !strings.Contains(res, inProgress) {
		t.Errorf("results.json of an interrupted run starts with key %q, want \"incomplete\":\n%.300s", first.Key, res)
	}
	md := string(read(t, filepath.Join(runs[0], "tables.md")))
	if line, _, _ := strings.Cut(md, "\n"); !strings.HasPrefix(line, "> **Incomplete run**: ") {
		t.Errorf("tables.md of an interrupted run starts %q", line)
	}
	// A finished run's files carry no mark.
	o, err := Run(context.Background(), r, Options{Plugins: inProcess(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.json", "tables.md"} {
		if b := read(t, filepath.Join(o.Dir, f)); bytes.Contains(b, []byte("ncomplete")) {
			t.Errorf("%s of a finished run is marked incomplete:\n%.300s", f, b)
		}
	}
}

// TestScriptCrashFailsTheRunCleanly: a script that overflows its stack,
// or that loops past the recipe's limits.summarise_batch, ends its own
// process only: the run fails with an error that names the script (ID
// and path), keeps its run directory, and its manifest says "failed".
// The scripts misbehave only on batches of several inputs, so that they
// pass recipe check's trial (one input) and fail in the run itself.
func TestScriptCrashFailsTheRunCleanly(t *testing.T) {
	for _, c := range []struct {
		name, body, limits string
		want               []string
	}{
		{"overflow", "func deeper(n int) int { return deeper(n+1) + 1 }\n" +
			"func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n\tif len(draws) > 1 {\n\t\tdeeper(0)\n\t}\n\tout := make([][]float64, len(draws))\n\tfor i := range draws {\n\t\tout[i] = draws[i][0]\n\t}\n\treturn out, nil\n}\n",
			"", []string{"died during Summarise: fatal error: stack overflow"}},
		{"spin", "func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {\n\tfor len(draws) > 1 {\n\t}\n\tout := make([][]float64, len(draws))\n\tfor i := range draws {\n\t\tout[i] = draws[i][0]\n\t}\n\treturn out, nil\n}\n",
			"\n[limits]\nsummarise_batch = \"1s\"\n", []string{"Summarise: no answer within 1s (limits.summarise_batch); killed its process group"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.name+".go")
			if err := os.WriteFile(path, []byte("//go:build ignore\n\npackage "+c.name+"\n\n"+c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			text := strings.Replace(tinyRecipe(filepath.Join(dir, "runs"), "\n[[summary]]\nscript = \""+path+"\"\n"), "epochs = 2", "epochs = 1", 1) + c.limits
			r, err := recipe.Parse("tiny.toml", []byte(text), dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Run(context.Background(), r, Options{Plugins: inProcess(t), Workers: 2})
			if err == nil {
				t.Fatal("the run succeeded")
			}
			// The engine names the batch; the plugin manager the script,
			// its path, its process, the call and what happened.
			for _, w := range append(c.want, "summary.script-"+c.name+" on split test-0 records 0..", "summary.script-"+c.name+" (script "+path+", pid ") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			runs, _ := filepath.Glob(filepath.Join(dir, "runs", "tiny-*"))
			if len(runs) != 1 {
				t.Fatalf("run directories: %v", runs)
			}
			var man struct{ Status, Error string }
			if err := json.Unmarshal(read(t, filepath.Join(runs[0], "manifest.json")), &man); err != nil {
				t.Fatal(err)
			}
			if man.Status != "failed" || !strings.Contains(man.Error, c.want[0]) {
				t.Errorf("manifest: status %q, error %q", man.Status, man.Error)
			}
		})
	}
}

// TestLimitsDefaultsAgree: the recipe's [limits] defaults are the plugin
// manager's, key by key, and a recipe's limits reach the manager whole.
func TestLimitsDefaultsAgree(t *testing.T) {
	if got, want := PluginLimits(recipe.DefaultLimits()), plugin.DefaultLimits(); got != want {
		t.Errorf("recipe defaults %+v, manager defaults %+v", got, want)
	}
	l := recipe.Limits{Handshake: 1, Check: 2, Fit: 3, Sample: 4, Load: 5, ExplainBatch: 6, SummariseBatch: 7, ScriptMemory: 8}
	want := plugin.Limits{Handshake: 1, Check: 2, Fit: 3, Sample: 4, Load: 5, Explain: 6, Summarise: 7, ScriptMemory: 8}
	if got := PluginLimits(l); got != want {
		t.Errorf("PluginLimits(%+v) = %+v, want %+v", l, got, want)
	}
}
