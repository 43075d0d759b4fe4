package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/progress"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/runner"
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
	out := fs.String("out", "", "output CSV file (default: stdout)")
	archName := wf.arch
	seed := fs.Uint64("seed", recipe.DefaultSeed, "base seed of the metrics' random draws (and of a stochastic explainer)")
	workers := fs.Int("workers", 0, "goroutines (0: all cores); the output does not depend on it")
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries")
	mf := addModelFlags(fs)
	lf := addLimitFlag(fs)
	bf := addBoundFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("evaluate: unexpected argument %q (every input is a flag; see uaxai evaluate -h)", pos[0])
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
