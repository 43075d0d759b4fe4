package recipe

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
)

const fullRecipe = `# a full recipe
name = "quickstart"
seed = 7
workers = 2
out = "myruns"

[data]
source = "pqd"
train_per_class = 90
val_fraction = 0.2
test_splits = 3
test_per_class = 10
f0 = 60.0
fs = 3840.0
cycles = 10
noise = false
snr_db = [30.0, 30.0]
phase = 0.5
classes = ["sag", 3]

[model]
arch = "paper-1dcnn"

[train]
epochs = 20
batch = 32
lr = 1e-3
weight_decay = 0.0
step_every = 5
step_gamma = 0.25

[[posterior]]
use = "ensemble"
label = "Deep ensemble"
draws = 5
members = 5
seeds = [2026, 2027, 2028, 2029, 2030]

[[posterior]]
use = "posterior.laplace"
draws = 20
prior = { precision = 100.0, scale = 1.75e10 }

[[explainer]]
use = "occlusion"
target = "predicted"
window = 60
stride = 1

[[summary]]
use = "mean"

[[summary]]
script = "scripts/trimmed_mean.go"
trim = 0.2

[evaluate]
mask = "event"
eps = 0.05
groups = ["disc-7"]
abs = false
`

// withScript makes a recipe directory holding scripts/trimmed_mean.go.
func withScript(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "trimmed_mean.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// lineOf returns the 1-based line of the first line of text containing
// marker.
func lineOf(t *testing.T, text, marker string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("marker %q not in text", marker)
	return 0
}

// nthLineOf returns the line of the n-th (0-based) line containing marker.
func nthLineOf(t *testing.T, text, marker string, n int) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, marker) {
			if n == 0 {
				return i + 1
			}
			n--
		}
	}
	t.Fatalf("marker %q not in text", marker)
	return 0
}

func TestParseFull(t *testing.T) {
	dir := withScript(t)
	path := filepath.Join(dir, "quick.toml")
	if err := os.WriteFile(path, []byte(fullRecipe), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "quickstart" || r.Seed != 7 || r.Workers != 2 || r.Out != "myruns" {
		t.Errorf("top level: %+v", r)
	}
	if r.Path != path || r.Dir != dir {
		t.Errorf("path %q dir %q", r.Path, r.Dir)
	}
	wantData := Data{
		Source: "pqd", ValFraction: 0.2, Classes: []string{"sag", "3"}, TrainPerClass: 90, TestSplits: 3, TestPerClass: 10,
		F0: 60, Fs: 3840, Cycles: 10, Noise: false, SNRdB: [2]float64{30, 30}, Phase: Phase{Value: 0.5},
	}
	if !reflect.DeepEqual(r.Data, wantData) {
		t.Errorf("data\n got %+v\nwant %+v", r.Data, wantData)
	}
	if r.Data.Len() != 640 {
		t.Errorf("Len %d", r.Data.Len())
	}
	a, err := r.Arch()
	if err != nil || !reflect.DeepEqual(a, nn.PaperArch()) {
		t.Errorf("arch %v %v", a.Name, err)
	}
	wantTrain := nn.PaperTrainConfig()
	wantTrain.Epochs, wantTrain.Batch, wantTrain.LR, wantTrain.WeightDecay, wantTrain.StepEvery, wantTrain.StepGamma = 20, 32, 1e-3, 0, 5, 0.25
	if r.Train != wantTrain {
		t.Errorf("train %+v", r.Train)
	}
	if len(r.Posteriors) != 2 || len(r.Explainers) != 1 || len(r.Summaries) != 2 {
		t.Fatalf("plugins: %d %d %d", len(r.Posteriors), len(r.Explainers), len(r.Summaries))
	}
	p0 := r.Posteriors[0]
	wantP0 := PluginRef{
		Kind: sdk.KindPosterior, Index: 0, ID: "posterior.ensemble", Label: "Deep ensemble", Draws: 5,
		Config: sdk.Config{"members": int64(5), "seeds": []any{int64(2026), int64(2027), int64(2028), int64(2029), int64(2030)}},
		Line:   lineOf(t, fullRecipe, "[[posterior]]"),
	}
	if !reflect.DeepEqual(p0, wantP0) {
		t.Errorf("posterior 0\n got %+v\nwant %+v", p0, wantP0)
	}
	p1 := r.Posteriors[1]
	if p1.ID != "posterior.laplace" || p1.Label != "posterior.laplace" || p1.Draws != 20 || p1.Index != 1 ||
		!reflect.DeepEqual(p1.Config, sdk.Config{"prior": map[string]any{"precision": 100.0, "scale": 1.75e10}}) {
		t.Errorf("posterior 1: %+v", p1)
	}
	e := r.Explainers[0]
	if e.ID != "explainer.occlusion" || e.Target != TargetPredicted || e.Draws != 0 ||
		!reflect.DeepEqual(e.Config, sdk.Config{"window": int64(60), "stride": int64(1)}) {
		t.Errorf("explainer: %+v", e)
	}
	s0, s1 := r.Summaries[0], r.Summaries[1]
	if s0.ID != "summary.mean" || s0.Label != "summary.mean" || len(s0.Config) != 0 || s0.Config == nil {
		t.Errorf("summary 0: %+v", s0)
	}
	if s1.ID != "" || s1.Script != filepath.Join(dir, "scripts", "trimmed_mean.go") || s1.Label != "summary.script.trimmed_mean" ||
		!reflect.DeepEqual(s1.Config, sdk.Config{"trim": 0.2}) || s1.Line != nthLineOf(t, fullRecipe, "[[summary]]", 1) {
		t.Errorf("summary 1: %+v", s1)
	}
	if !reflect.DeepEqual(r.Evaluate, Evaluate{Mask: "event", Eps: 0.05, Groups: []string{"disc-7"}, Abs: false}) {
		t.Errorf("evaluate %+v", r.Evaluate)
	}

	// Key lines.
	for _, c := range []struct {
		path   []string
		marker string
		nth    int
	}{
		{[]string{"name"}, `name = "quickstart"`, 0},
		{[]string{"data"}, "[data]", 0},
		{[]string{"data", "snr_db"}, "snr_db", 0},
		{[]string{"data", "classes", "1"}, "classes", 0},
		{[]string{"train", "step_gamma"}, "step_gamma", 0},
		{[]string{"posterior", "0"}, "[[posterior]]", 0},
		{[]string{"posterior", "1"}, "[[posterior]]", 1},
		{[]string{"posterior", "0", "members"}, "members", 0},
		{[]string{"posterior", "1", "draws"}, "draws = 20", 0},
		{[]string{"posterior", "1", "prior", "scale"}, "prior =", 0},
		{[]string{"summary", "1", "trim"}, "trim = 0.2", 0},
		{[]string{"evaluate", "abs"}, "abs = false", 0},
	} {
		if got, want := r.KeyLine(c.path...), nthLineOf(t, fullRecipe, c.marker, c.nth); got != want {
			t.Errorf("KeyLine(%q) = %d, want %d", c.path, got, want)
		}
	}
	if r.KeyLine("train", "beta1") != 0 || r.KeyLine("nope") != 0 || r.KeyLine() != 0 {
		t.Errorf("KeyLine of absent keys is not 0")
	}
}

const minimal = `name = "mini"
[[posterior]]
use = "ensemble"
[[explainer]]
use = "occlusion"
[[summary]]
use = "mean"
`

func TestDefaults(t *testing.T) {
	r, err := Parse("mini.toml", []byte(minimal), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Seed != 2026 || r.Workers != 0 || r.Out != "runs" {
		t.Errorf("top level defaults: seed %d workers %d out %q", r.Seed, r.Workers, r.Out)
	}
	want := Data{Source: "pqd", ValFraction: 0.1, TrainPerClass: 900, TestSplits: 5, TestPerClass: 100,
		F0: 50, Fs: 3200, Cycles: 10, Noise: true, SNRdB: [2]float64{30, 50}, Phase: Phase{Random: true}}
	if !reflect.DeepEqual(r.Data, want) {
		t.Errorf("data defaults\n got %+v\nwant %+v", r.Data, want)
	}
	if r.Train != nn.PaperTrainConfig() {
		t.Errorf("train defaults %+v", r.Train)
	}
	if r.Model.Arch != nn.PaperArchName || r.Model.Layers != nil {
		t.Errorf("model defaults %+v", r.Model)
	}
	if !reflect.DeepEqual(r.Evaluate, Evaluate{Mask: "amplitude", Eps: 0.001, Groups: []string{"all", "disc-7"}, Abs: true}) {
		t.Errorf("evaluate defaults %+v", r.Evaluate)
	}
	if p := r.Posteriors[0]; p.Draws != 1 || p.Label != "posterior.ensemble" {
		t.Errorf("posterior defaults %+v", p)
	}
	if e := r.Explainers[0]; e.Target != TargetTrue || e.Label != "explainer.occlusion" {
		t.Errorf("explainer defaults %+v", e)
	}
	wd, _ := os.Getwd()
	if r.Dir != wd || r.Path != "" {
		t.Errorf("dir %q path %q", r.Dir, r.Path)
	}
}

func TestInlineModel(t *testing.T) {
	text := minimal + `
[data]
fs = 300.0
cycles = 2

[model]
arch = "tiny"
in_channels = 1
in_len = 12

[[model.layers]]
kind = "conv1d"
name = "c1"
out = 4
kernel = 3

[[model.layers]]
kind = "globalmaxpool"

[[model.layers]]
kind = "dense"
name = "fc"
out = 16
`
	r, err := Parse("inline.toml", []byte(text), "")
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.Arch()
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "tiny" || a.InLen != 12 || len(a.Layers) != 3 || a.Layers[0] != (nn.Layer{Kind: nn.KindConv1D, Name: "c1", Out: 4, Kernel: 3}) || a.Classes() != 16 {
		t.Errorf("arch %+v", a)
	}
	if got, want := r.KeyLine("model", "layers", "2", "kind"), nthLineOf(t, text, `kind = "dense"`, 0); got != want {
		t.Errorf("layer line %d, want %d", got, want)
	}
	checkCanonical(t, r, "")

	// A bad layer is reported at its header.
	bad := strings.Replace(text, "kernel = 3", "kernel = 30", 1)
	_, err = Parse("inline.toml", []byte(bad), "")
	wantErr(t, err, nthLineOf(t, bad, "[[model.layers]]", 0), "layer 0", "kernel")

	// classes is the built-ins' key; an inline arch has its last layer.
	bad = strings.Replace(text, "in_len = 12", "in_len = 12\nclasses = 3", 1)
	_, err = Parse("inline.toml", []byte(bad), "")
	wantErr(t, err, nthLineOf(t, bad, "classes = 3", 0), "only to a built-in")
}

// TestBuiltinShape: a built-in architecture takes its input's shape and
// classes from a generated source, or from [model]'s keys, with the
// built-in's layers.
func TestBuiltinShape(t *testing.T) {
	paper := nn.PaperArch()
	files := t.TempDir()
	for _, f := range []string{"waveforms.npy", "labels.npy"} {
		if err := os.WriteFile(filepath.Join(files, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name    string
		text    string
		c, t, k int
	}{
		{"paper", minimal, 1, 640, 16},
		{"cycles", minimal + "[data]\ncycles = 15\n", 1, 960, 16},
		{"fs", minimal + "[data]\nfs = 6400.0\n", 1, 1280, 16},
		{"3phase", minimal + "[data]\nsource = \"pqd-3phase\"\n", 3, 640, len(data.PQD3{}.Classes())},
		{"keys", minimal + "[model]\nin_channels = 2\nin_len = 300\nclasses = 4\n[data]\nsource = \"files\"\ntrain = \"" + files + "\"\ntest = [\"" + files + "\"]\n", 2, 300, 4},
	} {
		r, err := Parse(c.name+".toml", []byte(c.text), "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a, err := r.Arch()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if a.InChannels != c.c || a.InLen != c.t || a.Classes() != c.k || len(a.Layers) != len(paper.Layers) || a.Name != paper.Name {
			t.Errorf("%s: arch %s %d x %d, %d classes, %d layers; want %d x %d, %d classes and the paper's %d layers", c.name, a.Name, a.InChannels, a.InLen, a.Classes(), len(a.Layers), c.c, c.t, c.k, len(paper.Layers))
		}
		if c.name == "paper" && !reflect.DeepEqual(a, paper) {
			t.Errorf("the default recipe's arch %+v is not the paper's", a)
		}
		checkCanonical(t, r, "")
	}
}

func TestFilesSource(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"tr", "te1", "te2"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
		for _, f := range []string{"waveforms.csv", "labels.csv"} {
			os.WriteFile(filepath.Join(dir, d, f), nil, 0o644)
		}
	}
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	text := minimal + `
[data]
source = "files"
train = "tr"
test = ["te1", "te2"]
val_fraction = 0.25
`
	r, err := Parse("files.toml", []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := Data{Source: "files", ValFraction: 0.25, Train: filepath.Join(dir, "tr"), Test: []string{filepath.Join(dir, "te1"), filepath.Join(dir, "te2")}}
	if !reflect.DeepEqual(r.Data, want) {
		t.Errorf("data\n got %+v\nwant %+v", r.Data, want)
	}
	checkCanonical(t, r, dir)

	cases := []struct{ old, new, marker string }{
		{`test = ["te1", "te2"]`, `test = ["te1", "empty"]`, "test ="},
		{`train = "tr"`, `train = "nope"`, "train ="},
		{`val_fraction = 0.25`, `f0 = 50.0`, "f0"},
		{`train = "tr"`, `val = "te1"`, "[data]"},
	}
	for _, c := range cases {
		bad := strings.Replace(text, c.old, c.new, 1)
		_, err := Parse("files.toml", []byte(bad), dir)
		wantErr(t, err, lineOf(t, bad, c.marker))
	}
	_, err = Parse("files.toml", []byte(strings.Replace(text, `val_fraction = 0.25`, `val = "te1"`, 1)), dir)
	if err != nil {
		t.Errorf("val dir: %v", err)
	}
	// The keys of a dataset's channels and names.
	named := strings.Replace(text, `val_fraction = 0.25`, "val_fraction = 0.25\nchannels = 3\nchannel_names = [\"A\", \"B\", \"C\"]\nclass_names = [\"x\", \"y\"]", 1)
	r, err = Parse("files.toml", []byte(named), dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Data.Channels != 3 || !slices.Equal(r.Data.ChannelNames, []string{"A", "B", "C"}) || !slices.Equal(r.Data.ClassNames, []string{"x", "y"}) {
		t.Errorf("data %+v", r.Data)
	}
	checkCanonical(t, r, dir)
	for _, c := range []struct{ old, new, marker, want string }{
		{"channels = 3", "channels = 5000", "channels =", "accepted: 1..1024"},
		{"channels = 3", "channels = 0", "channels =", "accepted: 1..1024"},
		{`channel_names = ["A", "B", "C"]`, `channel_names = ["A", "B"]`, "channel_names", "names 2 channels, and channels = 3"},
		{`channel_names = ["A", "B", "C"]`, `channel_names = ["A", "A", "C"]`, "channel_names", "listed twice"},
		{`class_names = ["x", "y"]`, `class_names = ["x", "y,z"]`, "class_names", "is not a name"},
		{`class_names = ["x", "y"]`, `class_names = ["x", " "]`, "class_names", "is not a name"},
	} {
		bad := strings.Replace(named, c.old, c.new, 1)
		_, err := Parse("files.toml", []byte(bad), dir)
		wantErr(t, err, lineOf(t, bad, c.marker), c.want)
	}
	// Names of any count without channels: the data's count is checked
	// when it is read.
	if _, err := Parse("files.toml", []byte(strings.Replace(named, "channels = 3\n", "", 1)), dir); err != nil {
		t.Errorf("channel_names without channels: %v", err)
	}
}

// TestBuiltinShapeErrors: an architecture the data's shape breaks is
// reported at the key that set the shape.
func TestBuiltinShapeErrors(t *testing.T) {
	text := minimal + "[model]\nin_channels = 2\n[data]\nf0 = 50.0\nfs = 100.0\ncycles = 1\n"
	_, err := Parse("short.toml", []byte(text), "")
	wantErr(t, err, lineOf(t, text, "in_channels"), "2 channel(s) x 2 samples")
	for _, kv := range []string{"classes = 0", "in_len = -3", "in_channels = 0"} {
		text := minimal + "[model]\n" + kv + "\n"
		_, err := Parse("keys.toml", []byte(text), "")
		wantErr(t, err, lineOf(t, text, kv), "accepted: 1..")
	}
}

// wantErr checks that err names the file, the line and every fragment.
func wantErr(t *testing.T, err error, line int, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one at line %d mentioning %q", line, fragments)
	}
	msg := err.Error()
	wantLine := "line " + itoa(line) + ":"
	if line > 0 && !strings.Contains(msg, wantLine) && !strings.Contains(msg, "line "+itoa(line)+", column") {
		t.Errorf("error %q does not name %q", msg, wantLine)
	}
	if !strings.HasPrefix(msg, "recipe ") {
		t.Errorf("error %q does not start with the file", msg)
	}
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Errorf("error %q does not mention %q", msg, f)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// lineIn is lineOf for texts known to hold marker.
func lineIn(text, marker string) int {
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	panic("marker not in text: " + marker)
}

func TestErrors(t *testing.T) {
	dir := withScript(t)
	cases := []struct {
		name      string
		text      string // full recipe text
		marker    string // the line the error must name ("" : none)
		nth       int
		fragments []string
	}{
		{"unknown train key", strings.Replace(fullRecipe, "epochs = 20", "epoch = 20", 1), "epoch = 20", 0,
			[]string{`quick.toml`, `unknown key "epoch" in [train]`, "accepted: batch, beta1, beta2, epochs, eps, lr, step_every, step_gamma, weight_decay", `did you mean "epochs"`}},
		{"unknown top key", "nmae = 1\n" + minimal, "nmae", 0, []string{`unknown key "nmae" at the top level`, "accepted: agreement, bound, calibration, data, evaluate, explainer, figures, limits, model, name, out"}},
		{"unknown data key", strings.Replace(fullRecipe, "noise = false", "noize = false", 1), "noize", 0, []string{`unknown key "noize" in [data]`}},
		{"unknown evaluate key", fullRecipe + "localisation = 1\n", "localisation", 0, []string{`unknown key "localisation" in [evaluate]`, "accepted: abs, eps, groups, mask"}},
		{"unknown layer key", minimal + "[model]\narch = \"x\"\nin_channels = 1\nin_len = 640\n[[model.layers]]\nknd = \"relu\"\n", "knd", 0, []string{`unknown key "knd" in [[model.layers]] #1`, "kind"}},
		{"negative count", strings.Replace(fullRecipe, "test_splits = 3", "test_splits = -1", 1), "test_splits", 0, []string{`key "test_splits" in [data]`, ">= 1"}},
		{"negative train_per_class", strings.Replace(fullRecipe, "train_per_class = 90", "train_per_class = 0", 1), "train_per_class", 0, []string{"train_per_class"}},
		{"negative seed", strings.Replace(fullRecipe, "seed = 7", "seed = -7", 1), "seed = -7", 0, []string{`key "seed"`, "negative"}},
		{"negative workers", strings.Replace(fullRecipe, "workers = 2", "workers = -2", 1), "workers", 0, []string{`key "workers"`}},
		{"negative draws", strings.Replace(fullRecipe, "draws = 5", "draws = 0", 1), "draws = 0", 0, []string{`key "draws" in [[posterior]] #1`, ">= 1"}},
		{"val_fraction", strings.Replace(fullRecipe, "val_fraction = 0.2", "val_fraction = 1.0", 1), "val_fraction", 0, []string{"val_fraction", "outside (0, 1)"}},
		{"val_fraction zero", strings.Replace(fullRecipe, "val_fraction = 0.2", "val_fraction = 0", 1), "val_fraction", 0, []string{"outside (0, 1)"}},
		{"f0 not integral", strings.Replace(fullRecipe, "f0 = 60.0", "f0 = 70.0", 1), "f0 = 70.0", 0, []string{"fs/f0*cycles", "not an integer"}},
		{"f0 negative", strings.Replace(fullRecipe, "f0 = 60.0", "f0 = -50.0", 1), "f0 = -50.0", 0, []string{`key "f0"`, "> 0"}},
		{"length mismatch", strings.Replace(strings.Replace(fullRecipe, "cycles = 10", "cycles = 5", 1), `arch = "paper-1dcnn"`, "arch = \"paper-1dcnn\"\nin_len = 640", 1), "in_len = 640", 0, []string{"640 samples", "makes 1 x 320", "in_len = 320"}},
		{"channel mismatch", strings.Replace(fullRecipe, `arch = "paper-1dcnn"`, "arch = \"paper-1dcnn\"\nin_channels = 3", 1), "in_channels = 3", 0, []string{"takes 3 channel(s)", "makes 1 x 640", "in_channels = 1"}},
		{"classes mismatch", strings.Replace(fullRecipe, `arch = "paper-1dcnn"`, "arch = \"paper-1dcnn\"\nclasses = 5", 1), "classes = 5", 0, []string{"has 5 logits", "has 16 classes", "16 outputs"}},
		{"snr order", strings.Replace(fullRecipe, "snr_db = [30.0, 30.0]", "snr_db = [50.0, 20.0]", 1), "snr_db", 0, []string{"min 50 > max 20"}},
		{"snr shape", strings.Replace(fullRecipe, "snr_db = [30.0, 30.0]", "snr_db = 30.0", 1), "snr_db", 0, []string{"[min, max]"}},
		{"phase", strings.Replace(fullRecipe, "phase = 0.5", `phase = "fixed"`, 1), "phase", 0, []string{`"fixed"`, `"random" or a number`}},
		{"unknown source", strings.Replace(fullRecipe, `source = "pqd"`, `source = "csv"`, 1), "source", 0, []string{`unknown source "csv"`, "accepted: pqd, pqd-3phase, files"}},
		{"files key with pqd", strings.Replace(fullRecipe, "noise = false", `train = "x"`, 1), `train = "x"`, 0, []string{`applies only to source = "files"`}},
		{"class index", strings.Replace(fullRecipe, `classes = ["sag", 3]`, `classes = ["sag", 16]`, 1), "classes", 0, []string{"class index 16", "0..15"}},
		{"class dup", strings.Replace(fullRecipe, `classes = ["sag", 3]`, `classes = [3, 3]`, 1), "classes", 0, []string{"listed twice"}},
		{"name too long", strings.Replace(fullRecipe, `name = "quickstart"`, `name = "`+strings.Repeat("a", MaxNameLen+1)+`"`, 1), "name = ", 0,
			[]string{`key "name"`, "… (201 bytes) is not a valid name", "1 to 200 lower-case letters"}},
		{"name of a slash", strings.Replace(fullRecipe, `name = "quickstart"`, `name = "../x"`, 1), "name = ", 0, []string{`"../x" is not a valid name`}},
		{"long source", strings.Replace(fullRecipe, `source = "pqd"`, `source = "`+strings.Repeat("c", 1000)+`"`, 1), "source", 0, []string{`unknown source "` + strings.Repeat("c", 80) + `"… (1000 bytes)`}},
		{"missing name", strings.Replace(fullRecipe, `name = "quickstart"`, ``, 1), "", 0, []string{`missing required key "name"`}},
		{"bad name", strings.Replace(fullRecipe, `name = "quickstart"`, `name = "Quick Start"`, 1), "name =", 0, []string{`"Quick Start" is not a valid name`}},
		{"no posterior", "name = \"x\"\n[[explainer]]\nuse = \"occlusion\"\n[[summary]]\nuse = \"mean\"\n", "", 0, []string{"no [[posterior]] table"}},
		{"no explainer", "name = \"x\"\n[[posterior]]\nuse = \"ensemble\"\n[[summary]]\nuse = \"mean\"\n", "", 0, []string{"no [[explainer]] table"}},
		{"no summary", "name = \"x\"\n[[posterior]]\nuse = \"ensemble\"\n[[explainer]]\nuse = \"occlusion\"\n", "", 0, []string{"no [[summary]] table"}},
		{"posterior not array", "name = \"x\"\n[posterior]\nuse = \"ensemble\"\n[[explainer]]\nuse = \"occlusion\"\n[[summary]]\nuse = \"mean\"\n", "[posterior]", 0, []string{"write [[posterior]]"}},
		{"missing use", strings.Replace(fullRecipe, `use = "occlusion"`, ``, 1), "[[explainer]]", 0, []string{"[[explainer]] #1 needs use"}},
		{"use wrong type", strings.Replace(fullRecipe, `use = "occlusion"`, `use = 3`, 1), "use = 3", 0, []string{`key "use" in [[explainer]] #1`, "want a string, got integer 3"}},
		{"label wrong type", strings.Replace(fullRecipe, `label = "Deep ensemble"`, `label = true`, 1), "label = true", 0, []string{`key "label" in [[posterior]] #1`, "want a string"}},
		{"draws wrong type", strings.Replace(fullRecipe, `draws = 20`, `draws = "20"`, 1), `draws = "20"`, 0, []string{`key "draws" in [[posterior]] #2`, "want an integer"}},
		{"target", strings.Replace(fullRecipe, `target = "predicted"`, `target = "pred"`, 1), "target", 0, []string{`"pred" is not accepted`, `"true", "predicted"`}},
		{"script wrong type", strings.Replace(fullRecipe, `script = "scripts/trimmed_mean.go"`, `script = 1`, 1), "script = 1", 0, []string{`key "script" in [[summary]] #2`}},
		{"wrong kind", strings.Replace(fullRecipe, `use = "mean"`, `use = "explainer.mean"`, 1), `use = "explainer.mean"`, 0, []string{"is a explainer plugin, not a summary"}},
		{"script missing", strings.Replace(fullRecipe, `scripts/trimmed_mean.go`, `scripts/nope.go`, 1), "nope.go", 0, []string{"nope.go does not exist", "relative to the recipe's directory"}},
		{"script a directory", strings.Replace(fullRecipe, `scripts/trimmed_mean.go`, `scripts`, 1), `script = "scripts"`, 0, []string{"scripts is a directory (accepted: a Go source file, e.g. ", "scripts/summary.go"}},
		{"script under use", strings.Replace(fullRecipe, `script = "scripts/trimmed_mean.go"`, `use = "scripts/trimmed_mean.go"`, 1), `use = "scripts/trimmed_mean.go"`, 0, []string{`(a script summary is given as script = "scripts/trimmed_mean.go")`}},
		{"use and script", strings.Replace(fullRecipe, `trim = 0.2`, "trim = 0.2\nuse = \"mean\"", 1), `script = "scripts/trimmed_mean.go"`, 0, []string{"both use and script"}},
		{"mask", strings.Replace(fullRecipe, `mask = "event"`, `mask = "gt"`, 1), "mask", 0, []string{`unknown mask kind "gt"`, "accepted: amplitude, event"}},
		{"eps zero", strings.Replace(fullRecipe, `eps = 0.05`, `eps = 0.0`, 1), "eps = 0.0", 0, []string{`key "eps" in [evaluate]`, "> 0"}},
		{"eps negative", strings.Replace(fullRecipe, `eps = 0.05`, `eps = -1`, 1), "eps = -1", 0, []string{`key "eps" in [evaluate]`}},
		{"group", strings.Replace(fullRecipe, `groups = ["disc-7"]`, `groups = ["all", "disc7"]`, 1), "groups", 0, []string{`unknown group "disc7"`, "accepted: all, disc-7"}},
		{"duplicate labels", strings.Replace(fullRecipe, `use = "posterior.laplace"`, "use = \"posterior.laplace\"\nlabel = \"Deep ensemble\"", 1), `label = "Deep ensemble"`, 1,
			[]string{`label "Deep ensemble" is already used by [[posterior]] #1 (line ` + itoa(lineIn(fullRecipe, "[[posterior]]")) + `)`}},
		{"duplicate default labels", strings.Replace(fullRecipe, `script = "scripts/trimmed_mean.go"`, `use = "mean"`, 1), "[[summary]]", 1, []string{`label "summary.mean" is already used`}},
		{"train type", strings.Replace(fullRecipe, "lr = 1e-3", `lr = "fast"`, 1), "lr =", 0, []string{`key "lr" in [train]`, `want a number, got string "fast"`}},
		{"train range", strings.Replace(fullRecipe, "step_gamma = 0.25", "step_gamma = 1.5", 1), "step_gamma", 0, []string{"outside (0, 1]"}},
		{"train batch", strings.Replace(fullRecipe, "batch = 32", "batch = 0", 1), "batch", 0, []string{`key "batch" in [train]`}},
		{"arch unknown", strings.Replace(fullRecipe, `arch = "paper-1dcnn"`, `arch = "resnet"`, 1), "arch", 0, []string{`unknown architecture "resnet"`}},
		{"in_len too short", strings.Replace(fullRecipe, `arch = "paper-1dcnn"`, "in_len = 5", 1), "in_len", 0, []string{"1 channel(s) x 5 samples", "maxpool1d"}},
		{"train as array", strings.Replace(fullRecipe, "[train]", "[[train]]", 1), "[[train]]", 0, []string{"write [train], not [[train]]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("quick.toml", []byte(c.text), dir)
			if err != nil && len(err.Error()) > 600 {
				t.Errorf("an error of %d bytes: values must be quoted short", len(err.Error()))
			}
			line := 0
			if c.marker != "" {
				line = nthLineOf(t, c.text, c.marker, c.nth)
			}
			wantErr(t, err, line, c.fragments...)
			if c.marker == "" && err != nil && strings.Contains(err.Error(), "line ") {
				t.Errorf("error %q names a line", err)
			}
		})
	}
}

// TestLongestName: a name of MaxNameLen bytes is accepted, and a run
// directory of it (with the time and a suffix) is a valid file name.
func TestLongestName(t *testing.T) {
	name := strings.Repeat("n", MaxNameLen)
	r, err := Parse("n.toml", []byte(strings.Replace(fullRecipe, `name = "quickstart"`, `name = "`+name+`"`, 1)), withScript(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), r.Name+"-20261122-050000-99")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Errorf("the longest name does not make a run directory: %v", err)
	}
}

func TestSyntaxError(t *testing.T) {
	// The library's excerpt panics on this one (found by FuzzParse): it is
	// still a syntax error at line 1.
	var se0 *SyntaxError
	if _, err := Parse("f.toml", []byte("0000.\"\\"), ""); !errors.As(err, &se0) || se0.Line != 1 || !strings.Contains(err.Error(), "recipe f.toml: line 1, column ") {
		t.Errorf("the fuzzer's crasher: %v", err)
	}
	text := minimal + "\n[data]\nf0 = 50.0\nfs = = 3\n"
	_, err := Parse("syn.toml", []byte(text), "")
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("want a SyntaxError, got %v", err)
	}
	if se.Line != lineOf(t, text, "fs = = 3") || se.Col < 1 {
		t.Errorf("line %d col %d", se.Line, se.Col)
	}
	wantErr(t, err, se.Line, "syn.toml", "column")
	if !strings.Contains(err.Error(), "fs = = 3") {
		t.Errorf("error %q does not quote the line", err)
	}
	// A duplicate key is a syntax error too.
	text = minimal + "[data]\nf0 = 50.0\nf0 = 60.0\n"
	_, err = Parse("dup.toml", []byte(text), "")
	wantErr(t, err, lineOf(t, text, "f0 = 60.0"), "dup.toml")
}

// checkCanonical asserts that Canonical is deterministic and re-parses to an
// equal recipe.
func checkCanonical(t *testing.T, r *Recipe, dir string) []byte {
	t.Helper()
	c1, err := r.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ { // map iteration order must not show
		c2, err := r.Canonical()
		if err != nil || string(c1) != string(c2) {
			t.Fatalf("Canonical is not deterministic:\n%s\n---\n%s", c1, c2)
		}
	}
	r2, err := Parse("canonical.toml", c1, dir)
	if err != nil {
		t.Fatalf("canonical form does not parse: %v\n%s", err, c1)
	}
	c3, err := r2.Canonical()
	if err != nil || string(c3) != string(c1) {
		t.Errorf("canonical form is not a fixed point:\n%s\n---\n%s", c1, c3)
	}
	if a, b := comparable(r), comparable(r2); !reflect.DeepEqual(a, b) {
		t.Errorf("re-parsed recipe differs:\n got %+v\nwant %+v", b, a)
	}
	return c1
}

// comparable drops what legitimately differs between a recipe and its
// canonical re-parse: lines, the file's name and path.
func comparable(r *Recipe) Recipe {
	c := *r
	c.lines, c.name, c.Path = nil, "", ""
	for _, list := range []*[]PluginRef{&c.Posteriors, &c.Explainers, &c.Summaries} {
		l := append([]PluginRef{}, (*list)...)
		for i := range l {
			l[i].Line = 0
			l[i].From = nil // keys another table gave are the table's own in the canonical form
		}
		*list = l
	}
	ms := append([]MetricRef{}, c.Evaluate.Metrics...)
	for i := range ms {
		ms[i].Line = 0
	}
	c.Evaluate.Metrics = ms
	return c
}

func TestCanonical(t *testing.T) {
	dir := withScript(t)
	r, err := Parse("quick.toml", []byte(fullRecipe), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := checkCanonical(t, r, dir)
	for _, want := range []string{"beta2 = 0.999", "[[summary]]", `phase = 0.5`, `classes = ["sag", "3"]`, filepath.Join(dir, "scripts", "trimmed_mean.go")} {
		if !strings.Contains(string(c), want) {
			t.Errorf("canonical form lacks %q:\n%s", want, c)
		}
	}
	// Defaults are written out.
	m, err := Parse("mini.toml", []byte(minimal), "")
	if err != nil {
		t.Fatal(err)
	}
	c = checkCanonical(t, m, "")
	for _, want := range []string{"train_per_class = 900", `phase = "random"`, "snr_db = [30.0, 50.0]", `groups = ["all", "disc-7"]`, "draws = 1", `target = "true"`} {
		if !strings.Contains(string(c), want) {
			t.Errorf("canonical form lacks %q:\n%s", want, c)
		}
	}
}

func TestHash(t *testing.T) {
	dir := withScript(t)
	parse := func(text string) *Recipe {
		t.Helper()
		r, err := Parse("quick.toml", []byte(text), dir)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	base := parse(fullRecipe)
	fit := append(append([]string{}, FitParts...), "posterior.0")
	if len(base.Hash()) != 64 || base.Hash() != parse(fullRecipe).Hash() || base.Hash(fit...) != parse(fullRecipe).Hash(fit...) {
		t.Fatal("hash is not a stable sha256 hex")
	}
	// Formatting, comments and key order do not matter; values do.
	same := strings.Replace(fullRecipe, "epochs = 20\nbatch = 32", "batch = 32 # reordered\nepochs =    20", 1)
	if parse(same).Hash() != base.Hash() {
		t.Error("hash depends on formatting")
	}
	for _, c := range []struct {
		name              string
		old, new          string
		fitChanges, total bool
	}{
		{"data", "test_per_class = 10", "test_per_class = 11", true, true},
		{"train", "epochs = 20", "epochs = 21", true, true},
		{"seed", "seed = 7", "seed = 8", true, true},
		{"posterior config", "members = 5", "members = 4", true, true},
		{"summary", "trim = 0.2", "trim = 0.3", false, true},
		{"summary added", "[evaluate]", "[[summary]]\nuse = \"variance\"\n\n[evaluate]", false, true},
		{"explainer", "window = 60", "window = 30", false, true},
		{"evaluate", "eps = 0.05", "eps = 0.04", false, true},
		{"posterior label", `label = "Deep ensemble"`, `label = "DE"`, false, true},
		{"posterior draws", "draws = 5", "draws = 4", false, true},
		{"other posterior", "draws = 20", "draws = 20\nfoo = 1", false, true},
		{"workers", "workers = 2", "workers = 1", false, false},
		{"name", `name = "quickstart"`, `name = "other"`, false, false},
	} {
		r := parse(strings.Replace(fullRecipe, c.old, c.new, 1))
		if got := r.Hash(fit...) != base.Hash(fit...); got != c.fitChanges {
			t.Errorf("%s: fit hash changed = %v, want %v", c.name, got, c.fitChanges)
		}
		if got := r.Hash() != base.Hash(); got != c.total {
			t.Errorf("%s: result hash changed = %v, want %v", c.name, got, c.total)
		}
	}
	if base.Hash("data") == base.Hash("train") || base.Hash("data", "train") == base.Hash("train", "data") {
		t.Error("parts are not distinguished")
	}
	// A moved recipe directory keeps its hash.
	dir2 := withScript(t)
	r2, err := Parse("quick.toml", []byte(fullRecipe), dir2)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Hash() != base.Hash() {
		t.Error("hash depends on the recipe's directory")
	}
	defer func() {
		if recover() == nil {
			t.Error("unknown part did not panic")
		}
	}()
	base.Hash("nope")
}

func TestPluginError(t *testing.T) {
	dir := withScript(t)
	r, err := Parse("quick.toml", []byte(fullRecipe), dir)
	if err != nil {
		t.Fatal(err)
	}
	ex := r.Explainers[0]
	perr := ex.Config.Only("window")
	got := r.PluginError(ex, perr)
	wantErr(t, got, lineOf(t, fullRecipe, "stride"), `unknown key "stride"`, "[[explainer]] #1", "explainer.occlusion")
	if !errors.Is(got, perr) {
		t.Error("PluginError does not wrap the plugin's error")
	}
	got = r.PluginError(r.Summaries[1], errors.New("bad"))
	wantErr(t, got, nthLineOf(t, fullRecipe, "[[summary]]", 1), "[[summary]] #2", "trimmed_mean.go", "bad")
}

func TestKeyLinesScanner(t *testing.T) {
	text := `# comment with [brackets] and key = 1
a = """
b = 1
"""
c = [
  1, # x = 2
  { d = 2 },
  [3, 4],
]
"e.f" = 'lit # not a comment'
g.h.i = 1
[[t]]
x = 1
[t.sub]
y = { z = { w = 1 } }
[[t]]
x = 2
[[t.arr]]
q = 1
[[t.arr]]
q = 2
`
	kl := scanKeyLines(text)
	for _, c := range []struct {
		path   []string
		marker string
		nth    int
	}{
		{[]string{"a"}, `a = """`, 0},
		{[]string{"c"}, "c = [", 0},
		{[]string{"c", "1", "d"}, "{ d = 2 }", 0},
		{[]string{"c", "2"}, "[3, 4]", 0},
		{[]string{"e.f"}, `"e.f"`, 0},
		{[]string{"g", "h", "i"}, "g.h.i", 0},
		{[]string{"g"}, "g.h.i", 0},
		{[]string{"t", "0"}, "[[t]]", 0},
		{[]string{"t", "0", "x"}, "x = 1", 0},
		{[]string{"t", "0", "sub", "y", "z", "w"}, "y = {", 0},
		{[]string{"t", "1", "x"}, "x = 2", 1},
		{[]string{"t", "1", "arr", "1", "q"}, "q = 2", 0},
		{[]string{"t", "1", "arr", "0"}, "[[t.arr]]", 0},
	} {
		if got, want := kl.get(c.path...), nthLineOf(t, text, c.marker, c.nth); got != want {
			t.Errorf("%q: line %d, want %d", c.path, got, want)
		}
	}
	if kl.get("b") != 0 {
		t.Error("a key inside a multi-line string was recorded")
	}
	if kl.get("x") != 0 {
		t.Error("a key inside a comment was recorded")
	}
}

// TestPluginDirs: plugin_dirs are resolved against the recipe's folder,
// survive the canonical form as absolute paths, must be directories, and
// change no hash.
func TestPluginDirs(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "plugs", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Parse("p.toml", []byte("plugin_dirs = [\"plugs/a\", \""+filepath.Join(dir, "plugs")+"\"]\n"+minimal), dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "plugs", "a"), filepath.Join(dir, "plugs")}; !slices.Equal(r.PluginDirs, want) {
		t.Fatalf("PluginDirs %q, want %q", r.PluginDirs, want)
	}
	c := checkCanonical(t, r, dir)
	if !strings.Contains(string(c), "plugin_dirs = [\""+filepath.Join(dir, "plugs", "a")+"\"") {
		t.Errorf("canonical form lacks the absolute plugin_dirs:\n%s", c)
	}
	plain, err := Parse("mini.toml", []byte(minimal), dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Hash() != plain.Hash() {
		t.Error("plugin_dirs changed the recipe's hash")
	}
	if c, _ := plain.Canonical(); strings.Contains(string(c), "plugin_dirs") {
		t.Errorf("a recipe without plugin_dirs has them in its canonical form:\n%s", c)
	}
	empty, err := Parse("e.toml", []byte("plugin_dirs = []\n"+minimal), dir)
	if err != nil {
		t.Fatal(err)
	}
	checkCanonical(t, empty, dir) // an empty list is no list

	for _, bad := range []struct{ toml, want string }{
		{`plugin_dirs = ["nope"]`, `line 1: element 0 of key "plugin_dirs" in the top level: "` + filepath.Join(dir, "nope") + `" is not a directory (accepted: a directory of plugin binaries`},
		{`plugin_dirs = ["plugs", ""]`, `line 1: element 1 of key "plugin_dirs" in the top level: is empty`},
		{`plugin_dirs = "plugs"`, `key "plugin_dirs" in the top level: want an array of strings`},
		{`plugin_dirs = [3]`, `element 0 of key "plugin_dirs" in the top level: want a string`},
	} {
		_, err := Parse("bad.toml", []byte(bad.toml+"\n"+minimal), dir)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want an error containing %q", bad.toml, err, bad.want)
		}
	}
}
