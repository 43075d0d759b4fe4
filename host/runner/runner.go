package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/host/rundir"
	"github.com/uaxai/uaxai/host/store"
	"github.com/uaxai/uaxai/sdk"
)

// Options are the settings of a run that are not in the recipe.
type Options struct {
	Plugins  engine.Plugins // host/plugin's Manager; the runner adds scripts
	Cache    engine.Cache   // nil: no cache
	Workers  int            // overrides the recipe's workers when > 0
	Out      string         // overrides the recipe's out when not ""
	Observer engine.Observer
	Stdout   io.Writer // the tables; nil: no output
	Command  []string  // the command line, for the manifest
	// RunDir is the run directory to use (a shard's shared one, or an
	// interrupted run's); "" makes a new one under Out.
	RunDir string
	// Shard, if not nil, runs only that shard's units, and merges nothing.
	Shard *engine.Shard
	// UnitRecords is the records of an explain unit (0: 256). It changes
	// the units, never the results; every shard of a run must use the same.
	UnitRecords int
	// Limits are set over the recipe's [limits] (the command line's
	// --limit key=duration); they change no result.
	Limits []limits.Setting

	stored   engine.StoredMaps // EvaluateRun's: the maps of a finished run
	versions map[string]string // plugin versions by ID, for the manifest
	digests  map[string]string // script SHA-256 by path, for the manifest
}

// Outcome is what a run produced.
type Outcome struct {
	Dir     string
	Results *engine.Results
	Timings engine.Timings
}

// Run executes a recipe and writes its run directory. The run is a set
// of units (engine.Units), each kept in the run directory as it is done
// (units/, host/rundir): with Options.Shard it does only that shard's
// units and stops (Merge writes the results once every shard is done);
// without, it does every unit not done yet (all of them, unless
// Options.RunDir names an interrupted run) and merges. Either way the
// results are the same bytes.
func Run(ctx context.Context, r *recipe.Recipe, opt Options) (*Outcome, error) {
	st, err := setup(ctx, r, opt)
	if err != nil {
		return nil, err
	}
	w := st.w
	sharded := opt.Shard != nil
	shard := engine.Shard{N: 1}
	if sharded {
		shard = *opt.Shard
		if err := w.shardStatus(shard, "running", nil); err != nil {
			return nil, err
		}
	} else if err := w.manifest("running", nil); err != nil {
		return nil, err
	}
	tim, costs, err := engine.RunUnits(ctx, st.plan, st.plugins, opt.Cache, rundir.Dir{Path: w.dir}, shard, opt.Observer)
	for k, v := range tim {
		w.tim[k] += v
	}
	w.costs = costs
	if err != nil {
		status := "failed"
		if ctx.Err() != nil {
			status = "interrupted"
		}
		var merr error
		if sharded {
			merr = w.shardStatus(shard, status, err)
		} else {
			merr = w.manifest(status, err)
		}
		if merr != nil {
			return nil, fmt.Errorf("recipe %s: %w (and the status file: %v)", r.Name, err, merr)
		}
		return nil, fmt.Errorf("recipe %s: %w (the units done so far are kept in %s: finish with uaxai run --resume %s)", r.Name, err, w.dir, w.dir)
	}
	if sharded {
		if err := w.shardStatus(shard, "complete", nil); err != nil {
			return nil, err
		}
		if opt.Stdout != nil {
			fmt.Fprintf(opt.Stdout, "shard %s done: %d units in %s\n", shard, len(costs), w.dir)
		}
		return &Outcome{Dir: w.dir, Timings: w.tim}, nil
	}
	return st.merge(ctx, opt)
}

// Resume finishes the run in dir, interrupted or killed however (a unit
// file cut short is done again): it reads the recipe from dir/recipe.toml,
// does the units that are not done and merges.
func Resume(ctx context.Context, dir string, opt Options) (*Outcome, error) {
	r, err := recipe.Load(filepath.Join(dir, "recipe.toml"))
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	opt.RunDir, opt.Shard = dir, nil
	return Run(ctx, r, opt)
}

// Merge writes the results of the run in dir (results.json, records.csv,
// tables.md and the rest) from its units, once every shard is done. They
// are the same bytes as those of the run in one piece.
func Merge(ctx context.Context, dir string, opt Options) (*Outcome, error) {
	r, err := recipe.Load(filepath.Join(dir, "recipe.toml"))
	if err != nil {
		return nil, fmt.Errorf("merge %s: %w", dir, err)
	}
	opt.RunDir, opt.Shard = dir, nil
	st, err := setup(ctx, r, opt)
	if err != nil {
		return nil, err
	}
	return st.merge(ctx, opt)
}

// Prepare checks a recipe with its plugins and writes the run directory
// dir (recipe.toml and units/plan.json) without running anything. It
// returns the number of fit and explain units.
func Prepare(ctx context.Context, r *recipe.Recipe, opt Options, dir string) (fit, explain int, err error) {
	opt.RunDir, opt.Shard = dir, nil
	st, err := setup(ctx, r, opt)
	if err != nil {
		return 0, 0, err
	}
	for _, u := range engine.Units(st.plan) {
		if u.Kind == engine.FitUnit {
			fit++
		} else {
			explain++
		}
	}
	return fit, explain, nil
}

// scoredGroups returns the classes a run reports and its macro groups,
// for the data's class names (nil: the one-phase PQD's 16). With the
// PQD's classes they are the paper's (eval.PaperGroups): classes 1..15,
// "all" and "disc-7". With other classes, every class but one named
// "normal" (whose mask is empty) is reported and "all" holds them;
// "disc-7" names the PQD's classes, so the recipe's [evaluate] groups
// may not ask for it, and its default leaves it out.
func scoredGroups(r *recipe.Recipe, names []string) ([]int, map[string][]int, error) {
	paper := eval.PaperGroups()
	if names != nil && !slices.Equal(names, data.ClassNames[:]) {
		paper = map[string][]int{}
		for c, n := range names {
			if n != "normal" {
				paper[recipe.GroupAll] = append(paper[recipe.GroupAll], c)
			}
		}
		if len(paper[recipe.GroupAll]) == 0 {
			return nil, nil, r.Errorf([]string{"data"}, "the data's classes %q hold no class other than normal to localise (accepted: data with at least one disturbance class)", names)
		}
	}
	groups := map[string][]int{}
	for i, g := range r.Evaluate.Groups {
		gc, ok := paper[g]
		if !ok {
			if r.KeyLine("evaluate", "groups") == 0 {
				continue // the default's disc-7, for other data
			}
			return nil, nil, r.Errorf([]string{"evaluate", "groups", strconv.Itoa(i)}, "group %q is the one-phase PQD's, and this data's classes are %q (accepted: %q)", g, names, recipe.GroupAll)
		}
		groups[g] = gc
	}
	return paper[recipe.GroupAll], groups, nil
}

// state is a checked recipe with its data, plan and run directory.
type state struct {
	r       *recipe.Recipe
	w       *runWriter
	plan    engine.Plan
	plugins *resolver
}

// setup checks the recipe, builds its data and plan, and prepares the
// run directory: a new one, or Options.RunDir, which must hold the same
// run if it holds one.
func setup(ctx context.Context, r *recipe.Recipe, opt Options) (*state, error) {
	start := time.Now()
	workers := r.Workers
	if opt.Workers > 0 {
		workers = opt.Workers
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	plugins, err := newResolver(opt.Plugins, r, workers, opt.Limits...)
	if err != nil {
		return nil, err
	}
	versions, err := check(ctx, r, plugins)
	if err != nil {
		return nil, err
	}
	arch, err := r.Arch()
	if err != nil {
		return nil, err
	}
	opt.versions, opt.digests = versions, plugins.digests
	t0 := time.Now()
	ds, err := LoadData(ctx, r)
	if err != nil {
		return nil, err
	}
	dataTime := time.Since(t0)
	if err := checkLengths(r, ds, arch); err != nil {
		return nil, err
	}
	fingerprint, err := runFingerprint(r, versions, plugins.digests)
	if err != nil {
		return nil, err
	}
	classes, groups, err := scoredGroups(r, ds.Classes)
	if err != nil {
		return nil, err
	}
	var dir string
	if opt.RunDir != "" {
		dir = opt.RunDir
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("run directory: %w", err)
		}
	} else {
		out := r.Out
		if opt.Out != "" {
			out = opt.Out
		}
		if dir, err = report.NewRunDir(out, r.Name, start); err != nil {
			return nil, fmt.Errorf("run directory: %w", err)
		}
	}
	posts, repSeeds := replicated(r)
	if r.Replicates != nil && r.Replicates.ResampleSplits {
		if err := resampleSplits(ctx, r, posts, repSeeds); err != nil {
			return nil, err
		}
	}
	w := &runWriter{dir: dir, r: r, ds: ds, classes: arch.Classes(), opt: opt, workers: workers, start: start,
		trainHash: hashDataset(ds.Train), valHash: hashDataset(ds.Val), tim: engine.Timings{"data": dataTime}}
	plan := engine.Plan{
		Seed: r.Seed, ReplicateSeeds: repSeeds, Workers: workers, Arch: arch, Train: r.Train,
		TrainSet: ds.Train, ValSet: ds.Val, Tests: ds.Tests, HeldOut: ds.HeldOut,
		Classes: classes, ClassNames: ds.Classes, Groups: groups, Abs: r.Evaluate.Abs,
		Posteriors: posts, Explainers: steps(r.Explainers), Summaries: steps(r.Summaries),
		CacheKey: func(p engine.Step, info sdk.Info) (string, error) {
			cfg, err := contentConfig(p.Config, info.Files) // files by their contents, not their paths
			if err != nil {
				return "", err
			}
			// Replicate 0 of a seed is the fit of a run without
			// [replicates] of that seed: the same entry.
			parts := []any{"uaxai-posterior-1", arch, r.Train, w.trainHash, w.valHash, r.Replicates.Seed(r.Seed, p.Replicate), info.ID, info.Version, cfg}
			if p.Replicate > 0 {
				parts = append(parts, "replicate", p.Replicate)
			}
			return store.Key(parts...)
		},
		Fingerprint: fingerprint,
		UnitRecords: opt.UnitRecords,
		Sink:        w,
		Stored:      opt.stored,
	}
	if plan.Metrics, err = recipeMetrics(r); err != nil {
		return nil, err
	}
	plan.RandomiseDraws = r.Evaluate.RandomiseDraws
	w.an = newAnalyser(w, ds, groups, r.Evaluate.Abs)
	plan.Analysis = w.an // every run: report.html's records (analysis.Explored)
	if err := engine.FitParts(ctx, &plan, plugins); err != nil {
		return nil, err
	}
	if plan.UnitRecords == 0 {
		// A run directory keeps the unit size it was planned with.
		if old, err := (rundir.Dir{Path: dir}).ReadPlan(); err == nil {
			plan.UnitRecords = old.UnitRecords
		}
	}
	if err := w.begin(plan); err != nil {
		return nil, err
	}
	return &state{r: r, w: w, plan: plan, plugins: plugins}, nil
}

// merge builds the results from the units and writes them.
func (st *state) merge(ctx context.Context, opt Options) (*Outcome, error) {
	w, r := st.w, st.r
	t0 := time.Now()
	res, costs, err := engine.Merge(ctx, st.plan, st.plugins, rundir.Dir{Path: w.dir})
	if err != nil {
		if merr := w.manifest("failed", err); merr != nil {
			return nil, fmt.Errorf("recipe %s: %w (and the manifest: %v)", r.Name, err, merr)
		}
		return nil, fmt.Errorf("recipe %s: merge: %w", r.Name, err)
	}
	w.tim["merge"] = time.Since(t0)
	w.costs = costs
	if err := w.final(res); err != nil {
		return nil, err
	}
	if err := w.manifest("complete", nil); err != nil {
		return nil, err
	}
	if opt.Stdout != nil {
		if f, ok := opt.Observer.(interface{ Finish() }); ok {
			f.Finish()
		}
		ts := w.ts
		shown := ts
		if len(w.shown.Rows) > 0 {
			shown = ts[:len(ts)-2] // the per-class tables only in tables.md
		}
		for i, t := range shown {
			if i > 0 {
				fmt.Fprintln(opt.Stdout, t.Title)
			}
			if err := t.Render(opt.Stdout, false); err != nil {
				return nil, err
			}
		}
		for _, n := range res.Notes {
			fmt.Fprintln(opt.Stdout, "note:", n)
		}
		fmt.Fprintln(opt.Stdout, "run directory:", w.dir)
	}
	return &Outcome{Dir: w.dir, Results: res, Timings: w.tim}, nil
}
