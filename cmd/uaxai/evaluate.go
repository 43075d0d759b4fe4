package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/progress"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/host/store"
	"github.com/uaxai/uaxai/sdk/metric"
)

// evaluateDetails is the text of uaxai evaluate -h after the usage: what
// it does and every metric with its keys and their defaults.
func evaluateDetails() string {
	var b strings.Builder
	b.WriteString(`Each --metric is scored on every input's map under every weights file
(one draw each); --set gives a key of the --metric before it, named as
Quantus's constructor argument. The output CSV has one line an input,
draw and metric: input,draw,metric,value,undefined,curve.

With RUN_DIR, a finished run's stored maps ([output] maps = true) are
scored instead, without explaining again: the run's recipe is run again
as a new run "<name>-evaluate" under --out (default: beside RUN_DIR)
whose maps are the stored ones, by the --metric given or else the
recipe's [evaluate] metrics; its metrics.csv, tables and results.json are
those a run of the recipe with these metrics writes.

Metrics and their keys (defaults):`)
	reg := metric.Builtin()
	for _, id := range reg.IDs() {
		e, _ := reg.Lookup(id)
		fmt.Fprintf(&b, "\n  %s (Quantus %s, %s): %s\n     ", id, e.Info.Quantus, e.Info.Category, e.Info.Summary)
		for k, p := range e.Info.Params {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s=%v", p.Name, p.Default)
		}
	}
	return b.String()
}

func cmdEvaluate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("evaluate", stdout, stderr)
	wf := addWaveformFlags(fs)
	input, channels := wf.input, wf.channels
	maps := fs.String("maps", "", "the maps: a CSV of one a line (C x T values), or uaxai explain's input,draw,v0,... layout for several draws")
	masks := fs.String("mask", "", "ground-truth masks for the localisation metrics: a CSV of one a line, C x T values 0 or 1")
	target := fs.String("target", "", "the class each map explains: a class index, predicted, or a file of one class per line")
	explainer := fs.String("explainer", "", "the explainer that made the maps, for the robustness metrics (they explain noisy copies again)")
	var metricArgs metricFlag
	fs.Var(&metricArgs, "metric", "a metric ID (metric.pixel_flipping or pixel_flipping), repeatable")
	fs.Var(&metricArgs.setFlag, "set", "a setting key=value of the --metric before it (TOML value), repeatable")
	var esets listFlag
	fs.Var(&esets, "explainer-set", "a setting key=value of the --explainer, repeatable")
	out := fs.String("out", "", "output CSV file (default: stdout); with RUN_DIR, the directory of the new run (default: beside RUN_DIR)")
	archName := wf.arch
	seed := fs.Uint64("seed", recipe.DefaultSeed, "base seed of the metrics' random draws (and of a stochastic explainer)")
	workers := fs.Int("workers", 0, "goroutines (0: all cores); the output does not depend on it")
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries")
	mf := addModelFlags(fs)
	lf := addLimitFlag(fs)
	bf := addBoundFlags(fs)
	noCache := fs.Bool("no-cache", false, "with RUN_DIR: fit the run's posteriors again instead of reading the cache")
	cacheDir := fs.String("cache", store.DefaultDir(), "with RUN_DIR: the posterior cache directory ($UAXAI_CACHE)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return fmt.Errorf("evaluate: unexpected argument %q (one RUN_DIR at most; see uaxai evaluate -h)", pos[1])
	}
	if len(pos) == 1 {
		for _, name := range []string{"weights", "model", "input", "maps", "mask", "target", "explainer", "explainer-set", "arch", "channels", "seed"} {
			if isSet(fs, name) {
				return fmt.Errorf("evaluate %s: --%s does not go with a run directory (its recipe gives the model, the data and the explainer)", pos[0], name)
			}
		}
		return withManager(ctx, *plugins, stderr, func(ctx context.Context, m *plugin.Manager) error {
			opt := runner.Options{Plugins: m, Workers: *workers, Out: *out, Observer: progress.Stderr(), Stdout: stdout,
				Command: append([]string{"uaxai", "evaluate"}, args...), Limits: *lf}
			if !*noCache {
				opt.Cache = store.Cache{Dir: *cacheDir}
			}
			_, err := runner.EvaluateRun(ctx, pos[0], metricArgs.specs, opt)
			return err
		})
	}
	if isSet(fs, "no-cache") || isSet(fs, "cache") {
		return errors.New("evaluate: --no-cache and --cache go with a RUN_DIR")
	}
	bounds, err := bf.bounds("evaluate")
	if err != nil {
		return err
	}
	model, files, weightsGiven, err := wf.model("evaluate", fs, mf, stderr)
	if err != nil {
		return err
	}
	for _, req := range []struct{ name, value string }{{"weights", weightsGiven}, {"input", *input}, {"maps", *maps}, {"target", *target}} {
		if req.value == "" {
			return fmt.Errorf("evaluate: --%s is required (usage: uaxai evaluate --weights W.safetensors --input X.csv --maps A.csv --target C|predicted|FILE --metric ID)", req.name)
		}
	}
	if len(metricArgs.specs) == 0 {
		return fmt.Errorf("evaluate: --metric is required (accepted: %s)", strings.Join(metric.Builtin().IDs(), ", "))
	}
	ecfg, err := runner.ParseSettings(esets)
	if err != nil {
		return fmt.Errorf("evaluate: --explainer-set: %w", err)
	}
	opt := runner.EvaluateOptions{
		ExplainOptions: runner.ExplainOptions{Weights: files, Input: *input, Channels: *channels, Arch: *archName, Explainer: *explainer, Config: ecfg,
			Target: *target, Seed: *seed, Workers: *workers, Model: model, Bounds: bounds, Limits: lf.limits()},
		Maps: *maps, Masks: *masks, Metrics: metricArgs.specs,
	}
	return withPlugins("evaluate", *plugins, opt.Limits, stderr, func(m *plugin.Manager, bar *progress.Bar) error {
		opt.Plugins, opt.Observer = m, bar
		if *out != "" {
			return runner.EvaluateFile(ctx, opt, *out)
		}
		return runner.Evaluate(ctx, opt, stdout)
	})
}

// metricFlag collects --metric ID and the --set key=value that follow it.
type metricFlag struct {
	specs   []runner.MetricSpec
	setFlag setAfter
}

func (m *metricFlag) String() string { return "" }

func (m *metricFlag) Set(v string) error {
	m.specs = append(m.specs, runner.MetricSpec{ID: strings.TrimSpace(v), Config: map[string]any{}})
	m.setFlag.owner = m
	return nil
}

// setAfter is --set: a setting of the last --metric.
type setAfter struct{ owner *metricFlag }

func (s *setAfter) String() string { return "" }

func (s *setAfter) Set(kv string) error {
	if s.owner == nil || len(s.owner.specs) == 0 {
		return fmt.Errorf("--set %s before any --metric: a setting belongs to the --metric before it", kv)
	}
	k, v, err := runner.ParseSetting(kv)
	if err != nil {
		return err
	}
	cfg := s.owner.specs[len(s.owner.specs)-1].Config
	if _, dup := cfg[k]; dup {
		return fmt.Errorf("--set %s: key %q is set twice for --metric %s", kv, k, s.owner.specs[len(s.owner.specs)-1].ID)
	}
	cfg[k] = v
	return nil
}
