package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
)

// trustFixture writes, in a new directory, what a recipe can bring that
// runs code: a plugin directory with an executable uaxai-explainer-nice
// (a shell script that writes the file it returns as marker when it is
// run, and is no plugin), and a summary script whose top-level var
// initialiser panics with panicText (yaegi runs it as it loads the
// script; the allow-list has no os, so a panic is its mark).
func trustFixture(t *testing.T) (dir, plugdir, scriptPath, marker string) {
	t.Helper()
	dir = t.TempDir()
	plugdir = filepath.Join(dir, "plugins")
	if err := os.Mkdir(plugdir, 0o755); err != nil {
		t.Fatal(err)
	}
	marker = filepath.Join(dir, "nice-ran")
	sh := fmt.Sprintf("#!/bin/sh\necho \"$$\" > '%s'\nexit 1\n", marker)
	if err := os.WriteFile(filepath.Join(plugdir, "uaxai-explainer-nice"), []byte(sh), 0o755); err != nil {
		t.Fatal(err)
	}
	scriptPath = filepath.Join(dir, "loud.go")
	src := `package loud

var ran = func() int { panic("` + panicText + `") }()

func Summarise(draws [][][]float64, cfg map[string]interface{}) ([][]float64, error) {
	return nil, nil
}
`
	if err := os.WriteFile(scriptPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, plugdir, scriptPath, marker
}

const panicText = "the top-level code of loud.go ran"

// withPluginDir puts plugin_dirs = [plugdir] in a tinyRecipe text.
func withPluginDir(text, plugdir string) string {
	return strings.Replace(text, "seed = 7\n", fmt.Sprintf("seed = 7\nplugin_dirs = [%q]\n", plugdir), 1)
}

// TestCheckStaticRunsNoRecipeCode: CheckStatic (uaxai recipe check)
// starts neither a plugin binary of the recipe's plugin_dirs nor its
// summary script, names both as not started, and still fails a recipe
// on what needs no such code: a bad key of a built-in's table, an
// unknown plugin, a script that does not parse, a built-in's trial.
// Check (recipe check --trial) runs both: the marker file is written,
// and the script's top-level panic is its error.
func TestCheckStaticRunsNoRecipeCode(t *testing.T) {
	dir, plugdir, scriptPath, marker := trustFixture(t)
	ctx := context.Background()
	parse := func(extra string) *recipe.Recipe {
		t.Helper()
		r, err := recipe.Parse("tiny.toml", []byte(withPluginDir(tinyRecipe(filepath.Join(dir, "runs"), extra), plugdir)), dir)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	nice := "\n[[explainer]]\nuse = \"nice\"\n"
	loud := "\n[[summary]]\nscript = \"" + scriptPath + "\"\n"

	skipped, err := CheckStatic(ctx, parse(nice+loud), inProcess(t))
	if err != nil {
		t.Fatalf("CheckStatic: %v", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("CheckStatic ran %s (marker %s: %v)", filepath.Join(plugdir, "uaxai-explainer-nice"), marker, err)
	}
	want := []NotStarted{{ID: "explainer.nice", Source: filepath.Join(plugdir, "uaxai-explainer-nice")}, {ID: scriptPath, Source: scriptPath}}
	if fmt.Sprint(skipped) != fmt.Sprint(want) {
		t.Errorf("not started: %v, want %v", skipped, want)
	}

	// Real errors still fail, at their line, and start nothing either.
	for _, c := range []struct {
		name, extra, marker string
		want                []string
	}{
		{"bad key of a built-in", nice + loud + "\n[[explainer]]\nuse = \"occlusion\"\nlabel = \"o2\"\nwindw = 60\n", "windw = 60",
			[]string{"explainer.occlusion", `unknown key "windw"`}},
		{"unknown plugin", nice + loud + "\n[[explainer]]\nuse = \"nicer\"\n", "[[explainer]]\nuse = \"nicer\"",
			[]string{`unknown plugin "explainer.nicer"`, "explainer.nice", plugdir}},
		{"built-in trial", nice + loud + "\n[[explainer]]\nuse = \"occlusion\"\nlabel = \"w641\"\nwindow = 641\n", "window = 641",
			[]string{"trial on one input of 640 samples", "window 641 is longer than the input"}},
	} {
		text := withPluginDir(tinyRecipe(filepath.Join(dir, "runs"), c.extra), plugdir)
		_, err := CheckStatic(ctx, parse(c.extra), inProcess(t))
		if err == nil {
			t.Errorf("%s: CheckStatic passed", c.name)
			continue
		}
		line := lineOf(text, c.marker)
		for _, w := range append(c.want, fmt.Sprintf("line %d", line)) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
	// A script that does not parse fails at its own line: the parameter
	// list of line 3 is never closed.
	broken := filepath.Join(dir, "broken.go")
	if err := os.WriteFile(broken, []byte("package broken\n\nfunc Summarise(\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = CheckStatic(ctx, parse("\n[[summary]]\nscript = \""+broken+"\"\n"), inProcess(t))
	if err == nil || !strings.Contains(err.Error(), "script "+broken+": line 3") {
		t.Errorf("broken script: %v; want a syntax error of %s at line 3", err, broken)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("CheckStatic ran the plugin on a bad recipe (marker: %v)", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "runs")); len(ents) != 0 {
		t.Errorf("CheckStatic wrote %d run directories", len(ents))
	}

	// Check, the trial, runs them: the plugin writes its marker, the
	// script's package initialisation panics.
	if err := Check(ctx, parse(nice), inProcess(t)); err == nil {
		t.Error("Check passed a plugin that is no plugin")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("Check did not run the plugin: %v", err)
	}
	err = Check(ctx, parse(loud), inProcess(t))
	if err == nil || !strings.Contains(err.Error(), panicText) {
		t.Errorf("Check of the script: %v; want its top-level panic %q", err, panicText)
	}
}

// countingPlugins serves plugins and counts the requests; it is no
// Locator, so CheckStatic cannot tell its built-ins from other code.
type countingPlugins struct {
	engine.Plugins
	n atomic.Int64
}

func (c *countingPlugins) Posterior(ctx context.Context, id string) (sdk.Posterior, error) {
	c.n.Add(1)
	return c.Plugins.Posterior(ctx, id)
}

func (c *countingPlugins) Explainer(ctx context.Context, id string) (driver.Explainer, error) {
	c.n.Add(1)
	return c.Plugins.Explainer(ctx, id)
}

func (c *countingPlugins) Summary(ctx context.Context, id string) (sdk.Summary, error) {
	c.n.Add(1)
	return c.Plugins.Summary(ctx, id)
}

// TestCheckStaticWithoutLocator: plugins that cannot say what is
// built-in are not asked for any plugin by CheckStatic, which lists every
// table's plugin as not started, without a source; Check asks for them.
func TestCheckStaticWithoutLocator(t *testing.T) {
	dir := t.TempDir()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), "")), dir)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingPlugins{Plugins: inProcess(t)}
	skipped, err := CheckStatic(context.Background(), r, p)
	if err != nil || p.n.Load() != 0 {
		t.Fatalf("CheckStatic: %v, %d plugin requests", err, p.n.Load())
	}
	var want []NotStarted
	for _, refs := range [][]recipe.PluginRef{r.Posteriors, r.Explainers, r.Summaries} {
		for _, ref := range refs {
			want = append(want, NotStarted{ID: ref.ID})
		}
	}
	if fmt.Sprint(skipped) != fmt.Sprint(want) {
		t.Errorf("not started: %v, want %v", skipped, want)
	}
	if err := Check(context.Background(), r, p); err != nil || p.n.Load() == 0 {
		t.Errorf("Check: %v, %d plugin requests", err, p.n.Load())
	}
}
