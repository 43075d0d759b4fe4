package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk/nn"
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

// TestInterruptedRunResumes: interrupted while fitting the second
// posterior, the run keeps the first posterior's fit unit, its manifest
// says "interrupted" and how to finish; Resume then finishes it with the
// same result bytes as a run that was never interrupted, without fitting
// the first posterior again.
func TestInterruptedRunResumes(t *testing.T) {
	dir := t.TempDir()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), "")), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = Run(ctx, r, Options{Plugins: inProcess(t), Observer: cancelAt{stage: "fit Ensemble", cancel: cancel}})
	if err == nil || !strings.Contains(err.Error(), "uaxai run --resume") {
		t.Fatalf("the interrupted run: %v; want an error that says how to resume", err)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "runs", "tiny-*"))
	if len(runs) != 1 {
		t.Fatalf("run directories: %v", runs)
	}
	man := string(read(t, filepath.Join(runs[0], "manifest.json")))
	if !strings.Contains(man, `"status": "interrupted"`) || !strings.Contains(man, `"error"`) {
		t.Errorf("manifest of an interrupted run:\n%s", man)
	}
	units, _ := filepath.Glob(filepath.Join(runs[0], "units", "*.unit"))
	if len(units) != 1 || filepath.Base(units[0]) != "fit-00.unit" {
		t.Errorf("units kept: %v, want the deterministic fit only", units)
	}
	if _, err := os.Stat(filepath.Join(runs[0], "results.json")); err == nil {
		t.Error("an interrupted run wrote results.json")
	}
	obs := &stageNotes{}
	o, err := Resume(context.Background(), runs[0], Options{Plugins: inProcess(t), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if obs.staged("fit Deterministic") {
		t.Error("the resumed run fitted the deterministic posterior again")
	}
	whole, err := Run(context.Background(), r, Options{Plugins: inProcess(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.json", "records.csv", "tables.md"} {
		if a, b := read(t, filepath.Join(o.Dir, f)), read(t, filepath.Join(whole.Dir, f)); !bytes.Equal(a, b) {
			t.Errorf("%s of the resumed run differs from an uninterrupted run's", f)
		}
	}
	if man := string(read(t, filepath.Join(o.Dir, "manifest.json"))); !strings.Contains(man, `"status": "complete"`) || !strings.Contains(man, `"kernels": "`+nn.Kernels()+`"`) {
		t.Errorf("manifest after resuming (the kernels %s in it):\n%s", nn.Kernels(), man)
	}
}

// stageNotes is an Observer that keeps notes and stage names.
type stageNotes struct {
	mu     sync.Mutex
	list   []string
	stages []string
}

func (n *stageNotes) Stage(name string, _ int) {
	n.mu.Lock()
	n.stages = append(n.stages, name)
	n.mu.Unlock()
}
func (n *stageNotes) Advance(int, string) {}
func (n *stageNotes) Note(m string)       { n.mu.Lock(); n.list = append(n.list, m); n.mu.Unlock() }
func (n *stageNotes) staged(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Contains(n.stages, name)
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
