// Package runner executes a recipe end to end: it builds the data, resolves
// the plugins (out-of-process built-ins and binaries, or scripts), runs the
// engine and writes the run directory.
package runner

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/uaxai/uaxai/host/analysis"
	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/host/rundir"
	"github.com/uaxai/uaxai/host/store"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/rng"
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

	versions map[string]string // plugin versions by ID, for the manifest
	digests  map[string]string // script SHA-256 by path, for the manifest
}

// Outcome is what a run produced.
type Outcome struct {
	Dir     string
	Results *engine.Results
	Timings engine.Timings
}

// Datasets is the data of a recipe.
type Datasets struct {
	Train, Val sdk.Dataset
	Tests      []engine.TestSplit
	Recording  string   // with [recording]: the one, unlabelled, test split's name
	Notes      []string // what the run's notes should say of the data
}

// ToDataset converts records to the float32 rows the network reads.
func ToDataset(recs []data.Record) sdk.Dataset {
	if len(recs) == 0 {
		return sdk.Dataset{}
	}
	n := len(recs[0].X)
	d := sdk.Dataset{X: make([]float32, 0, len(recs)*n), Y: make([]int, len(recs)), N: len(recs), Len: n}
	for i, r := range recs {
		for _, v := range r.X {
			d.X = append(d.X, float32(v))
		}
		d.Y[i] = r.Label
	}
	return d
}

func masks(recs []data.Record, ev recipe.Evaluate, split string) ([][]bool, error) {
	out := make([][]bool, len(recs))
	for i, r := range recs {
		switch ev.Mask {
		case recipe.MaskEvent:
			if r.Event == nil {
				return nil, fmt.Errorf("split %s record %d: mask = \"event\" needs event.csv", split, i)
			}
			out[i] = data.EventMask(make([]bool, len(r.Event)), r.Event)
		default:
			if r.D == nil {
				return nil, fmt.Errorf("split %s record %d: mask = \"amplitude\" needs the disturbance d (disturbance.csv)", split, i)
			}
			out[i] = data.Mask(make([]bool, len(r.D)), r.D, ev.Eps)
		}
	}
	return out, nil
}

// LoadData builds the recipe's datasets.
func LoadData(ctx context.Context, r *recipe.Recipe) (Datasets, error) {
	var train, val []data.Record
	var tests []data.Split
	switch r.Data.Source {
	case recipe.SourcePQD:
		cfg := data.DefaultConfig()
		cfg.F0, cfg.Fs, cfg.Cycles, cfg.Noise = r.Data.F0, r.Data.Fs, r.Data.Cycles, r.Data.Noise
		cfg.SNRMin, cfg.SNRMax = r.Data.SNRdB[0], r.Data.SNRdB[1]
		if !r.Data.Phase.Random {
			ph := r.Data.Phase.Value
			cfg.Phase = &ph
		}
		nTests := r.Data.TestSplits
		if r.Recording != nil {
			nTests = 0 // the recording's windows are the test set
		}
		ps, err := data.MakePaperSplits(ctx, cfg, r.Seed, r.Data.TrainPerClass, r.Data.ValFraction, nTests, r.Data.TestPerClass)
		if err != nil {
			return Datasets{}, fmt.Errorf("recipe %s: data: %w", r.Name, err)
		}
		train, val, tests = ps.Train.Records, ps.Val.Records, ps.Tests
	case recipe.SourceFiles:
		read := func(dir string) (data.Split, error) {
			s, err := data.ReadCSV(dir)
			if err != nil {
				return data.Split{}, fmt.Errorf("recipe %s: data: %w", r.Name, err)
			}
			return s, nil
		}
		s, err := read(r.Data.Train)
		if err != nil {
			return Datasets{}, err
		}
		train = s.Records
		if r.Data.Val != "" {
			if s, err = read(r.Data.Val); err != nil {
				return Datasets{}, err
			}
			val = s.Records
		} else {
			train, val = HoldOut(train, r.Data.ValFraction, r.Seed)
		}
		for _, dir := range r.Data.Test {
			if r.Recording != nil {
				break
			}
			s, err := read(dir)
			if err != nil {
				return Datasets{}, err
			}
			tests = append(tests, s)
		}
	default:
		return Datasets{}, r.Errorf([]string{"data", "source"}, "unknown source %q (accepted: pqd, files)", r.Data.Source)
	}
	ds := Datasets{Train: ToDataset(train), Val: ToDataset(val)}
	for i, s := range tests {
		// Splits are named test-<i> whatever their folder: names key the
		// random streams and label records.csv, so they must be unique.
		name := fmt.Sprintf("test-%d", i)
		m, err := masks(s.Records, r.Evaluate, name)
		if err != nil {
			return Datasets{}, fmt.Errorf("recipe %s: %w", r.Name, err)
		}
		ds.Tests = append(ds.Tests, engine.TestSplit{Name: name, Data: ToDataset(s.Records), Masks: m})
	}
	if r.Recording != nil {
		ts, notes, err := recordingSplit(ctx, r)
		if err != nil {
			return Datasets{}, err
		}
		ds.Tests = []engine.TestSplit{ts}
		ds.Recording, ds.Notes = ts.Name, notes
	}
	return ds, nil
}

// checkLengths checks that every split has the model's input length.
func checkLengths(r *recipe.Recipe, ds Datasets, want int) error {
	check := func(d sdk.Dataset, path []string, what string) error {
		if d.N > 0 && d.Len != want {
			return r.Errorf(path, "%s has waveforms of %d values; the model takes %d (accepted: %d values a line)", what, d.Len, want, want)
		}
		return nil
	}
	if err := check(ds.Train, []string{"data", "train"}, "the training set"); err != nil {
		return err
	}
	if err := check(ds.Val, []string{"data", "val"}, "the validation set"); err != nil {
		return err
	}
	for i, t := range ds.Tests {
		what := "test split " + t.Name
		if r.Data.Source == recipe.SourceFiles && i < len(r.Data.Test) {
			what += " (" + r.Data.Test[i] + ")"
		}
		if err := check(t.Data, []string{"data", "test"}, what); err != nil {
			return err
		}
	}
	return nil
}

// HoldOut splits records into training and validation: per class c with
// n_c records, round(frac * n_c) records chosen by the permutation of the
// stream (seed, "data-split", "files", c) are held out. Both parts keep the
// input order.
func HoldOut(recs []data.Record, frac float64, seed uint64) (train, val []data.Record) {
	byClass := map[int][]int{}
	for i, r := range recs {
		byClass[r.Label] = append(byClass[r.Label], i)
	}
	held := make([]bool, len(recs))
	for c, idx := range byClass {
		k := int(math.Round(frac * float64(len(idx))))
		perm := rng.For(seed, "data-split", "files", c, -1).Perm(len(idx))
		for _, j := range perm[:k] {
			held[idx[j]] = true
		}
	}
	for i, r := range recs {
		if held[i] {
			val = append(val, r)
		} else {
			train = append(train, r)
		}
	}
	return train, val
}

// hashDataset is a SHA-256 of a dataset's values and labels.
func hashDataset(d sdk.Dataset) string {
	h := sha256.New()
	var b [8]byte
	for _, v := range d.X {
		binary.LittleEndian.PutUint32(b[:4], math.Float32bits(v))
		h.Write(b[:4])
	}
	for _, y := range d.Y {
		binary.LittleEndian.PutUint64(b[:], uint64(y))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// resolver adds the recipe's scripted summaries to a plugin manager:
// a step whose ID is a script path of the recipe is served by the
// manager's Script, in a process of its own, like every other plugin
// (its digest is kept for the manifest); every other ID goes to the
// manager's Summary. Both keep their clients. newResolver hands the
// recipe's [limits] to the manager.
type resolver struct {
	engine.Plugins
	workers int
	paths   map[string]bool // the recipe's script paths
	mu      sync.Mutex
	digests map[string]string // script path -> SHA-256 of its source
}

// Scripts is what serves summary scripts: host/plugin's Manager, which
// runs each in a process of its own.
type Scripts interface {
	Script(ctx context.Context, path string, instances int) (sdk.Summary, error)
}

// limiter is what takes the recipe's [limits]: host/plugin's Manager.
type limiter interface{ SetLimits(limits.Limits) }

// dirAdder is what takes the recipe's plugin_dirs: host/plugin's Manager.
type dirAdder interface{ AddDirs(dirs ...string) }

func newResolver(p engine.Plugins, r *recipe.Recipe, workers int) *resolver {
	if l, ok := p.(limiter); ok {
		l.SetLimits(r.Limits)
	}
	if a, ok := p.(dirAdder); ok && len(r.PluginDirs) > 0 {
		a.AddDirs(r.PluginDirs...)
	}
	res := &resolver{Plugins: p, workers: workers, paths: map[string]bool{}, digests: map[string]string{}}
	for _, ref := range r.Summaries {
		if ref.Script != "" {
			res.paths[ref.Script] = true
		}
	}
	return res
}

func (r *resolver) Summary(ctx context.Context, id string) (sdk.Summary, error) {
	if !r.paths[id] {
		return r.Plugins.Summary(ctx, id)
	}
	sc, ok := r.Plugins.(Scripts)
	if !ok {
		return nil, fmt.Errorf("script %s: the plugins given (%T) do not serve scripts", id, r.Plugins)
	}
	s, err := sc.Script(ctx, id, max(r.workers, 1))
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.digests[id]; !ok {
		src, err := os.ReadFile(id)
		if err != nil {
			return nil, fmt.Errorf("script %s: %w", id, err)
		}
		sum := sha256.Sum256(src)
		r.digests[id] = hex.EncodeToString(sum[:])
	}
	return s, nil
}

func steps(refs []recipe.PluginRef) []engine.Step {
	out := make([]engine.Step, len(refs))
	for i, p := range refs {
		id := p.ID
		if p.Script != "" {
			id = p.Script
		}
		out[i] = engine.Step{ID: id, Label: p.Label, Draws: p.Draws, Target: p.Target, Config: p.Config}
	}
	return out
}

// Check validates a recipe's plugin tables with the plugins themselves,
// without running anything.
func Check(ctx context.Context, r *recipe.Recipe, p engine.Plugins) error {
	_, err := check(ctx, r, newResolver(p, r, 1))
	return err
}

// check is Check, returning the version of every plugin by ID.
func check(ctx context.Context, r *recipe.Recipe, res *resolver) (map[string]string, error) {
	if len(r.Data.Classes) > 0 {
		return nil, r.Errorf([]string{"data", "classes"}, "a class subset is not supported yet (accepted: leave classes out for all 16)")
	}
	versions := map[string]string{}
	for i, ref := range r.Posteriors {
		pl, err := res.Posterior(ctx, ref.ID)
		if err != nil {
			return nil, r.PluginError(ref, err)
		}
		info := pl.Info()
		// File keys are resolved in the recipe itself (see files.go).
		ref.Config = resolveFiles(ref.Config, info.Files, r.Dir)
		r.Posteriors[i].Config = ref.Config
		if err := pl.Check(ref.Config, ref.Draws); err != nil {
			return nil, r.PluginError(ref, err)
		}
		if err := checkFiles(r, ref, info.Files); err != nil {
			return nil, err
		}
		versions[info.ID] = info.Version
		if info.Base != "" {
			v, err := checkBase(ctx, res, ref, info)
			if err != nil {
				return nil, r.PluginError(ref, err)
			}
			versions[info.Base] = v
		}
	}
	for _, ref := range r.Explainers {
		e, err := res.Explainer(ctx, ref.ID)
		if err != nil {
			return nil, r.PluginError(ref, err)
		}
		if err := e.Check(ref.Config); err != nil {
			return nil, r.PluginError(ref, err)
		}
		versions[e.Info().ID] = e.Info().Version
	}
	for _, ref := range r.Summaries {
		s, err := res.Summary(ctx, steps([]recipe.PluginRef{ref})[0].ID)
		if err != nil {
			return nil, r.PluginError(ref, err)
		}
		if err := s.Check(ref.Config); err != nil {
			return nil, r.PluginError(ref, err)
		}
		versions[s.Info().ID] = s.Info().Version
	}
	arch, err := r.Arch()
	if err != nil {
		return nil, err
	}
	if err := trial(ctx, r, res, arch); err != nil {
		return nil, err
	}
	return versions, nil
}

// checkBase checks the base of a post-hoc posterior (sdk.Info.Base): it
// must be available, have no base of its own, and accept the keys of the
// posterior's table that it gets (BaseKeys). It returns the base's version.
func checkBase(ctx context.Context, res engine.Plugins, ref recipe.PluginRef, info sdk.Info) (string, error) {
	bp, bs, err := engine.ResolveBase(ctx, res, steps([]recipe.PluginRef{ref})[0], info)
	if err != nil {
		return "", fmt.Errorf("key \"use\": %w", err)
	}
	if err := bp.Check(bs.Config, 1); err != nil {
		return "", fmt.Errorf("its base %s, with the keys %s of this table: %w", info.Base, strings.Join(info.BaseKeys, ", "), err)
	}
	return bp.Info().Version, nil
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
	plugins := newResolver(opt.Plugins, r, workers)
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
	if err := checkLengths(r, ds, arch.InChannels*arch.InLen); err != nil {
		return nil, err
	}
	fingerprint, err := runFingerprint(r, versions, plugins.digests)
	if err != nil {
		return nil, err
	}
	paper := eval.PaperGroups()
	groups := map[string][]int{}
	for _, g := range r.Evaluate.Groups {
		groups[g] = paper[g]
	}
	classes := paper[recipe.GroupAll] // the 15 disturbance classes; normal is never scored
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
	w := &runWriter{dir: dir, r: r, ds: ds, opt: opt, workers: workers, start: start,
		trainHash: hashDataset(ds.Train), valHash: hashDataset(ds.Val), tim: engine.Timings{"data": dataTime}}
	plan := engine.Plan{
		Seed: r.Seed, Workers: workers, Arch: arch, Train: r.Train,
		TrainSet: ds.Train, ValSet: ds.Val, Tests: ds.Tests,
		Classes: classes, Groups: groups, Abs: r.Evaluate.Abs,
		Posteriors: steps(r.Posteriors), Explainers: steps(r.Explainers), Summaries: steps(r.Summaries),
		CacheKey: func(p engine.Step, info sdk.Info) (string, error) {
			cfg, err := contentConfig(p.Config, info.Files) // files by their contents, not their paths
			if err != nil {
				return "", err
			}
			return store.Key("uaxai-posterior-1", arch, r.Train, w.trainHash, w.valHash, r.Seed, info.ID, info.Version, cfg)
		},
		Fingerprint: fingerprint,
		UnitRecords: opt.UnitRecords,
		Output:      w.output,
		Predicted:   w.pred.add(ds, arch.Classes()),
	}
	if an := newAnalyser(w, ds, groups, r.Evaluate.Abs); an != nil {
		w.an = an
		if an.Needed() {
			plan.Analyse = an.Batch
			plan.Distortions = an.Distortions()
			plan.Repeats = an.Repeats()
			plan.AnalysisTake, plan.AnalysisPut = an.Take, an.Put
		}
	}
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
		ts, err := w.tables(res)
		if err != nil {
			return nil, err
		}
		shown := ts
		if len(res.Rows) > 0 {
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

// runFingerprint identifies a run's results: the canonical recipe (the
// tables that change a result), the plugins' versions and the scripts'
// digests. Every unit carries it.
func runFingerprint(r *recipe.Recipe, versions, digests map[string]string) (string, error) {
	canon, err := r.Canonical()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	// The canonical form's comment head names the file it came from; a
	// run's recipe.toml is the same recipe from another path.
	_, body, _ := strings.Cut(string(canon), "\n\n")
	fmt.Fprintf(h, "uaxai-run-1\x00%s\x00", body)
	for _, k := range slices.Sorted(maps.Keys(versions)) {
		fmt.Fprintf(h, "%s=%s\x00", k, versions[k])
	}
	for _, k := range slices.Sorted(maps.Keys(digests)) {
		fmt.Fprintf(h, "%s=%s\x00", k, digests[k])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// runWriter writes the run directory: recipe.toml and units/plan.json
// when the run is prepared, a manifest (or a shard's status file) when it
// starts and when it ends (complete, failed or interrupted), and the
// results when the units are merged.
type runWriter struct {
	dir                string
	r                  *recipe.Recipe
	ds                 Datasets
	opt                Options
	workers            int
	start              time.Time
	trainHash, valHash string
	tim                engine.Timings
	outputs            int // set and band outputs written
	pred               predictive
	an                 *analysis.Analyser // nil: the recipe asks for no analysis
	costs              map[string]float64 // wall time of each unit, by name
	anRep              *analysis.Report   // the analyses of a finished run
}

func (w *runWriter) write(name string, b []byte) error {
	if err := report.WriteFile(w.dir, name, b); err != nil {
		return fmt.Errorf("run directory %s: %w", w.dir, err)
	}
	return nil
}

// begin writes recipe.toml (unless the run directory has it: a shard
// after another, a resumed run) and units/plan.json, which must be the
// same as the one there.
func (w *runWriter) begin(plan engine.Plan) error {
	canon, err := w.r.Canonical()
	if err != nil {
		return err
	}
	units := engine.Units(plan)
	pl := rundir.Plan{Recipe: w.r.Name, Fingerprint: plan.Fingerprint, UnitRecords: engine.UnitSize(plan)}
	for _, u := range units {
		ru := rundir.Unit{Name: u.Name, Kind: u.Kind, Index: u.Index, Posterior: plan.Posteriors[u.Post].Label}
		if u.Kind == engine.ExplainUnit {
			ru.Records = u.B1 - u.B0
		}
		pl.Units = append(pl.Units, ru)
	}
	if err := (rundir.Dir{Path: w.dir}).WritePlan(pl); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(w.dir, "recipe.toml")); err == nil {
		return nil
	}
	return w.write("recipe.toml", canon)
}

// shardStatus writes shards/<kind>-<i>-of-<n>.json: what a shard did, and
// how it ended.
func (w *runWriter) shardStatus(sh engine.Shard, status string, runErr error) error {
	host, _ := os.Hostname()
	kind := sh.Kind
	if kind == "" {
		kind = "all"
	}
	m := map[string]any{"status": status, "host": host, "pid": os.Getpid(), "shard": sh.I, "shards": sh.N, "kind": kind,
		"started": w.start.UTC().Format(time.RFC3339), "wall_s": time.Since(w.start).Seconds(), "units_s": w.costs,
		"command": strings.Join(w.opt.Command, " ")}
	if runErr != nil {
		m["error"] = runErr.Error()
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(w.dir, "shards"), 0o755); err != nil {
		return err
	}
	return w.write(filepath.Join("shards", fmt.Sprintf("%s-%d-of-%d.json", kind, sh.I, sh.N)), append(b, '\n'))
}

// final writes the results of a finished run, with its analyses (their
// files first, so that results.json names only files that exist).
func (w *runWriter) final(res *engine.Results) error {
	if w.an != nil {
		rep, err := w.an.Finish(res)
		if err != nil {
			return fmt.Errorf("analysis: %w", err)
		}
		for _, f := range rep.Files {
			if err := os.MkdirAll(filepath.Join(w.dir, filepath.Dir(f.Name)), 0o755); err != nil {
				return fmt.Errorf("run directory %s: %w", w.dir, err)
			}
			if err := w.write(f.Name, f.Data); err != nil {
				return err
			}
		}
		res.Notes = append(res.Notes, rep.Notes...)
		w.anRep = rep
	}
	res.Notes = append(res.Notes, w.ds.Notes...)
	return w.results(res)
}

// tables are the tables of tables.md and of the terminal: the main table,
// the paper's tables the recipe names, the analyses', the predictive
// quality, and the per-class tables.
func (w *runWriter) tables(res *engine.Results) ([]report.Table, error) {
	if len(res.Rows) == 0 { // a recording: nothing scored
		var ts []report.Table
		if w.anRep != nil {
			ts = append(ts, w.anRep.Tables...)
		}
		return ts, nil
	}
	ts := []report.Table{report.Main(res)}
	pts, err := w.paperTables(res)
	if err != nil {
		return nil, err
	}
	ts = append(ts, pts...)
	if w.anRep != nil {
		ts = append(ts, w.anRep.Tables...)
	}
	if len(w.pred.rows) > 0 {
		ts = append(ts, w.pred.table())
	}
	return append(ts, report.PerClassIoU(res), report.PerClass(res)), nil
}

func (w *runWriter) results(res *engine.Results) error {
	var anJSON any
	if w.anRep != nil && len(w.anRep.JSON) > 0 {
		anJSON = w.anRep.JSON
	}
	rj, err := report.ResultsJSON(w.r.Name, w.r.Seed, res, w.pred.section(), report.Section{Key: "analysis", Value: anJSON})
	if err != nil {
		return err
	}
	rc, err := report.RecordsCSV(res, w.splitNames())
	if err != nil {
		return err
	}
	ts, err := w.tables(res)
	if err != nil {
		return err
	}
	md, err := report.Markdown(w.r.Name, res.Notes, ts...)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{"results.json", rj}, {"records.csv", rc}, {"tables.md", md}} {
		if err := w.write(f.name, f.b); err != nil {
			return err
		}
	}
	return nil
}

// output writes the records of one set or band summary to its own file
// under outputs/, and names the file in o.
func (w *runWriter) output(o *engine.Output) error {
	w.outputs++
	name := report.OutputFile(w.outputs, o)
	b, err := report.OutputCSV(o, w.splitNames())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(w.dir, filepath.Dir(name)), 0o755); err != nil {
		return fmt.Errorf("run directory %s: %w", w.dir, err)
	}
	if err := w.write(name, b); err != nil {
		return err
	}
	o.File = name
	return nil
}

func (w *runWriter) splitNames() []string {
	names := make([]string, len(w.ds.Tests))
	for i, t := range w.ds.Tests {
		names[i] = t.Name
	}
	return names
}

func (w *runWriter) manifest(status string, runErr error) error {
	host, _ := os.Hostname()
	m := map[string]any{
		"status":         status,
		"recipe":         w.r.Name,
		"recipe_path":    w.r.Path,
		"seed":           w.r.Seed,
		"command":        strings.Join(w.opt.Command, " "),
		"started":        w.start.UTC().Format(time.RFC3339),
		"wall_s":         time.Since(w.start).Seconds(),
		"workers":        w.workers,
		"go":             runtime.Version(),
		"machine":        map[string]any{"os": runtime.GOOS, "arch": runtime.GOARCH, "cpus": runtime.NumCPU(), "host": host},
		"plugins":        w.opt.versions,
		"scripts_sha256": w.opt.digests,
		"data": map[string]any{"train": w.ds.Train.N, "val": w.ds.Val.N, "tests": len(w.ds.Tests),
			"train_sha256": w.trainHash, "val_sha256": w.valHash},
	}
	if runErr != nil {
		m["error"] = runErr.Error()
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		m["module"] = bi.Main.Path + "@" + bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				m["revision"] = s.Value
			}
		}
	}
	timings := map[string]float64{}
	for k, v := range w.tim {
		timings[k] = v.Seconds()
	}
	m["timings_s"] = timings
	if len(w.costs) > 0 {
		m["units_s"] = w.costs
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	return w.write("manifest.json", append(b, '\n'))
}
