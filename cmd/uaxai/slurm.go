package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/host/slurm"
	"github.com/uaxai/uaxai/host/store"
)

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// slurmSubmitDetails is the -h text of slurm submit: what --dry-run runs.
const slurmSubmitDetails = `
A submission checks the recipe and counts its units with every plugin
it names started, its own plugin binaries and scripts included: a
recipe with plugin_dirs or summary scripts is code; submit only recipes
you trust.

--dry-run starts none of the recipe's own plugins and scripts: it checks
the recipe as uaxai recipe check does (built-in plugins only). For a
recipe whose plugins are all built-in it then writes the run directory
and the scripts and prints them and the sbatch lines. For one with
plugins of its plugin directories or summary scripts it names them and
stops, writing nothing: counting the units would start them.
--dry-run --trial starts them, and prints the scripts.
`

func cmdSlurmSubmit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("slurm submit", stdout, stderr)
	runDir := fs.String("run-dir", "", "run directory, on a file system every node sees (default: <out>/<name>-<time>)")
	out := fs.String("out", "", "run directory root when --run-dir is not given (default: the recipe's out)")
	shards := fs.Int("shards", 0, fmt.Sprintf("explain array tasks (default: [slurm] shards, or %d; at most the explain units)", slurm.DefaultShards))
	partition := fs.String("partition", "", "sbatch --partition (default: [slurm] partition)")
	timeLimit := fs.String("time", "", "sbatch --time, Slurm's format (default: [slurm] time)")
	cpus := fs.Int("cpus-per-task", 0, "sbatch --cpus-per-task, and each task's --workers (default: [slurm] cpus_per_task, or 1)")
	mem := fs.String("mem", "", "sbatch --mem (default: [slurm] mem, or none asked for)")
	account := fs.String("account", "", "sbatch --account (default: [slurm] account)")
	var sbatchArgs multi
	fs.Var(&sbatchArgs, "sbatch-arg", "a further sbatch option, one word (\"--qos=long\"); repeatable; replaces [slurm] sbatch_args")
	cacheDir := fs.String("cache", store.DefaultDir(), "posterior cache directory of the jobs, on a shared file system ($UAXAI_CACHE)")
	noCache := fs.Bool("no-cache", false, "the jobs neither read nor write the cache")
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries (on a shared file system)")
	bin := fs.String("uaxai", "", "the uaxai binary the jobs run, on a shared file system (default: this one, copied to DIR/bin/uaxai)")
	dryRun := fs.Bool("dry-run", false, "write and print the scripts and the sbatch command lines; submit nothing, and start none of the recipe's own plugins and scripts")
	trial := fs.Bool("trial", false, "with --dry-run: start the recipe's own plugins and scripts, as a submission does, to check them and count the units")
	resume := fs.String("resume", "", "resubmit the array tasks of DIR with missing units, and a merge job")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *trial && !*dryRun {
		return fmt.Errorf("slurm submit: --trial goes with --dry-run (a submission starts every plugin and script of the recipe anyway)")
	}
	if !*dryRun {
		if _, err := exec.LookPath("sbatch"); err != nil {
			return fmt.Errorf("slurm submit: sbatch is not on PATH: run it on a host that submits Slurm jobs (--dry-run prints the scripts and sbatch lines without Slurm)")
		}
	}
	if *resume != "" {
		if len(pos) != 0 {
			return fs.usageError(fmt.Sprintf("--resume %s takes no recipe (have %q): it reuses RUN_DIR/recipe.toml and the settings in RUN_DIR/slurm/jobs.json", *resume, pos[0]))
		}
		var set []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "resume" && f.Name != "dry-run" {
				set = append(set, "--"+f.Name)
			}
		})
		if len(set) > 0 {
			return fmt.Errorf("slurm submit --resume: %s cannot change a submitted run (its scripts and settings are in %s)", strings.Join(set, ", "), filepath.Join(*resume, "slurm"))
		}
		_, err := slurm.Resume(ctx, slurm.CLI{}, *resume, *dryRun, stdout)
		return err
	}
	if len(pos) != 1 {
		return fs.usageError(fmt.Sprintf("want one recipe, have %d arguments", len(pos)))
	}
	r, err := recipe.Load(pos[0])
	if err != nil {
		return err
	}
	// [slurm], then the flags, key by key.
	var sb recipe.Slurm
	if r.Slurm != nil {
		sb = *r.Slurm
	}
	for _, o := range []struct {
		flag string
		set  func()
	}{
		{"shards", func() { sb.Shards = *shards }},
		{"partition", func() { sb.Partition = *partition }},
		{"time", func() { sb.Time = *timeLimit }},
		{"cpus-per-task", func() { sb.CPUsPerTask = *cpus }},
		{"mem", func() { sb.Mem = *mem }},
		{"account", func() { sb.Account = *account }},
		{"sbatch-arg", func() { sb.SbatchArgs = sbatchArgs }},
	} {
		if isSet(fs, o.flag) {
			o.set()
		}
	}
	if err := sb.Validate(); err != nil {
		return fmt.Errorf("slurm submit: %w (from the flags or [slurm] of %s)", err, r.Path)
	}
	if *noCache && isSet(fs, "cache") {
		return fmt.Errorf("slurm submit: --no-cache and --cache exclude each other")
	}
	if *dryRun && !*trial {
		// Built-ins only: a recipe's own plugins and scripts would run to
		// count the units; then the dry run stops here, having written
		// nothing.
		var skipped []runner.NotStarted
		err := withManager(ctx, *plugins, stderr, func(ctx context.Context, m *plugin.Manager) (err error) {
			skipped, err = runner.CheckStatic(ctx, r, m)
			return err
		})
		if err != nil {
			return err
		}
		if len(skipped) > 0 {
			fmt.Fprintf(stdout, "%s: checked, without starting its own plugins and scripts\n", r.Path)
			writeNotStarted(stdout, skipped)
			fmt.Fprintln(stdout, "# dry run: nothing written, nothing submitted: counting the units and writing the run directory would start them (--dry-run --trial does)")
			return nil
		}
	}
	dir := *runDir
	if dir == "" {
		root := r.Out
		if *out != "" {
			root = *out
		}
		if dir, err = report.NewRunDir(root, r.Name, time.Now()); err != nil {
			return fmt.Errorf("slurm submit: %w", err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("slurm submit: %w", err)
	}
	var fit, explain int
	err = withManager(ctx, *plugins, stderr, func(ctx context.Context, m *plugin.Manager) (err error) {
		fit, explain, err = runner.Prepare(ctx, r, runner.Options{Plugins: m}, dir)
		return err
	})
	if err != nil {
		return err
	}
	cfg := slurm.Config{Dir: dir, Sbatch: sb} // no --uaxai: Submit copies this binary, once it accepts the run
	if *bin != "" {
		if cfg.Bin, err = filepath.Abs(*bin); err != nil {
			return err
		}
	}
	if !*noCache {
		if cfg.Cache, err = filepath.Abs(*cacheDir); err != nil {
			return err
		}
	}
	if *plugins != "" {
		if cfg.Plugins, err = filepath.Abs(*plugins); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "run directory %s: %d fit units, %d explain units\n", dir, fit, explain)
	_, err = slurm.Submit(ctx, slurm.CLI{}, cfg, fit, explain, *dryRun, stdout)
	return err
}

func cmdSlurmStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("slurm status", stdout, stderr)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fs.usageError(fmt.Sprintf("want one run directory, have %d arguments", len(pos)))
	}
	r, err := slurm.Status(ctx, slurm.CLI{}, pos[0])
	if err != nil {
		return err
	}
	return r.Write(stdout)
}
