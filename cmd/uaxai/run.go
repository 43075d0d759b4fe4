package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/progress"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/host/store"
)

// recipeAndManager parses the flags (pluginDir is the --plugins flag's
// value, read after parsing), loads the one
// recipe argument and starts a plugin manager.
func recipeAndManager(fs *flag.FlagSet, args []string, pluginDir *string, stderr io.Writer, usage string) (*recipe.Recipe, *plugin.Manager, error) {
	pos, err := parse(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if len(pos) != 1 {
		return nil, nil, fmt.Errorf("%s", usage)
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
	fs := flags("run", stderr)
	workers := fs.Int("workers", 0, "worker goroutines (0: the recipe's, or all cores)")
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries")
	out := fs.String("out", "", "run directory root (default: the recipe's out)")
	noCache := fs.Bool("no-cache", false, "fit every posterior, and neither read nor write the cache")
	refit := fs.Bool("refit", false, "fit every posterior again and replace its cache entry")
	cacheDir := fs.String("cache", store.DefaultDir(), "posterior cache directory ($UAXAI_CACHE)")
	r, m, err := recipeAndManager(fs, args, plugins, stderr, "usage: uaxai run RECIPE.toml [flags]")
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := m.KillOnSignal(ctx)
	defer stop()
	opt := runner.Options{Plugins: m, Workers: *workers, Out: *out, Observer: progress.Stderr(), Stdout: stdout,
		Command: append([]string{"uaxai", "run"}, args...)}
	if *noCache && *refit {
		return errors.New("run: --no-cache and --refit exclude each other (--refit writes the cache, --no-cache does not touch it)")
	}
	if !*noCache {
		opt.Cache = store.Cache{Dir: *cacheDir, Refit: *refit}
	}
	_, err = runner.Run(ctx, r, opt)
	return err
}

func cmdRecipeCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("recipe check", stderr)
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries")
	r, m, err := recipeAndManager(fs, args, plugins, stderr, "usage: uaxai recipe check RECIPE.toml")
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, stop := m.KillOnSignal(ctx)
	defer stop()
	if err := runner.Check(ctx, r, m); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (%d posteriors, %d explainers, %d summaries)\n", r.Path, len(r.Posteriors), len(r.Explainers), len(r.Summaries))
	return nil
}

func cmdPaper(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("paper", stderr)
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
		return fmt.Errorf("usage: uaxai paper [--quick] [--dir DIR] [--out DIR] [--workers N] [--cache DIR] | uaxai paper --report PAPERDIR")
	}
	if *rewrite != "" {
		po, err := runner.RewritePaperReport(*rewrite)
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
