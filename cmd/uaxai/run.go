package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/paperreport"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/progress"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/host/store"
)

// recipeAndManager parses the flags (pluginDir is the --plugins flag's
// value, read after parsing), loads the one
// recipe argument and starts a plugin manager.
func recipeAndManager(fs *flagSet, args []string, pluginDir *string, stderr io.Writer) (*recipe.Recipe, *plugin.Manager, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if len(pos) != 1 {
		return nil, nil, fs.usageError(fmt.Sprintf("want one recipe, have %d arguments", len(pos)))
	}
	r, err := recipe.Load(pos[0])
	if err != nil {
		return nil, nil, err
	}
	m, err := newManager(*pluginDir, stderr)
	if err != nil {
		return nil, nil, err
	}
	return r, m, nil
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("run", stdout, stderr)
	workers := fs.Int("workers", 0, "worker goroutines (0: the recipe's, or all cores)")
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries")
	out := fs.String("out", "", "run directory root (default: the recipe's out)")
	noCache := fs.Bool("no-cache", false, "fit every posterior, and neither read nor write the cache")
	refit := fs.Bool("refit", false, "fit every posterior again and replace its cache entry")
	cacheDir := fs.String("cache", store.DefaultDir(), "posterior cache directory ($UAXAI_CACHE)")
	runDir := fs.String("run-dir", "", "the run directory (shared by the shards of a run); default: a new one under --out")
	shardFlag := fs.String("shard", "", "i/n: do only shard i of n of the run's units into --run-dir, and merge nothing (uaxai merge does)")
	kind := fs.String("units", "all", "with --shard: the units to shard: fit, explain or all")
	prepare := fs.Bool("prepare", false, "check the recipe and write --run-dir's recipe.toml and units/plan.json; run nothing")
	resume := fs.String("resume", "", "finish the interrupted run in this directory (its recipe.toml), then merge")
	lf := addLimitFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *resume == "" && len(pos) != 1:
		return fs.usageError(fmt.Sprintf("want one recipe, have %d arguments", len(pos)))
	case *resume != "" && len(pos) > 0:
		return fs.usageError(fmt.Sprintf("--resume %s takes no recipe (it reruns RUN_DIR/recipe.toml), have %q", *resume, pos[0]))
	}
	if *noCache && *refit {
		return errors.New("run: --no-cache and --refit exclude each other (--refit writes the cache, --no-cache does not touch it)")
	}
	var shard *engine.Shard
	if *shardFlag != "" {
		sh, err := parseShard(*shardFlag, *kind)
		if err != nil {
			return err
		}
		shard = &sh
	} else if isSet(fs, "units") {
		return errors.New("run: --units goes with --shard")
	}
	if (shard != nil || *prepare) && *runDir == "" {
		return errors.New("run: --shard and --prepare need --run-dir DIR, the directory every shard shares")
	}
	if *resume != "" && (shard != nil || *prepare || *runDir != "") {
		return errors.New("run: --resume DIR takes no recipe, --run-dir, --shard or --prepare: it finishes the run in DIR")
	}
	if *prepare && shard != nil {
		return errors.New("run: --prepare runs nothing, so it takes no --shard")
	}
	return withManager(ctx, *plugins, stderr, func(ctx context.Context, m *plugin.Manager) error {
		opt := runner.Options{Plugins: m, Workers: *workers, Out: *out, Observer: progress.Stderr(), Stdout: stdout,
			Command: append([]string{"uaxai", "run"}, args...), RunDir: *runDir, Shard: shard, Limits: *lf}
		if !*noCache {
			opt.Cache = store.Cache{Dir: *cacheDir, Refit: *refit}
		}
		if *resume != "" {
			_, err := runner.Resume(ctx, *resume, opt)
			return err
		}
		r, err := recipe.Load(pos[0])
		if err != nil {
			return err
		}
		if *prepare {
			fit, explain, err := runner.Prepare(ctx, r, opt, *runDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: prepared: %d fit units, %d explain units\n", *runDir, fit, explain)
			return nil
		}
		_, err = runner.Run(ctx, r, opt)
		return err
	})
}

// parseShard reads --shard i/n and --units.
func parseShard(s, kind string) (engine.Shard, error) {
	var sh engine.Shard
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return sh, fmt.Errorf("run: --shard %q: accepted: i/n with 0 <= i < n, e.g. 0/4", s)
	}
	switch kind {
	case "all":
		kind = ""
	case engine.FitUnit, engine.ExplainUnit:
	default:
		return sh, fmt.Errorf("run: --units %q: accepted: fit, explain or all", kind)
	}
	return engine.Shard{I: i, N: n, Kind: kind}, nil
}

func cmdMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("merge", stdout, stderr)
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.usageError(fmt.Sprintf("want one run directory, have %d arguments", len(pos)))
	}
	return withManager(ctx, *plugins, stderr, func(ctx context.Context, m *plugin.Manager) error {
		opt := runner.Options{Plugins: m, Observer: progress.Stderr(), Stdout: stdout, Command: append([]string{"uaxai", "merge"}, args...)}
		_, err := runner.Merge(ctx, pos[0], opt)
		return err
	})
}

// checkDetails is the -h text of recipe check: what it runs.
const checkDetails = `
A recipe with plugin_dirs or summary scripts is code, like a Makefile:
its plugin binaries, Python plugins and scripts run with your rights
when the recipe runs. Run only recipes you trust.

recipe check runs none of that code. It decodes and validates the
recipe, checks that its files and plugin directories exist, finds every
plugin it names (reading plugin directories and plugin.toml manifests
as data) and parses its summary scripts without interpreting them. Only
the built-in plugins, compiled into uaxai, are started: each checks its
table and is tried on one input of the recipe's shape (the trial). A
plugin of the plugin directories is not started, so its table is not
checked; the command names every plugin and script it did not start.

With --trial it starts them too, as a run would: each checks its table
and is tried on one input, and each summary script is loaded (its
package initialisation runs) and checks its table.
`

func cmdRecipeCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("recipe check", stdout, stderr)
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries")
	trial := fs.Bool("trial", false, "also start the recipe's own plugins (binaries, Python) and summary scripts: each checks its table and is tried on one input; this runs their code")
	r, m, err := recipeAndManager(fs, args, plugins, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := m.KillOnSignal(ctx)
	defer stop()
	if *trial {
		if err := runner.Check(ctx, r, m); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: ok (%d posteriors, %d explainers, %d summaries; every plugin and script started and tried)\n", r.Path, len(r.Posteriors), len(r.Explainers), len(r.Summaries))
		return nil
	}
	skipped, err := runner.CheckStatic(ctx, r, m)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (%d posteriors, %d explainers, %d summaries)\n", r.Path, len(r.Posteriors), len(r.Explainers), len(r.Summaries))
	writeNotStarted(stdout, skipped)
	return nil
}

// writeNotStarted lists the plugins and scripts a check without --trial
// found and did not start, if any.
func writeNotStarted(w io.Writer, skipped []runner.NotStarted) {
	if len(skipped) == 0 {
		return
	}
	fmt.Fprintln(w, "not started (they are code that comes with the recipe or the plugin directories; --trial starts them and checks their tables):")
	for _, s := range skipped {
		switch s.Source {
		case s.ID:
			fmt.Fprintf(w, "  summary script %s (parsed, not run)\n", s.ID)
		case "":
			fmt.Fprintf(w, "  %s\n", s.ID)
		default:
			fmt.Fprintf(w, "  %s: %s\n", s.ID, s.Source)
		}
	}
}

func cmdPaper(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("paper", stdout, stderr)
	quick := fs.Bool("quick", false, "run the quick variants (recipes/paper/quick): minutes, numbers that mean nothing")
	dir := fs.String("dir", "", "folder of the recipes (default recipes/paper, or recipes/paper/quick with --quick)")
	workers := fs.Int("workers", 0, "worker goroutines (0: the recipe's, or all cores)")
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries")
	out := fs.String("out", "runs", "root of the report directory paper-<time>/")
	cacheDir := fs.String("cache", store.DefaultDir(), "posterior cache directory ($UAXAI_CACHE), shared by the recipes")
	rewrite := fs.String("report", "", "write REPORT.md of an earlier paper directory again, from its run directories, and run nothing")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return fs.usageError(fmt.Sprintf("unexpected argument %q (every setting is a flag)", pos[0]))
	}
	if *rewrite != "" {
		po, err := paperreport.Rewrite(*rewrite)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "report:", filepath.Join(po.Dir, "REPORT.md"))
		return nil
	}
	if *dir == "" {
		*dir = "recipes/paper"
		if *quick {
			*dir = "recipes/paper/quick"
		}
	}
	m, err := newManager(*plugins, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := m.KillOnSignal(ctx)
	defer stop()
	opt := runner.Options{Plugins: m, Workers: *workers, Observer: progress.Stderr(), Stdout: stdout,
		Command: append([]string{"uaxai", "paper"}, args...), Cache: store.Cache{Dir: *cacheDir}}
	po, err := runner.Paper(ctx, *dir, *out, opt, stderr)
	if po != nil {
		fmt.Fprintln(stdout, "report:", filepath.Join(po.Dir, "REPORT.md"))
	}
	return err
}
