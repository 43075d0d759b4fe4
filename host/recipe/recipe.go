package recipe

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// Data sources.
const (
	SourcePQD   = "pqd"        // the built-in synthetic PQD generator
	SourcePQD3  = "pqd-3phase" // its three-phase twin (docs/spec/pqd-3phase.md)
	SourceFiles = "files"      // directories of CSV, .npy or safetensors files
)

// Explanation targets.
const (
	TargetTrue      = "true"      // explain the true class
	TargetPredicted = "predicted" // explain the predicted class
)

// Mask kinds of [evaluate].
const (
	MaskAmplitude = "amplitude" // |d[n]| > eps (paper Def. 4.1)
	MaskEvent     = "event"     // the labelled event interval
)

// Evaluation groups.
const (
	GroupAll   = "all"    // every disturbance class
	GroupDisc7 = "disc-7" // the seven discriminative classes of the paper
)

// Defaults of the top-level keys.
const (
	DefaultSeed = 2026
	DefaultOut  = "runs"
)

// Recipe is a decoded, completed and validated recipe.
type Recipe struct {
	Name    string
	Seed    uint64
	Workers int // 0: all cores
	Out     string
	// PluginDirs are directories searched for plugin binaries before the
	// host's own (top-level key plugin_dirs; absolute). No hash covers them:
	// which binary serves an ID is pinned by its version in the results.
	PluginDirs []string
	Data       Data
	Model      Model
	Train      nn.TrainConfig
	Posteriors []PluginRef
	Explainers []PluginRef
	Summaries  []PluginRef
	Evaluate   Evaluate
	Limits     limits.Limits // [limits] (decode_limits.go)
	Analysis   Analysis      // [paper], [sensitivity], [calibration], ... (decode_analysis.go)
	Recording  *Recording    // [recording] (decode_recording.go); nil: the test splits
	Slurm      *Slurm        // [slurm] (decode_slurm.go); nil: absent. No hash covers it
	Replicates *Replicates   // [replicates] (decode_replicates.go); nil: one run
	Path       string        // absolute path of the file it came from ("" from Parse)
	Dir        string        // absolute directory that relative paths are resolved against

	name  string // the name errors use
	lines *keyLines
}

// Data is the [data] table. Fields that do not apply to the source are zero.
type Data struct {
	Source        string
	ValFraction   float64  // 0 when source = "files" and Val is given
	Classes       []string // nil: all; names, or indices written in decimal ("3")
	TrainPerClass int
	TestSplits    int
	TestPerClass  int
	F0, Fs        float64
	Cycles        int
	Noise         bool
	SNRdB         [2]float64 // min, max
	Phase         Phase
	Train, Val    string   // absolute directories (files)
	Test          []string // absolute directories (files), one per split
	// Channels is the channels of a CSV line (files; 0: as the model's
	// in_channels). .npy and safetensors files carry their own shape.
	Channels int
	// ClassNames names the integer labels of files (label i is
	// ClassNames[i]); nil: the files' classes.txt, their label names, or
	// the one-phase PQD's 16 classes.
	ClassNames []string
	// ChannelNames names the channels of files (nil: ch0, ch1, ...; a
	// generator names its own).
	ChannelNames []string
}

// Generated reports whether the data comes from a built-in generator
// (source pqd or pqd-3phase) rather than from files.
func (d Data) Generated() bool { return d.Source == SourcePQD || d.Source == SourcePQD3 }

// Len is the waveform length fs/f0*cycles of a generated source, 0 for
// files.
func (d Data) Len() int {
	if !d.Generated() {
		return 0
	}
	l, _ := waveLen(d.F0, d.Fs, d.Cycles)
	return l
}

// Generator is the generator of a generated source; ok is false for files
// (and an unknown source).
func (d Data) Generator() (g data.Generator, ok bool) {
	if !d.Generated() {
		return nil, false
	}
	g, err := data.GeneratorByName(d.Source)
	return g, err == nil
}

// Phase is the phase of the fundamental: random per waveform, or fixed.
type Phase struct {
	Random bool
	Value  float64 // radians, when not Random
}

func (p Phase) String() string {
	if p.Random {
		return "random"
	}
	return strconv.FormatFloat(p.Value, 'g', -1, 64)
}

// Model is the [model] table: a built-in architecture (Layers == nil) or an
// inline one.
type Model struct {
	Arch string // built-in name, or the inline architecture's name
	// InChannels and InLen are the input's shape: required inline; for a
	// built-in, 0 takes them from a generated source's data (else the
	// built-in's own).
	InChannels int
	InLen      int
	// Classes (built-in only, 0: from a generated source's data, else
	// the built-in's) is the number of logits: the last dense layer's
	// width.
	Classes int
	Layers  []nn.Layer
	// Torch names a PyTorch module instead: "file.py:Name" (a class or a
	// function returning a torch.nn.Module, in a file relative to the
	// recipe's folder) or "package.module:Name" (from sys.path). The
	// host knows it by its shape only (nn.Arch.ShapeOnly): InChannels,
	// InLen and Classes, from a generated source or the keys. Its draws
	// come from posterior.torch, whose tables take the module, TorchArgs
	// and TorchOutput from here (TorchKeys).
	Torch       string
	TorchArgs   map[string]any // keyword arguments of the module's constructor (args)
	TorchOutput string         // "probs" or "logits" (output); "" is posterior.torch's default, probs
	// GraphFile (graph) or ONNXFile (onnx), absolute, names an
	// architecture written as a graph of ops (sdk/nn/graph): a spec file
	// such as recipes/archs/resnet1d.toml, or an ONNX file's graph (its
	// weights are not used: the posteriors train the network, or
	// posterior.files loads it). GraphSpec is what was read. It takes
	// InChannels, InLen and Classes as a built-in architecture does
	// (nn.Arch.Reshaped: the output linear's out becomes Classes).
	GraphFile, ONNXFile string
	GraphSpec           *graph.Spec
	// GraphInline: GraphSpec is [[model.nodes]], written in the recipe.
	GraphInline bool
}

// graphKey is the [model] key of the architecture: "graph", "onnx" or
// "nodes" for a graph, "layers" for [[model.layers]], else "arch".
func (m Model) graphKey() string {
	switch {
	case m.ONNXFile != "":
		return "onnx"
	case m.GraphInline:
		return "nodes"
	case m.GraphSpec != nil:
		return "graph"
	case m.Layers != nil:
		return "layers"
	}
	return "arch"
}

// TorchPosterior is the posterior that serves [model] torch's module.
const TorchPosterior = "posterior.torch"

// TorchKeys returns the keys of posterior.torch that [model] torch
// gives, with the [model] key each comes from: file and module (from
// torch; the file as written, resolved like every file key of a
// posterior), args and output; none without torch.
func (m Model) TorchKeys() (cfg sdk.Config, from map[string][]string) {
	if m.Torch == "" {
		return nil, nil
	}
	cfg, from = sdk.Config{}, map[string][]string{}
	mod, name := m.torchParts()
	if strings.HasSuffix(mod, ".py") || strings.ContainsRune(mod, '/') {
		cfg["file"], cfg["module"] = mod, name // the host resolves file keys against the recipe's folder
		from["file"] = []string{"model", "torch"}
	} else {
		cfg["module"] = m.Torch
	}
	from["module"] = []string{"model", "torch"}
	if m.TorchArgs != nil {
		cfg["args"], from["args"] = sdk.CloneValue(m.TorchArgs), []string{"model", "args"}
	}
	if m.TorchOutput != "" {
		cfg["output"], from["output"] = m.TorchOutput, []string{"model", "output"}
	}
	return cfg, from
}

// torchParts splits Torch at its last ':' into the file or module and
// the name.
func (m Model) torchParts() (mod, name string) {
	i := strings.LastIndexByte(m.Torch, ':')
	if i < 0 {
		return m.Torch, ""
	}
	return m.Torch[:i], m.Torch[i+1:]
}

// Evaluate is the [evaluate] table.
type Evaluate struct {
	Mask   string
	Eps    float64
	Groups []string
	Abs    bool
	// Metrics are the explanation metrics of [evaluate] metrics (package
	// sdk/metric), each configured by its [evaluate.metric.<name>] table:
	// every draw's map and every map summary's map is scored by each.
	Metrics []MetricRef
	// RandomiseDraws: every draw re-initialised in every layer and the
	// maps made again, to measure how far the whole explanation
	// distribution moves ([evaluate] randomise_draws).
	RandomiseDraws bool
}

// MetricRef is one metric of [evaluate] metrics.
type MetricRef struct {
	ID     string     // normalised: "metric.sparseness"
	Config sdk.Config // its [evaluate.metric.<name>] table (empty: the defaults)
	Line   int        // the line of the metrics key
}

// PluginRef is one [[posterior]], [[explainer]] or [[summary]] table.
type PluginRef struct {
	Kind   sdk.Kind // the table it came from
	Index  int      // 0-based position among the tables of its kind
	ID     string   // normalised: "posterior.ensemble"; "" for a script
	Label  string   // row label in tables
	Script string   // summary scripts: absolute path
	Draws  int      // posteriors: S, >= 1
	Target string   // explainers: TargetTrue or TargetPredicted
	Config sdk.Config
	Line   int // line of the table header
	// From names the keys of Config that another table gave, with the
	// path of the key that gave each: posterior.torch's module from
	// [model] torch (Model.TorchKeys). Errors about them point there.
	From map[string][]string
}

// Load reads and parses a recipe file. Relative paths in it are resolved
// against the file's directory.
func Load(path string) (*Recipe, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("recipe %s: %w", path, err)
	}
	r, err := Parse(path, data, filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	r.Path = abs
	return r, nil
}

// readBounded reads a recipe file of at most MaxRecipeSize bytes
// (atomicfile.ReadRegular): a larger one is refused before it is read, a
// FIFO, a device that never ends (/dev/zero) or a directory at once.
func readBounded(path string) ([]byte, error) {
	data, err := atomicfile.ReadRegular(path, atomicfile.Limit{Bytes: MaxRecipeSize, What: "a recipe (a few KiB: keep long data in files that a key names)"})
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("recipe %s: %w", path, pe.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("recipe %s: %w", path, err)
	}
	return data, nil
}

// Parse decodes a recipe. name is used in error messages; dir is the
// directory that relative paths are resolved against ("" is the working
// directory). A text beyond MaxRecipeSize, MaxDepth or MaxKeyPath is
// refused before it is decoded.
func Parse(name string, data []byte, dir string) (*Recipe, error) {
	if dir == "" {
		dir = "."
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("recipe %s: %w", name, err)
	}
	if err := checkText(name, data); err != nil {
		return nil, err
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			if pe.Position.Line < 1 { // the library lost the line; its byte offset is sound
				pe.Position.Line = 1 + strings.Count(string(data[:min(max(pe.Position.Start, 0), len(data))]), "\n")
			}
			return nil, parseError(name, pe)
		}
		return nil, fmt.Errorf("recipe %s: %w", name, err)
	}
	d := &decoder{name: name, lines: scanKeyLines(string(data)), dir: absDir}
	r, err := d.recipe(raw)
	if err != nil {
		return nil, err
	}
	r.Dir = absDir
	r.name = name
	r.lines = d.lines
	return r, nil
}

// parseError formats a TOML syntax error with its line, column and the
// library's excerpt of the text.
func parseError(name string, pe toml.ParseError) error {
	ctx := excerpt(pe)
	if i := strings.Index(ctx, "\n"); i >= 0 {
		ctx = strings.Trim(ctx[i:], "\n")
	} else {
		ctx = ""
	}
	msg := fmt.Sprintf("recipe %s: line %d, column %d: %s", name, pe.Position.Line, pe.Position.Col, pe.Message)
	if ctx != "" {
		msg += "\n\n" + ctx
	}
	return &SyntaxError{Line: pe.Position.Line, Col: pe.Position.Col, msg: msg, err: pe}
}

// excerpt is the library's error text with the lines around the error,
// or "" where the library cannot make one: BurntSushi/toml v1.6.0 panics
// in ErrorWithPosition on some positions (FuzzParse found `0000."\`,
// kept in testdata/fuzz), and a recipe's syntax error must stay an error.
func excerpt(pe toml.ParseError) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	return pe.ErrorWithPosition()
}

// SyntaxError is a TOML syntax error in a recipe.
type SyntaxError struct {
	Line, Col int
	msg       string
	err       error
}

func (e *SyntaxError) Error() string { return e.msg }
func (e *SyntaxError) Unwrap() error { return e.err }

// Arch returns the model architecture: the built-in one named by
// [model].arch, or the inline one.
//
// A built-in architecture takes its input's shape and its classes from
// [model]'s in_channels, in_len and classes when given, else from a
// generated source (pqd: 1 x fs/f0*cycles, 16 classes; pqd-3phase: 3 x
// fs/f0*cycles and its classes), else they are the built-in's own (the
// paper's: 1 x 640, 16): nn.Arch.Reshaped.
func (r *Recipe) Arch() (nn.Arch, error) {
	if r.Model.Torch != "" {
		// A PyTorch module, known by its shape only.
		_, name := r.Model.torchParts()
		a := nn.Arch{Name: name, InChannels: r.Model.InChannels, InLen: r.Model.InLen, Outputs: r.Model.Classes}
		if g, ok := r.Data.Generator(); ok {
			if a.InChannels == 0 {
				a.InChannels = g.Channels()
			}
			if a.InLen == 0 {
				a.InLen = r.Data.Len()
			}
			if a.Outputs == 0 {
				a.Outputs = len(g.Classes())
			}
		}
		for _, k := range []struct {
			key string
			n   int
		}{{"in_channels", a.InChannels}, {"in_len", a.InLen}, {"classes", a.Outputs}} {
			if k.n < 1 {
				return nn.Arch{}, fmt.Errorf("[model] torch %s: key %q is needed with source %s (the module's input channels, input samples and classes; a generated source gives them)", sdk.Quote(r.Model.Torch), k.key, sdk.Quote(r.Data.Source))
			}
		}
		return a, nil
	}
	if r.Model.Layers == nil {
		a, err := nn.LookupArch(r.Model.Arch)
		if r.Model.GraphSpec != nil {
			a = nn.GraphArch(*r.Model.GraphSpec)
			err = a.Validate()
		}
		if err != nil {
			return a, err
		}
		c, t, k := a.InChannels, a.InLen, a.Classes()
		if g, ok := r.Data.Generator(); ok {
			c, t, k = g.Channels(), r.Data.Len(), len(g.Classes())
		}
		if r.Model.InChannels > 0 {
			c = r.Model.InChannels
		}
		if r.Model.InLen > 0 {
			t = r.Model.InLen
		}
		if r.Model.Classes > 0 {
			k = r.Model.Classes
		}
		if c == a.InChannels && t == a.InLen && k == a.Classes() {
			return a, nil
		}
		return a.Reshaped(c, t, k)
	}
	a := nn.Arch{
		Name: r.Model.Arch, InChannels: r.Model.InChannels, InLen: r.Model.InLen,
		Layers: append([]nn.Layer(nil), r.Model.Layers...),
	}
	return a, a.Validate()
}

// KeyLine returns the line where a key, table or array element is defined,
// or 0 if it is unknown (absent from the file: a default). Array elements
// are addressed by their 0-based index in decimal:
//
//	r.KeyLine("train", "epochs")
//	r.KeyLine("posterior", "1")            // the second [[posterior]] header
//	r.KeyLine("posterior", "1", "members")
//	r.KeyLine("model", "layers", "0", "kind")
func (r *Recipe) KeyLine(path ...string) int {
	if len(path) == 0 {
		return 0
	}
	return r.lines.get(path...)
}

// Errorf returns an error in the recipe's style, "recipe NAME: line N: ...",
// with the line of path (or of its nearest defined parent).
func (r *Recipe) Errorf(path []string, format string, args ...any) error {
	d := &decoder{name: r.name, lines: r.lines}
	return d.errAt(path, format, args...)
}

// PluginError places an error returned by a plugin's Check for ref's config
// in the recipe: it names the table and gives the line of the key the error
// quotes (`key "window"`, `unknown key "windw"`), or the table header's.
func (r *Recipe) PluginError(ref PluginRef, err error) error {
	path := []string{string(ref.Kind), strconv.Itoa(ref.Index)}
	msg := err.Error()
	for _, pre := range []string{`key "`, `key '`} {
		if i := strings.Index(msg, pre); i >= 0 {
			rest := msg[i+len(pre):]
			if j := strings.IndexAny(rest, `"'`); j > 0 {
				if from, ok := ref.From[rest[:j]]; ok {
					path = from
				} else if _, ok := ref.Config[rest[:j]]; ok || slices.Contains(hostKeys[ref.Kind], rest[:j]) {
					path = append(path, rest[:j])
				}
			}
			break
		}
	}
	who := ref.ID
	if ref.Script != "" {
		who = ref.Script
	}
	table := []string{string(ref.Kind), strconv.Itoa(ref.Index)}
	return &wrapped{msg: r.Errorf(path, "%s (%s): %v", tableName(table), who, err).Error(), err: err}
}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }
