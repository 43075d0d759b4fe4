package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/BurntSushi/toml"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/host/ood"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/torchserver"
	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
)

// ExplainOptions are the settings of Explain (`uaxai explain`): a user's
// own waveforms explained under a user's own weights.
type ExplainOptions struct {
	Plugins   engine.Plugins // the plugin manager: the explainer and summaries run through it
	Weights   []string       // safetensors files (PyTorch state_dict names), one draw each, in order
	Input     string         // CSV of waveforms, one a line (the format of waveforms.csv), or a .npy array (N, C, T)
	Channels  int            // C of a CSV line (0: 1); a .npy file has its own
	Arch      string         // built-in architecture name ("": nn.PaperArchName), on the input's C x T with the weights' classes
	Explainer string         // plugin ID; the "explainer." prefix is optional
	Config    sdk.Config     // the explainer's config (--set)
	// Target is the class explained: a class index ("3"), "predicted" (the
	// argmax of the mean of the draws' probabilities), or the path of a
	// file of one class a line, one line an input.
	Target    string
	Summaries []SummarySpec // none: the draws' maps themselves
	Seed      uint64        // base seed of a stochastic explainer's streams and of MCDropout's draws
	// MCDropout, if not 0, is S >= 2: the draws are S MC-dropout draws of
	// the one network of Weights (or Model's own), its dropout on with
	// masks from Seed (mcdropout.go), instead of one draw a file.
	MCDropout int
	Workers   int // goroutines (0: GOMAXPROCS); the output does not depend on it
	Observer  engine.Observer
	// Model, if set, is the network whose draws (one a file of Weights,
	// state_dicts; an ONNX file's own) Explain serves for the time of the
	// call, on the input's channels x length (ModelSource: a PyTorch
	// module's by torchserver.Start, a graph network's in this process),
	// instead of building Arch's networks; every explainer's model calls
	// go to the served draws.
	Model ModelSource
	// Served, if set, is a server already started over the files of
	// Weights (or, with no Weights, its own) on the input's shape, whose
	// draws are explained; the caller closes it. Model is then unused.
	Served *torchserver.Server
	// Limits bound the host's requests to served draws (model_call; zero
	// fields: limits.Default's): past it a PyTorch model's server is
	// killed and Explain fails naming the draw and the request. The
	// explainer's own calls have the plugin manager's limits.
	Limits limits.Limits
	// Bounds bound the input's length and the network's size, checked
	// before either is allocated (readInputs, checkNetSize); zero:
	// recipe.DefaultSizeBounds, a recipe's.
	Bounds recipe.SizeBounds
	// Reference, if set, is a data folder of the network's labelled
	// training records: every input is checked against it, as Predict's
	// (PredictOptions.Reference; Fs and F0 the waveforms' rate and system
	// frequency), and Warn gets the checks' notes and a line for every
	// input outside what the model was trained on.
	Reference string
	Fs, F0    float64
	Warn      func(msg string)
	// explainerOptional: no Explainer is not an error (Evaluate without
	// a metric that explains again).
	explainerOptional bool
}

// SummarySpec is one summary of Explain: a summary plugin, its config,
// and the label that tags its lines.
type SummarySpec struct {
	Label  string // as given: "quantile:alpha=0.05"
	ID     string // "summary.quantile"
	Config sdk.Config
}

// explainBatch is the number of inputs an Explain call carries. It is
// fixed, not derived from the workers, so that every plugin sees the same
// batches whatever the machine.
const explainBatch = 8

// explainSplit is the split name of the random streams of a stochastic
// explainer: input i under draw s gets engine.ExplainerSeed(seed,
// "explain", i, s, 0), that is rng.Key(seed, "explainer", "explain", i, s).
const explainSplit = "explain"

// ParseSetting parses one "key=value" setting (`--set`, or a setting of
// `--summary NAME:...`). The value is read as a TOML value (60 is an
// integer, 0.5 a float, true a bool, "x" a string, [1, 2] an array); a
// value that is not TOML is the string as written (align=none).
func ParseSetting(kv string) (string, any, error) {
	k, v, ok := strings.Cut(kv, "=")
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if !ok || k == "" {
		return "", nil, fmt.Errorf("%q is not key=value (e.g. window=60, align=none)", kv)
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "", nil, fmt.Errorf("%q: key %q may hold letters, digits, '_' and '-' only", kv, k)
		}
	}
	if v == "" {
		return "", nil, fmt.Errorf("%q: no value after '=' (accepted: a number, true, false, a string, an array)", kv)
	}
	var m map[string]any
	if _, err := toml.Decode("v = "+v, &m); err == nil && len(m) == 1 {
		switch x := m["v"].(type) {
		case string, bool, int64, float64, []any, map[string]any:
			return k, x, nil
		}
	}
	return k, v, nil
}

// ParseSettings parses settings into a config; a key set twice is an
// error.
func ParseSettings(kvs []string) (sdk.Config, error) {
	cfg := sdk.Config{}
	for _, kv := range kvs {
		k, v, err := ParseSetting(kv)
		if err != nil {
			return nil, err
		}
		if _, dup := cfg[k]; dup {
			return nil, fmt.Errorf("key %q is set twice", k)
		}
		cfg[k] = v
	}
	return cfg, nil
}

// ParseSummary parses a summary as `--summary` gives it:
// NAME[:key=value[,key=value...]], e.g. "mean", "quantile:alpha=0.05",
// "band:k=1,l=4". Commas inside a quoted string or brackets do not split.
func ParseSummary(spec string) (SummarySpec, error) {
	name, rest, hasCfg := strings.Cut(spec, ":")
	if name = strings.TrimSpace(name); name == "" {
		return SummarySpec{}, fmt.Errorf("%q: no summary name (accepted: NAME or NAME:key=value,..., e.g. mean, quantile:alpha=0.05)", spec)
	}
	id, err := recipe.NormaliseID(name, sdk.KindSummary)
	if err != nil {
		return SummarySpec{}, fmt.Errorf("%q: %w", spec, err)
	}
	cfg := sdk.Config{}
	if hasCfg {
		if cfg, err = ParseSettings(splitTop(rest)); err != nil {
			return SummarySpec{}, fmt.Errorf("%q: %w", spec, err)
		}
	}
	return SummarySpec{Label: spec, ID: id, Config: cfg}, nil
}

// SplitSettings splits "key=value,key=value,..." into its settings at
// the commas outside quotes and brackets (--model-args cin=3,n=16).
func SplitSettings(s string) []string { return splitTop(s) }

// splitTop splits s at the commas outside quotes and brackets.
func splitTop(s string) []string {
	var out []string
	depth, quote, start := 0, byte(0), 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// explainJob is one Explain: everything checked and loaded.
type explainJob struct {
	opt      ExplainOptions
	id       string
	info     sdk.Info
	n, nIn   int // values an input, inputs
	inC      int // channels an input
	x        []float32
	targets  []int
	draws    []nn.Params       // the draws' networks, or none when served
	served   []sdk.ModelRef    // the served draws (ExplainOptions.Model, Served)
	calls    driver.ModelCalls // bounds the host's requests to them
	server   io.Closer         // the server Explain started (a PyTorch model's, or the graph networks' model service), closed with the job
	names    []string          // the draws' weights files
	step     engine.Explaining // the explainer with every draw loaded
	ex       driver.Explainer  // the explainer (Evaluate loads other models into it)
	sums     []sdk.Summary
	workers  int
	obs      engine.Observer
	progress atomic.Int64
}

// Explain explains every waveform of opt.Input for its target under every
// weights file with the explainer, and writes CSV to w:
//
//   - one weights file and no summary: one line an input, the map's N
//     values (N = channels x length), no header: the layout of the golden
//     occlusion.csv;
//   - several weights files and no summary: a header
//     input,draw,v0,...,v<N-1>, then one line an input and draw (input
//     major), input the 0-based line of opt.Input and draw the 0-based
//     position of the weights file;
//   - with summaries: a header input,summary,part,v0,...,v<N-1>, then for
//     each input, for each summary in order, its result: a map is one line
//     of part "map", a set one line of part "set" (1 in the set, 0 out), a
//     band two lines, "lower" then "upper". summary is the summary's label
//     as given (quoted as CSV when it holds a comma or a quote).
//
// Numbers are written in Go's shortest form that reads back to the same
// float64. The output is the same bytes for any number of workers. Errors
// name the file and line, the flag's value or the plugin that is wrong.
func Explain(ctx context.Context, opt ExplainOptions, w io.Writer) error {
	j, err := newExplainJob(ctx, opt)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	// An explainer's request to a served draw past model_call stops the
	// server (a PyTorch model's) too.
	err = j.calls.Expire(j.run(ctx, bw))
	if err == nil {
		err = bw.Flush()
	}
	if g, ok := j.server.(*graphServer); ok && err == nil {
		if note := g.pathNote(); note != "" {
			j.obs.Note(note)
		}
	}
	return errors.Join(err, j.close())
}

// ExplainFile is Explain writing to the file path, atomically: the file
// appears complete or not at all.
func ExplainFile(ctx context.Context, opt ExplainOptions, path string) error {
	return writeAtomic(path, func(w *bufio.Writer) error { return Explain(ctx, opt, w) })
}

// writeAtomic writes the file path with write: it appears complete or
// not at all.
func writeAtomic(path string, write func(w *bufio.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := atomicfile.Temp(dir, filepath.Base(path), write)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("output: %w", err)
	}
	atomicfile.SyncDir(dir)
	return nil
}

func newExplainJob(ctx context.Context, opt ExplainOptions) (_ *explainJob, err error) {
	if opt.Plugins == nil {
		return nil, errors.New("explain: no plugin manager")
	}
	opt.Model, opt.Weights = onnxEnsemble(opt.Model, opt.Weights)
	if len(opt.Weights) == 0 && opt.Served == nil && !native(opt.Model) {
		return nil, errors.New("no weights file (accepted: one or more safetensors files, each one draw)")
	}
	if opt.Input == "" {
		return nil, errors.New("no input file (accepted: a CSV of waveforms, one a line)")
	}
	if err := checkMCDropout(opt.MCDropout, opt.Weights, opt.Model, opt.Served != nil); err != nil {
		return nil, err
	}
	mc := mcDropout{draws: opt.MCDropout, seed: opt.Seed}
	j := &explainJob{opt: opt, workers: opt.Workers, obs: opt.Observer, names: opt.Weights}
	if j.workers <= 0 {
		j.workers = runtime.GOMAXPROCS(0)
	}
	if j.obs == nil {
		j.obs = engine.NopObserver{}
	}
	defer func() {
		if err != nil {
			j.close()
		}
	}()
	in, err := readInputs(opt.Input, opt.Channels, opt.Bounds)
	if err != nil {
		return nil, err
	}
	j.n, j.nIn, j.x, j.inC = in.c*in.t, in.n, in.x, in.c
	var classes int
	if opt.Served != nil || opt.Model != nil {
		if j.served, j.names, j.server, j.calls, err = serveDraws(ctx, opt.Model, opt.Served, opt.Weights, mc, in, opt.Limits); err != nil {
			return nil, err
		}
		if classes, err = servedShape(ctx, j.served, j.names, j.n, j.calls); err != nil {
			return nil, err
		}
	} else {
		arch, err := inputArch(opt.Arch, in, opt.Input, opt.Weights)
		if err != nil {
			return nil, err
		}
		for s, path := range opt.Weights {
			p, err := nn.LoadParams(path, arch)
			if err != nil {
				return nil, fmt.Errorf("weights file %d (draw %d): %w", s+1, s, err)
			}
			j.draws = append(j.draws, p)
		}
		if mc.on() {
			if j.draws, err = mc.fold(j.draws[0], fmt.Sprintf("architecture %q", arch.Name)); err != nil {
				return nil, err
			}
			j.names = mc.drawNames(opt.Weights[0])
		}
		classes = arch.Classes()
	}
	if j.targets, err = j.resolveTargets(ctx, classes); err != nil {
		return nil, err
	}
	if opt.Reference != "" {
		if err := j.check(ctx, in, classes); err != nil {
			return nil, err
		}
	}
	if opt.Explainer == "" {
		if opt.explainerOptional {
			return j, nil
		}
		return nil, errors.New("no explainer (accepted: a plugin name, e.g. occlusion, gradcam, lime; see uaxai plugins)")
	}
	if j.id, err = recipe.NormaliseID(opt.Explainer, sdk.KindExplainer); err != nil {
		return nil, fmt.Errorf("explainer: %w", err)
	}
	ex, err := opt.Plugins.Explainer(ctx, j.id)
	if err != nil {
		return nil, err
	}
	j.ex = ex
	j.info = ex.Info()
	if err := ex.Check(opt.Config); err != nil {
		return nil, fmt.Errorf("explainer config (--set): %w", err)
	}
	labels := map[string]bool{}
	for _, spec := range opt.Summaries {
		if labels[spec.Label] {
			return nil, fmt.Errorf("summary %q is given twice", spec.Label)
		}
		labels[spec.Label] = true
		sm, err := opt.Plugins.Summary(ctx, spec.ID)
		if err != nil {
			return nil, fmt.Errorf("summary %q: %w", spec.Label, err)
		}
		if err := sm.Check(spec.Config); err != nil {
			return nil, fmt.Errorf("summary %q: %w", spec.Label, err)
		}
		if need := max(sm.Info().MinDraws, 1); len(j.names) < need {
			return nil, fmt.Errorf("summary %q needs at least %d draws; %d weights file(s) given, one draw each (or one file and --mc-dropout S, S draws)", spec.Label, need, len(j.names))
		}
		j.sums = append(j.sums, sm)
	}
	j.step = engine.Explaining{ID: j.id, Config: opt.Config, Stochastic: j.info.Stochastic, Seed: opt.Seed, DrawNames: j.names}
	for s := range j.names {
		d := sdk.Draw{}
		if j.served != nil {
			d.Served = &j.served[s]
		} else {
			d.Params = j.draws[s]
		}
		m, err := ex.Load(ctx, d)
		if err != nil {
			return nil, fmt.Errorf("%s: load draw %d (%s): %w", j.id, s, j.names[s], j.calls.Expire(err))
		}
		j.step.Models = append(j.step.Models, m)
	}
	return j, nil
}

// resolveTargets returns the class explained for every input.
func (j *explainJob) resolveTargets(ctx context.Context, classes int) ([]int, error) {
	spec := j.opt.Target
	const accepted = "accepted: a class 0..%d, predicted, or a file of one class a line"
	switch spec {
	case "":
		return nil, fmt.Errorf("no target ("+accepted+")", classes-1)
	case recipe.TargetPredicted:
		return j.predicted(ctx, classes)
	}
	if c, err := strconv.Atoi(spec); err == nil {
		if c < 0 || c >= classes {
			return nil, fmt.Errorf("target %d is not a class ("+accepted+")", c, classes-1)
		}
		out := make([]int, j.nIn)
		for i := range out {
			out[i] = c
		}
		return out, nil
	}
	ls, err := data.ReadLabels(spec, classes)
	if err != nil {
		return nil, fmt.Errorf("target file: %w", err)
	}
	if len(ls) != j.nIn {
		return nil, fmt.Errorf("target file %s: %d classes, want %d (one a line of %s)", spec, len(ls), j.nIn, j.opt.Input)
	}
	return ls, nil
}

// predicted is the argmax (lowest class on ties) of the mean over the
// draws of the class probabilities, for every input.
func (j *explainJob) predicted(ctx context.Context, classes int) ([]int, error) {
	if j.served != nil {
		sum := make([]float64, j.nIn*classes)
		if err := servedProbs(ctx, sum, j.served, j.names, j.x, j.n, classes, j.calls); err != nil {
			return nil, fmt.Errorf("target predicted: %w", err)
		}
		out := make([]int, j.nIn)
		for i := range out {
			row := sum[i*classes : (i+1)*classes]
			for c, v := range row {
				if v > row[out[i]] {
					out[i] = c
				}
			}
		}
		return out, nil
	}
	models := make([]nn.Model, len(j.draws))
	for s, d := range j.draws {
		m, err := nn.Open(d)
		if err != nil {
			return nil, fmt.Errorf("weights file %s: %w", j.names[s], err)
		}
		models[s] = m
	}
	const batch = forwardBatch
	out := make([]int, j.nIn)
	units := (j.nIn + batch - 1) / batch
	err := engine.Parallel(ctx, units, j.workers, func(ctx context.Context, u int) error {
		b0, b1 := u*batch, min(j.nIn, (u+1)*batch)
		if err := engine.PredictMean(ctx, out[b0:b1], models, j.x[b0*j.n:b1*j.n], classes); err != nil {
			return fmt.Errorf("predictions of inputs %d..%d: %w", b0, b1-1, err)
		}
		return nil
	})
	return out, err
}

// check checks the inputs against opt.Reference (checkInputs) under
// their predicted classes, and tells opt.Warn how, and which inputs are
// out of distribution.
func (j *explainJob) check(ctx context.Context, in inputs, classes int) error {
	pred := j.targets // the predicted classes already, with --target predicted
	if j.opt.Target != recipe.TargetPredicted {
		var err error
		if pred, err = j.predicted(ctx, classes); err != nil {
			return err
		}
	}
	names, err := newPredictions("", 0, classes)
	if err != nil {
		return err
	}
	var f ood.Features
	var D int
	if j.served != nil {
		f, D = servedFeatures(ctx, j.served, j.calls)
	} else {
		models := make([]nn.Model, len(j.draws))
		for s, d := range j.draws {
			if models[s], err = nn.Open(d); err != nil {
				return fmt.Errorf("weights file %s: %w", j.names[s], err)
			}
		}
		f, D = modelFeatures(ctx, models)
	}
	checks, notes, err := checkInputs(ctx, j.opt.Reference, j.opt.Fs, j.opt.F0, in, pred, names.Classes, len(j.names), D, f)
	if err != nil {
		return err
	}
	if j.opt.Warn == nil {
		return nil
	}
	for _, n := range notes {
		j.opt.Warn("note: " + n)
	}
	for i, c := range checks {
		if c.OOD {
			j.opt.Warn(fmt.Sprintf("warning: input %d (line %d, predicted %s): %s", i, i+1, names.Classes[pred[i]], c.Reason))
		}
	}
	return nil
}

func (j *explainJob) close() error {
	var errs []error
	for _, m := range j.step.Models {
		errs = append(errs, m.Close())
	}
	j.step.Models = nil
	if j.server != nil {
		errs = append(errs, j.server.Close())
		j.server = nil
	}
	return errors.Join(errs...)
}

// run explains batches of explainBatch inputs, one (batch, draw) pair a
// task, on j.workers goroutines; the last draw of a batch to finish
// summarises it and hands its lines to the writer, which writes batches
// in input order.
func (j *explainJob) run(ctx context.Context, w io.Writer) error {
	S := len(j.step.Models)
	units := (j.nIn + explainBatch - 1) / explainBatch
	if err := j.header(w); err != nil {
		return err
	}
	maps := make([][][]float64, j.nIn)
	for i := range maps {
		maps[i] = make([][]float64, S)
	}
	remain := make([]atomic.Int32, units)
	for u := range remain {
		remain[u].Store(int32(S))
	}
	out := &orderedWriter{w: w, done: make([][]byte, units), ready: make([]bool, units)}
	j.obs.Stage(fmt.Sprintf("explain %d inputs x %d draws (%s)", j.nIn, S, j.id), j.nIn*S)
	return engine.Parallel(ctx, units*S, j.workers, func(ctx context.Context, task int) error {
		u, s := task/S, task%S
		b0, b1 := u*explainBatch, min(j.nIn, (u+1)*explainBatch)
		records := make([]int, b1-b0)
		for i := range records {
			records[i] = b0 + i
		}
		in := engine.Inputs{Split: explainSplit, Records: records, X: j.x[b0*j.n : b1*j.n], Targets: j.targets[b0:b1],
			Where: fmt.Sprintf("inputs %d..%d", b0, b1-1)}
		if err := j.step.Explain(ctx, maps[b0:b1], in, s); err != nil {
			return err
		}
		j.obs.Advance(int(j.progress.Add(int64(b1-b0))), "")
		if remain[u].Add(-1) > 0 {
			return nil
		}
		b, err := j.lines(ctx, b0, maps[b0:b1])
		if err != nil {
			return err
		}
		clear(maps[b0:b1]) // written: let them go
		return out.put(u, b)
	})
}

// header writes the CSV header, if the layout has one.
func (j *explainJob) header(w io.Writer) error {
	var b []byte
	switch {
	case len(j.sums) > 0:
		b = append(b, "input,summary,part"...)
	case len(j.step.Models) > 1:
		b = append(b, "input,draw"...)
	default:
		return nil
	}
	for i := range j.n {
		b = append(b, ",v"...)
		b = strconv.AppendInt(b, int64(i), 10)
	}
	_, err := w.Write(append(b, '\n'))
	return err
}

// lines formats the output lines of inputs b0.. whose S maps are maps.
func (j *explainJob) lines(ctx context.Context, b0 int, maps [][][]float64) ([]byte, error) {
	var b []byte
	if len(j.sums) == 0 {
		for i, ms := range maps {
			for s, m := range ms {
				if len(ms) > 1 {
					b = strconv.AppendInt(b, int64(b0+i), 10)
					b = append(b, ',')
					b = strconv.AppendInt(b, int64(s), 10)
					b = append(b, ',')
				}
				b = appendValues(b, m)
			}
		}
		return b, nil
	}
	results := make([][]sdk.Result, len(j.sums))
	for k, sm := range j.sums {
		spec := j.opt.Summaries[k]
		res, err := sm.Summarise(ctx, maps, spec.Config)
		if err != nil {
			return nil, fmt.Errorf("summary %q on inputs %d..%d: %w", spec.Label, b0, b0+len(maps)-1, err)
		}
		results[k] = res
	}
	for i := range maps {
		for k, sm := range j.sums {
			tag := csvField(j.opt.Summaries[k].Label)
			r := results[k][i]
			line := func(part string, v []float64) {
				b = strconv.AppendInt(b, int64(b0+i), 10)
				b = append(b, ',')
				b = append(b, tag...)
				b = append(b, ',')
				b = append(b, part...)
				b = append(b, ',')
				b = appendValues(b, v)
			}
			switch sm.Info().Output {
			case sdk.OutputSet:
				v := make([]float64, len(r.Set))
				for n, in := range r.Set {
					if in {
						v[n] = 1
					}
				}
				line("set", v)
			case sdk.OutputBand:
				line("lower", r.Lower)
				line("upper", r.Upper)
			default:
				line("map", r.Map)
			}
		}
	}
	return b, nil
}

// appendValues appends v as comma-separated shortest float64 forms and a
// newline.
func appendValues(b []byte, v []float64) []byte {
	for n, x := range v {
		if n > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
	}
	return append(b, '\n')
}

// csvField quotes s as a CSV field when it holds a comma, a quote or a
// line break.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// orderedWriter writes the output of batches in batch order, whatever
// order they finish in.
type orderedWriter struct {
	mu    sync.Mutex
	w     io.Writer
	done  [][]byte
	ready []bool
	next  int
}

func (o *orderedWriter) put(u int, b []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done[u], o.ready[u] = b, true
	for o.next < len(o.done) && o.ready[o.next] {
		if _, err := o.w.Write(o.done[o.next]); err != nil {
			return fmt.Errorf("output: %w", err)
		}
		o.done[o.next] = nil
		o.next++
	}
	return nil
}
