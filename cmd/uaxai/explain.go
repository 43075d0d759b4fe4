package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/progress"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/runner"
	"github.com/uaxai/uaxai/sdk/nn"
)

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// limitFlag is --limit key=duration, repeatable: a duration key of the
// recipe's [limits] (model_call, explain_batch, ...) set over the
// recipe's (or, without a recipe, over the defaults).
type limitFlag []limits.Setting

func (l *limitFlag) String() string {
	var b []string
	for _, s := range *l {
		b = append(b, s.Key+"="+s.Value.String())
	}
	return strings.Join(b, " ")
}

func (l *limitFlag) Set(v string) error {
	s, err := limits.ParseSetting(v)
	if err != nil {
		return err
	}
	*l = append(*l, s)
	return nil
}

// addLimitFlag adds --limit to fs.
func addLimitFlag(fs *flagSet) *limitFlag {
	l := &limitFlag{}
	fs.Var(l, "limit", "key=duration: a [limits] key over the recipe's or the defaults, e.g. model_call=30s (each call of a PyTorch model's service), explain_batch=30m; repeatable")
	return l
}

// mcDropoutFlag is --mc-dropout S of explain and predict: S MC-dropout
// draws of the one network (0, unset: none).
type mcDropoutFlag int

func (m *mcDropoutFlag) String() string {
	if m == nil || *m == 0 {
		return ""
	}
	return strconv.Itoa(int(*m))
}

func (m *mcDropoutFlag) Set(v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 2 || n > recipe.MaxDraws {
		return fmt.Errorf("want an integer 2..%d, the number of MC-dropout draws of the one --weights network", recipe.MaxDraws)
	}
	*m = mcDropoutFlag(n)
	return nil
}

// addMCDropoutFlag adds --mc-dropout to fs.
func addMCDropoutFlag(fs *flagSet) *mcDropoutFlag {
	m := new(mcDropoutFlag)
	fs.Var(m, "mc-dropout", "S: the draws are S MC-dropout draws (2.."+strconv.Itoa(recipe.MaxDraws)+") of the one --weights network, its own dropout on with masks from --seed (a PyTorch --model: every torch.nn.Dropout and attention dropout; a graph spec, ONNX file or --arch: its dropout nodes on C x 1 features), instead of one draw a weights file")
	return m
}

// limits are the defaults with the flag's settings over them.
func (l *limitFlag) limits() limits.Limits {
	d := limits.Default()
	_ = d.Apply(*l) // Set accepted only keys and durations that Apply takes
	return d
}

// weightFiles splits the values of a --weights flag (comma-separated,
// repeatable) into files.
// waveformFlags are the flags of the commands that run a network on a
// user's waveforms: --weights, --input, --channels, --arch.
type waveformFlags struct {
	weights  listFlag
	input    *string
	channels *int
	arch     *string
}

func addWaveformFlags(fs *flagSet) *waveformFlags {
	w := &waveformFlags{}
	fs.Var(&w.weights, "weights", "weights files (.safetensors, PyTorch state_dict names), comma-separated or repeated; each file is one draw")
	w.input = fs.String("input", "", "waveforms: a CSV of one per line (C x T values: channel 0's T samples, then channel 1's, ...), or a .npy array of shape (N, C, T) or (N, T)")
	w.channels = fs.Int("channels", 0, "channels C of a CSV line (default 1; a .npy file gives its own)")
	w.arch = fs.String("arch", nn.PaperArchName, "architecture of the weights, on the input's C x T samples with the classes of the weights' last layer")
	return w
}

// model returns the --model source, the weights files, and what stands
// for --weights among the required flags: the files, or "-" for a native
// graph, which checks its own (an .onnx file holds them, a .toml spec
// needs them).
func (w *waveformFlags) model(cmd string, fs *flagSet, mf *modelFlags, stderr io.Writer) (runner.ModelSource, []string, string, error) {
	model, err := mf.torchModel(cmd, fs, stderr)
	if err != nil {
		return nil, nil, "", err
	}
	files, err := weightFiles(cmd, w.weights)
	if err != nil {
		return nil, nil, "", err
	}
	given := strings.Join(files, ",")
	if model != nil && model.Native() {
		given = "-"
	}
	return model, files, given, nil
}

func weightFiles(cmd string, weights listFlag) ([]string, error) {
	var files []string
	for _, w := range weights {
		for _, f := range strings.Split(w, ",") {
			if f = strings.TrimSpace(f); f == "" {
				return nil, fmt.Errorf("%s: --weights %q: an empty file name (accepted: W.safetensors[,W2.safetensors,...], or --weights repeated)", cmd, w)
			}
			files = append(files, f)
		}
	}
	return files, nil
}

// modelFlags are the flags of a PyTorch model of explain and predict.
type modelFlags struct {
	module *string
	args   listFlag
	output *string
}

func addModelFlags(fs *flagSet) *modelFlags {
	m := &modelFlags{}
	m.module = fs.String("model", "", "a PyTorch model: path/file.py:Class, a torch.nn.Module whose forward maps (B, C, T) inputs to (B, classes); --weights are its state_dict files (.safetensors or .pt), one draw each, served by the Python kit's model server (/usr/bin/python3 with torch). Or a native graph network computed in Go: file.onnx (its weights inside), or a graph spec spec.toml (recipes/archs) with --weights state_dicts")
	fs.Var(&m.args, "model-args", "the --model class's keyword arguments, key=value[,key=value...] (TOML values, as --set), repeatable")
	m.output = fs.String("model-output", "probs", "what the --model module's forward returns: probs (the softmax) or logits")
	return m
}

// boundFlags are the flags of explain and predict that raise the bounds
// on the input and the network (recipe.SizeBounds; their defaults are a
// recipe's bounds).
type boundFlags struct {
	inLen, params, batchValues *int
}

func addBoundFlags(fs *flagSet) *boundFlags {
	d := recipe.DefaultSizeBounds()
	return &boundFlags{
		inLen:       fs.Int("max-in-len", d.InLen, "the most samples a waveform's channel may have (a CSV line is refused, naming its line, once it holds more than channels x this many values)"),
		params:      fs.Int("max-params", d.Params, "the most parameters the network may have"),
		batchValues: fs.Int("max-batch-values", d.BatchValues, "the most float32 values a forward pass of 64 inputs may hold: 64 x a sample's values (the input and every layer's or graph node's output)"),
	}
}

// bounds are the flags' bounds; a value below 1 is refused.
func (b *boundFlags) bounds(cmd string) (recipe.SizeBounds, error) {
	for _, f := range []struct {
		name string
		v    int
	}{{"max-in-len", *b.inLen}, {"max-params", *b.params}, {"max-batch-values", *b.batchValues}} {
		if f.v < 1 {
			return recipe.SizeBounds{}, fmt.Errorf("%s: --%s %d: want a count >= 1", cmd, f.name, f.v)
		}
	}
	return recipe.SizeBounds{InLen: *b.inLen, Params: *b.params, BatchValues: *b.batchValues}, nil
}

// torchModel is the flags' model, nil without --model. --arch and the
// model flags without --model are refused.
func (m *modelFlags) torchModel(cmd string, fs *flagSet, stderr io.Writer) (runner.ModelSource, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *m.module == "" {
		for _, name := range []string{"model-args", "model-output"} {
			if set[name] {
				return nil, fmt.Errorf("%s: --%s without --model (accepted: --model path/file.py:Class --%s ...)", cmd, name, name)
			}
		}
		return nil, nil
	}
	if set["arch"] {
		return nil, fmt.Errorf("%s: --arch and --model: a PyTorch model is its own architecture (accepted: one of them)", cmd)
	}
	src := runner.ModelSourceOf(*m.module)
	torch, ok := src.(runner.TorchModule)
	if !ok {
		for _, name := range []string{"model-args", "model-output"} {
			if set[name] {
				return nil, fmt.Errorf("%s: --%s with --model %s: a native graph network (.onnx, .toml) has no class arguments and states its own output (accepted: --model path/file.py:Class --%s ...)", cmd, name, *m.module, name)
			}
		}
		return src, nil
	}
	var kvs []string
	for _, a := range m.args {
		kvs = append(kvs, runner.SplitSettings(a)...)
	}
	args, err := runner.ParseSettings(kvs)
	if err != nil {
		return nil, fmt.Errorf("%s: --model-args: %w", cmd, err)
	}
	torch.Args, torch.Output, torch.Stderr = args, *m.output, stderr
	return torch, nil
}

// referenceFlags are the flags of explain and predict that check the
// inputs against the network's training records.
type referenceFlags struct {
	dir    *string
	fs, f0 *float64
}

func addReferenceFlags(fs *flagSet) referenceFlags {
	return referenceFlags{
		dir: fs.String("reference", "", "a data folder of the network's labelled training records: check every input against it (out of distribution)"),
		fs:  fs.Float64("fs", 3200, "with --reference: the waveforms' sampling rate, Hz"),
		f0:  fs.Float64("f0", 50, "with --reference: the system frequency, Hz"),
	}
}

// explainDetails is the text of uaxai explain -h after the usage.
const explainDetails = `ONNX files as --weights, without --model, are an ensemble of their networks,
one draw a file (each holds its weights). --mc-dropout S makes the draws S
MC-dropout draws of one network instead (seeded by --seed: the same command,
the same bytes), written as S weights files' are: a map a draw (input,draw,...)
or the --summary of the S maps.
With --reference DIR (a data folder of the network's labelled training
records), every input is first checked against it as uaxai predict
--reference checks it (its RMS, fundamental frequency and THD against the
records of its predicted class, and the draws' penultimate features against
every class's); stderr says how, and names every input outside what the
model was trained on. --fs and --f0 give the waveforms' sampling rate and
system frequency.
A waveform of more than --max-in-len samples a channel, or a network of
more than --max-params parameters or whose forward pass of 64 inputs holds
more than --max-batch-values values (64 times the input's and every
layer's or graph node's output values), is refused before it is
allocated; the defaults are a recipe's bounds.`

func cmdExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("explain", stdout, stderr)
	var sets, summaries listFlag
	wf := addWaveformFlags(fs)
	input, channels := wf.input, wf.channels
	explainer := fs.String("explainer", "", "explainer plugin, e.g. occlusion, gradcam, lime")
	target := fs.String("target", "", "class explained: a class index, predicted, or a file of one class per line")
	fs.Var(&sets, "set", "explainer setting key=value (TOML value, else a string), repeatable")
	fs.Var(&summaries, "summary", "summary NAME or NAME:key=value,... (e.g. quantile:alpha=0.05), repeatable")
	out := fs.String("out", "", "output CSV file (default: stdout)")
	archName := wf.arch
	workers := fs.Int("workers", 0, "goroutines (0: all cores); the output does not depend on it")
	seed := fs.Uint64("seed", recipe.DefaultSeed, "base seed of a stochastic explainer (lime) and of --mc-dropout's draws")
	mcd := addMCDropoutFlag(fs)
	plugins := fs.String("plugins", "", "directory of third-party plugin binaries")
	mf := addModelFlags(fs)
	lf := addLimitFlag(fs)
	bf := addBoundFlags(fs)
	rf := addReferenceFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	bounds, err := bf.bounds("explain")
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("explain: unexpected argument %q (every input is a flag; see uaxai explain -h)", pos[0])
	}
	model, files, weightsGiven, err := wf.model("explain", fs, mf, stderr)
	if err != nil {
		return err
	}
	for _, req := range []struct{ name, value string }{{"weights", weightsGiven}, {"input", *input}, {"explainer", *explainer}, {"target", *target}} {
		if req.value == "" {
			return fmt.Errorf("explain: --%s is required (usage: uaxai explain --weights W.safetensors --input X.csv --explainer NAME --target C|predicted|FILE)", req.name)
		}
	}
	cfg, err := runner.ParseSettings(sets)
	if err != nil {
		return fmt.Errorf("explain: --set: %w", err)
	}
	opt := runner.ExplainOptions{Weights: files, Input: *input, Channels: *channels, Arch: *archName, Explainer: *explainer, Config: cfg,
		Target: *target, Seed: *seed, MCDropout: int(*mcd), Workers: *workers, Model: model, Bounds: bounds, Limits: lf.limits(),
		Reference: *rf.dir, Fs: *rf.fs, F0: *rf.f0, Warn: func(msg string) { fmt.Fprintln(stderr, msg) }}
	for _, s := range summaries {
		spec, err := runner.ParseSummary(s)
		if err != nil {
			return fmt.Errorf("explain: --summary %w", err)
		}
		opt.Summaries = append(opt.Summaries, spec)
	}
	return withPlugins("explain", *plugins, opt.Limits, stderr, func(m *plugin.Manager, bar *progress.Bar) error {
		opt.Plugins, opt.Observer = m, bar
		if *out != "" {
			return runner.ExplainFile(ctx, opt, *out)
		}
		return runner.Explain(ctx, opt, stdout)
	})
}

// withPlugins runs f with the plugin manager (of the built-ins and the
// --plugins directory, under lim) and a progress bar on stderr, closing
// both after it; an error is the command's.
func withPlugins(cmd, plugins string, lim limits.Limits, stderr io.Writer, f func(m *plugin.Manager, bar *progress.Bar) error) error {
	m, err := newManager(plugins, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	m.SetLimits(lim)
	tty, isFile := stderr.(*os.File)
	bar := progress.New(stderr, isFile && progress.IsTerminal(tty))
	err = f(m, bar)
	bar.Finish()
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}
