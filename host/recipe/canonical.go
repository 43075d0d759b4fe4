package recipe

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/internal/units"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

// The canonical form: every key written, defaults filled in, keys in a fixed
// order (host tables in schema order, plugin tables sorted by key), paths
// absolute. Re-parsing it gives an equal Recipe.

type canonRecipe struct {
	Name      string           `toml:"name"`
	Seed      int64            `toml:"seed"`
	Workers   int              `toml:"workers"`
	Out       string           `toml:"out"`
	PluginDir []string         `toml:"plugin_dirs,omitempty"`
	Data      canonData        `toml:"data"`
	Model     canonModel       `toml:"model"`
	Train     nn.TrainConfig   `toml:"train"`
	Posterior []map[string]any `toml:"posterior"`
	Explainer []map[string]any `toml:"explainer"`
	Summary   []map[string]any `toml:"summary"`
	Evaluate  canonEvaluate    `toml:"evaluate"`
	Limits    canonLimits      `toml:"limits"`
	Slurm     *canonSlurm      `toml:"slurm,omitempty"`
	Replicate *canonReplicates `toml:"replicates,omitempty"`

	canonAnalysis
}

// canonAnalysis is the analysis tables and [recording]: absent when unset.
type canonAnalysis struct {
	Paper         *canonPaper       `toml:"paper,omitempty"`
	Sensitivity   *canonSensitivity `toml:"sensitivity,omitempty"`
	Calibration   *Calibration      `toml:"calibration,omitempty"`
	Agreement     *Agreement        `toml:"agreement,omitempty"`
	Bound         *Bound            `toml:"bound,omitempty"`
	TotalVariance *TotalVariance    `toml:"total_variance,omitempty"`
	Figures       *Figures          `toml:"figures,omitempty"`
	Output        *Output           `toml:"output,omitempty"`
	Recording     *canonRecording   `toml:"recording,omitempty"`
}

type canonReplicates struct {
	Count          int     `toml:"count"`
	Seeds          []int64 `toml:"seeds,omitempty"`
	ResampleSplits bool    `toml:"resample_splits,omitempty"`
}

func (r *Replicates) canon() *canonReplicates {
	if r == nil {
		return nil
	}
	c := &canonReplicates{Count: r.Count, ResampleSplits: r.ResampleSplits}
	for _, s := range r.Seeds {
		c.Seeds = append(c.Seeds, int64(s))
	}
	return c
}

type canonPaper struct {
	Tables []string `toml:"tables"`
}

type canonSensitivity struct {
	Distortions []string `toml:"distortions"`
	Records     string   `toml:"records"`
}

// canon fills the analysis tables of c (none when a is empty).
func (a Analysis) canon(c *canonAnalysis) {
	if len(a.Paper) > 0 {
		c.Paper = &canonPaper{Tables: a.Paper}
	}
	if s := a.Sensitivity; s != nil {
		cs := &canonSensitivity{Records: s.Records}
		for _, d := range s.Distortions {
			cs.Distortions = append(cs.Distortions, d.String())
		}
		c.Sensitivity = cs
	}
	c.Calibration, c.Agreement, c.Bound, c.TotalVariance, c.Figures = a.Calibration, a.Agreement, a.Bound, a.TotalVariance, a.Figures
	if a.Output.Maps {
		o := a.Output
		c.Output = &o
	}
}

type canonLimits struct {
	Handshake      string `toml:"handshake"`
	Check          string `toml:"check"`
	Fit            string `toml:"fit"`
	Sample         string `toml:"sample"`
	Load           string `toml:"load"`
	ExplainBatch   string `toml:"explain_batch"`
	SummariseBatch string `toml:"summarise_batch"`
	ModelCall      string `toml:"model_call"`
	ScriptMemory   string `toml:"script_memory"`
	PluginMemory   string `toml:"plugin_memory"`
}

func canonLimitsOf(l limits.Limits) canonLimits {
	f := units.FormatDuration
	return canonLimits{
		Handshake: f(l.Handshake), Check: f(l.Check), Fit: f(l.Fit), Sample: f(l.Sample), Load: f(l.Load),
		ExplainBatch: f(l.ExplainBatch), SummariseBatch: f(l.SummariseBatch), ModelCall: f(l.ModelCall), ScriptMemory: FormatSize(l.ScriptMemory),
		PluginMemory: pluginMemory(l.PluginMemory),
	}
}

// pluginMemory writes plugin_memory: a size, or "auto" for zero (the
// default, which depends on the machine).
func pluginMemory(n int64) string {
	if n <= 0 {
		return AutoMemory
	}
	return FormatSize(n)
}

type canonData struct {
	Source        string    `toml:"source"`
	ValFraction   *float64  `toml:"val_fraction,omitempty"`
	Classes       []string  `toml:"classes,omitempty"`
	TrainPerClass *int      `toml:"train_per_class,omitempty"`
	TestSplits    *int      `toml:"test_splits,omitempty"`
	TestPerClass  *int      `toml:"test_per_class,omitempty"`
	F0            *float64  `toml:"f0,omitempty"`
	Fs            *float64  `toml:"fs,omitempty"`
	Cycles        *int      `toml:"cycles,omitempty"`
	Noise         *bool     `toml:"noise,omitempty"`
	SNRdB         []float64 `toml:"snr_db,omitempty"`
	Phase         any       `toml:"phase,omitempty"`
	Train         string    `toml:"train,omitempty"`
	Val           string    `toml:"val,omitempty"`
	Test          []string  `toml:"test,omitempty"`
	Channels      int       `toml:"channels,omitzero"`
	ClassNames    []string  `toml:"class_names,omitempty"`
	ChannelNames  []string  `toml:"channel_names,omitempty"`
}

type canonModel struct {
	Arch       string           `toml:"arch,omitempty"`
	Torch      string           `toml:"torch,omitempty"`
	Graph      string           `toml:"graph,omitempty"`
	Nodes      []map[string]any `toml:"nodes,omitempty"`
	ONNX       string           `toml:"onnx,omitempty"`
	Args       map[string]any   `toml:"args,omitempty"`
	Output     string           `toml:"output,omitempty"`
	InChannels int              `toml:"in_channels,omitzero"`
	InLen      int              `toml:"in_len,omitzero"`
	Classes    int              `toml:"classes,omitzero"`
	Layers     []map[string]any `toml:"layers,omitempty"`
}

type canonEvaluate struct {
	Mask   string   `toml:"mask"`
	Eps    float64  `toml:"eps"`
	Groups []string `toml:"groups"`
	Abs    bool     `toml:"abs"`
	// Metrics and Metric: the metrics' IDs and their non-empty
	// configurations by short name; absent without metrics, so that
	// older recipes keep their hash.
	Metrics        []string                  `toml:"metrics,omitempty"`
	RandomiseDraws bool                      `toml:"randomise_draws,omitempty"`
	Metric         map[string]map[string]any `toml:"metric,omitempty"`
}

// pathFn maps an absolute path to the form written: itself in Canonical,
// relative to the recipe's directory in Hash.
type pathFn func(string) string

func (r *Recipe) relPath(p string) string {
	if r.Dir == "" {
		return p
	}
	if rel, err := filepath.Rel(r.Dir, p); err == nil {
		return filepath.ToSlash(rel)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func (r *Recipe) canonData(path pathFn) canonData {
	d := r.Data
	c := canonData{Source: d.Source, Classes: d.Classes}
	if d.ValFraction != 0 {
		c.ValFraction = ptr(d.ValFraction)
	}
	c.Channels, c.ClassNames, c.ChannelNames = d.Channels, d.ClassNames, d.ChannelNames
	if d.Generated() {
		c.TrainPerClass, c.TestSplits, c.TestPerClass = ptr(d.TrainPerClass), ptr(d.TestSplits), ptr(d.TestPerClass)
		c.F0, c.Fs, c.Cycles, c.Noise = ptr(d.F0), ptr(d.Fs), ptr(d.Cycles), ptr(d.Noise)
		c.SNRdB = []float64{d.SNRdB[0], d.SNRdB[1]}
		if d.Phase.Random {
			c.Phase = "random"
		} else {
			c.Phase = d.Phase.Value
		}
	}
	if d.Train != "" {
		c.Train = path(d.Train)
	}
	if d.Val != "" {
		c.Val = path(d.Val)
	}
	for _, t := range d.Test {
		c.Test = append(c.Test, path(t))
	}
	return c
}

func (r *Recipe) canonModel() canonModel {
	m := canonModel{Arch: r.Model.Arch}
	if r.Model.GraphSpec != nil {
		m = canonModel{Graph: r.Model.GraphFile, ONNX: r.Model.ONNXFile}
		if m.ONNX != "" {
			m.Graph = ""
		}
		if r.Model.GraphInline {
			m.Arch = r.Model.Arch
			for _, nd := range r.Model.GraphSpec.Nodes {
				t := map[string]any{"name": nd.Name, "op": nd.Op}
				if nd.Inputs != nil {
					t["inputs"] = nd.Inputs
				}
				for k, v := range nd.Attrs {
					t[k] = v
				}
				m.Nodes = append(m.Nodes, t)
			}
		}
		m.InChannels, m.InLen, m.Classes = r.Model.InChannels, r.Model.InLen, r.Model.Classes
		return m
	}
	if r.Model.Torch != "" {
		m.Torch, m.Args, m.Output = r.Model.Torch, r.Model.TorchArgs, r.Model.TorchOutput
		m.InChannels, m.InLen, m.Classes = r.Model.InChannels, r.Model.InLen, r.Model.Classes
		return m
	}
	if r.Model.Layers == nil {
		m.InChannels, m.InLen, m.Classes = r.Model.InChannels, r.Model.InLen, r.Model.Classes
		return m
	}
	m.InChannels, m.InLen = r.Model.InChannels, r.Model.InLen
	m.Layers = make([]map[string]any, len(r.Model.Layers))
	for i, l := range r.Model.Layers {
		m.Layers[i] = canonLayer(l)
	}
	return m
}

// canonLayer is one [[model.layers]] table: every field of nn.Layer under
// its toml key, zero values left out but the kind, so that a field added
// to nn.Layer is written without a line here.
func canonLayer(l nn.Layer) map[string]any {
	v := reflect.ValueOf(l)
	t := make(map[string]any, v.NumField())
	for i := range v.NumField() {
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("toml"), ",")
		f := v.Field(i)
		if key == "" || key == "-" || (f.IsZero() && key != "kind") {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			t[key] = f.String()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			t[key] = int(f.Int())
		case reflect.Float32, reflect.Float64:
			t[key] = f.Float()
		default:
			t[key] = f.Interface()
		}
	}
	return t
}

// canonPlugin is one plugin table: its host keys and its config.
func canonPlugin(p PluginRef, path pathFn, label bool) map[string]any {
	t := make(map[string]any, len(p.Config)+3)
	for k, v := range p.Config {
		t[k] = v
	}
	if p.Script != "" {
		t["script"] = path(p.Script)
	} else {
		t["use"] = p.ID
	}
	if label {
		t["label"] = p.Label
	}
	switch p.Kind {
	case sdk.KindPosterior:
		t["draws"] = p.Draws
	case sdk.KindExplainer:
		t["target"] = p.Target
	}
	return t
}

// canonMetrics sets e's metrics and their tables.
func canonMetrics(e *canonEvaluate, ms []MetricRef) {
	for _, m := range ms {
		e.Metrics = append(e.Metrics, m.ID)
		if len(m.Config) == 0 {
			continue
		}
		if e.Metric == nil {
			e.Metric = map[string]map[string]any{}
		}
		t := make(map[string]any, len(m.Config))
		for k, v := range m.Config {
			t[k] = v
		}
		e.Metric[strings.TrimPrefix(m.ID, "metric.")] = t
	}
}

func canonPlugins(ps []PluginRef, path pathFn) []map[string]any {
	out := make([]map[string]any, len(ps))
	for i, p := range ps {
		out[i] = canonPlugin(p, path, true)
	}
	return out
}

func (r *Recipe) canon(path pathFn) canonRecipe {
	groups := append([]string{}, r.Evaluate.Groups...)
	c := canonRecipe{
		Name: r.Name, Seed: int64(r.Seed), Workers: r.Workers, Out: r.Out, PluginDir: mapPaths(r.PluginDirs, path),
		Data: r.canonData(path), Model: r.canonModel(), Train: r.Train,
		Posterior: canonPlugins(r.Posteriors, path),
		Explainer: canonPlugins(r.Explainers, path),
		Summary:   canonPlugins(r.Summaries, path),
		Evaluate:  canonEvaluate{Mask: r.Evaluate.Mask, Eps: r.Evaluate.Eps, Groups: groups, Abs: r.Evaluate.Abs, RandomiseDraws: r.Evaluate.RandomiseDraws},
		Limits:    canonLimitsOf(r.Limits),
		Slurm:     r.Slurm.canon(),
		Replicate: r.Replicates.canon(),
	}
	canonMetrics(&c.Evaluate, r.Evaluate.Metrics)
	r.Analysis.canon(&c.canonAnalysis)
	if r.Recording != nil {
		rc := r.Recording
		c.Recording = &canonRecording{File: path(rc.File), Channel: rc.Channel, Channels: rc.Channels, Phases: rc.Phases, Nominal: rc.Nominal, Rate: rc.Rate, Hop: rc.Hop}
		if rc.NominalAuto {
			c.Recording.Nominal = "auto"
		}
	}
	return c
}

// canonRecording is [recording] as written: Recording's keys, nominal
// a number or "auto".
type canonRecording struct {
	File     string   `toml:"file"`
	Channel  string   `toml:"channel"`
	Channels []string `toml:"channels,omitempty"`
	Phases   []string `toml:"phases,omitempty"`
	Nominal  any      `toml:"nominal"`
	Rate     float64  `toml:"rate"`
	Hop      int      `toml:"hop"`
}

func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Canonical returns the recipe as run: TOML with every default filled in,
// paths absolute, keys in a fixed order. The bytes depend only on the
// Recipe's value, and Parse of them gives an equal Recipe (up to Line,
// Path and the line table).
func (r *Recipe) Canonical() ([]byte, error) {
	body, err := encode(r.canon(func(p string) string { return p }))
	if err != nil {
		return nil, fmt.Errorf("recipe %s: canonical form: %w", r.name, err)
	}
	head := "# uaxai recipe as run: defaults filled in.\n"
	if r.Path != "" {
		head += "# from " + r.Path + "\n"
	}
	return append([]byte(head+"\n"), body...), nil
}

// Hash parts. A part is a top-level key or table name, or one entry of a
// plugin kind ("posterior.0").
var (
	// FitParts determine the trained posteriors, together with the
	// posterior's own part "posterior.N".
	FitParts = []string{"seed", "data", "model", "train"}
	// ResultParts determine every number of a run: Hash() hashes them.
	ResultParts = []string{"seed", "data", "model", "train", "posterior", "explainer", "summary", "evaluate", "analysis"}
)

// Hash returns the SHA-256 (hex) of the named canonical parts, in the order
// given; with no parts it hashes ResultParts. Parts:
//
//   - "name", "seed", "workers", "out": the top-level value.
//   - "data", "train", "evaluate": the canonical table, with paths relative
//     to the recipe's directory (so a moved checkout keeps its hashes). Only
//     the paths of a "files" source are hashed, not the files' contents.
//   - "model": the resolved architecture (nn.Arch), so that a change to a
//     built-in architecture changes the hash.
//   - "posterior", "explainer", "summary": every table of that kind in full
//     (use or script, label, draws, target, config). A script's path is
//     hashed, not its contents.
//   - "posterior.N": what Fit of the N-th posterior (0-based) sees of its
//     table: its ID and config, not its label or draws. The cache key of a
//     trained posterior is Hash(append(FitParts, "posterior.N")...).
//   - "explainer.N", "summary.N": that table without its label.
//
// Workers, out, name, [limits] and [slurm] never change results, so
// ResultParts leave them out ([limits] and [slurm] are no part at all); a summary changes Hash() but not Hash(FitParts...). An unknown part
// is a programmer error and panics.
func (r *Recipe) Hash(parts ...string) string {
	if len(parts) == 0 {
		parts = ResultParts
		if r.Replicates != nil {
			// Only when given, so that a recipe without it keeps its hash.
			parts = append(slices.Clip(parts), "replicates")
		}
	}
	rel := r.relPath
	h := sha256.New()
	for _, part := range parts {
		b, err := r.part(part, rel)
		if err != nil {
			panic(fmt.Sprintf("recipe: hash part %q: %v", part, err))
		}
		fmt.Fprintf(h, "%s %d\n", part, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (r *Recipe) part(part string, path pathFn) ([]byte, error) {
	wrap := func(v any) ([]byte, error) { return encode(map[string]any{strings.SplitN(part, ".", 2)[0]: v}) }
	switch part {
	case "name":
		return []byte(strconv.Quote(r.Name)), nil
	case "seed":
		return []byte(strconv.FormatUint(r.Seed, 10)), nil
	case "workers":
		return []byte(strconv.Itoa(r.Workers)), nil
	case "out":
		return []byte(strconv.Quote(r.Out)), nil
	case "data":
		return wrap(r.canonData(path))
	case "train":
		return wrap(r.Train)
	case "evaluate":
		return wrap(r.canon(path).Evaluate)
	case "analysis":
		return encode(r.canon(path).canonAnalysis)
	case "replicates":
		return wrap(r.Replicates.canon())
	case "model":
		a, err := r.Arch()
		if err != nil {
			return nil, err
		}
		return wrap(a)
	case "posterior":
		return wrap(canonPlugins(r.Posteriors, path))
	case "explainer":
		return wrap(canonPlugins(r.Explainers, path))
	case "summary":
		return wrap(canonPlugins(r.Summaries, path))
	}
	kind, idx, ok := strings.Cut(part, ".")
	if ok {
		var list []PluginRef
		switch sdk.Kind(kind) {
		case sdk.KindPosterior:
			list = r.Posteriors
		case sdk.KindExplainer:
			list = r.Explainers
		case sdk.KindSummary:
			list = r.Summaries
		default:
			return nil, fmt.Errorf("unknown part")
		}
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= len(list) {
			return nil, fmt.Errorf("no %s table %s (have %d)", kind, idx, len(list))
		}
		p := list[i]
		if p.Kind == sdk.KindPosterior {
			t := map[string]any{"use": p.ID}
			for k, v := range p.Config {
				t[k] = v
			}
			return wrap(t)
		}
		return wrap(canonPlugin(p, path, false))
	}
	return nil, fmt.Errorf("unknown part (accepted: name, seed, workers, out, data, model, train, posterior, explainer, summary, evaluate, analysis, replicates, <kind>.<index>)")
}

// mapPaths applies path to each of ps; nil for none.
func mapPaths(ps []string, path pathFn) []string {
	var out []string
	for _, p := range ps {
		out = append(out, path(p))
	}
	return out
}
