package runner

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/limits"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/torchserver"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/driver"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
	"github.com/uaxai/uaxai/sdk/rng"
)

// stridedFold writes, for each seed of draws, the golden StridedNet's
// weights with the keep mask of MC-dropout draw s of its one dropout
// node (p = 0.2, on fc2's 32 inputs), as mcdropout.go documents it,
// folded into fc2's weight columns by hand: w[o, i] * m_i / (1 - p). The
// spec's dropout node is the identity in evaluation, so explaining these
// files as an ensemble is explaining the MC-dropout draws.
func stridedFold(t *testing.T, weights string, seed uint64, draws int) []string {
	t.Helper()
	f, err := safetensors.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for s := range draws {
		r := rng.For(seed, "mc-dropout", "graph", 0, s)
		keep := make([]bool, 32)
		for i := range keep {
			keep[i] = r.Float64() >= 0.2
		}
		var ts []safetensors.Tensor
		for _, tn := range f.Tensors {
			if !tn.IsFloat() {
				continue // num_batches_tracked: the graph ignores it
			}
			tn.Data = slices.Clone(tn.Data)
			if tn.Name == "fc2.weight" {
				for o := range tn.Shape[0] {
					for i := range 32 {
						if keep[i] {
							tn.Data[o*32+i] = float32(float64(tn.Data[o*32+i]) / 0.8)
						} else {
							tn.Data[o*32+i] = 0
						}
					}
				}
			}
			ts = append(ts, tn)
		}
		p := filepath.Join(t.TempDir(), fmt.Sprintf("draw%d.safetensors", s))
		if err := safetensors.WriteFile(p, ts, nil); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// closeRows fails t unless got and want (CSV rows of an Explain, their
// tags equal) differ by at most tol of each row's largest |value|.
func closeRows(t *testing.T, what string, got, want [][]string, tags int, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for r := range got {
		if !slices.Equal(got[r][:tags], want[r][:tags]) {
			t.Fatalf("%s: row %d tagged %v, want %v", what, r, got[r][:tags], want[r][:tags])
		}
		g, w := floats(t, got[r][tags:]), floats(t, want[r][tags:])
		scale := 0.0
		for _, v := range w {
			scale = max(scale, math.Abs(v))
		}
		for n := range g {
			if d := math.Abs(g[n] - w[n]); d > tol*scale {
				t.Fatalf("%s: row %d value %d: %g, want %g (|diff| %g > %g of %g)", what, r, n, g[n], w[n], d, tol, scale)
			}
		}
	}
}

// checkMCDraws checks an Explain output of S draws of nIn inputs (no
// summary): a header input,draw,v0..., then S lines an input, tagged
// (i, s), whose maps differ from each other (the draws are S networks);
// it returns the maps, by input and draw.
func checkMCDraws(t *testing.T, out string, nIn, S, n int) [][][]float64 {
	t.Helper()
	header, rows := csvRows(t, out)
	if len(header) != 2+n || header[1] != "draw" {
		t.Fatalf("header %v..., want input,draw and %d values", header[:min(3, len(header))], n)
	}
	if len(rows) != nIn*S {
		t.Fatalf("%d lines, want %d inputs x %d draws", len(rows), nIn, S)
	}
	maps := make([][][]float64, nIn)
	for k, row := range rows {
		i, s := k/S, k%S
		if row[0] != strconv.Itoa(i) || row[1] != strconv.Itoa(s) {
			t.Fatalf("line %d tagged %s,%s, want %d,%d", k+2, row[0], row[1], i, s)
		}
		maps[i] = append(maps[i], floats(t, row[2:]))
	}
	for i := range maps {
		for a := range S {
			for b := range a {
				if slices.Equal(maps[i][a], maps[i][b]) {
					t.Errorf("input %d: draws %d and %d give the same map", i, b, a)
				}
			}
		}
	}
	return maps
}

// checkMeanSummary checks that the mean summary's lines of an Explain of
// S draws (out) are the means of the draws' maps.
func checkMeanSummary(t *testing.T, out string, maps [][][]float64) {
	t.Helper()
	_, rows := csvRows(t, out)
	if len(rows) != len(maps) {
		t.Fatalf("%d mean lines, want %d", len(rows), len(maps))
	}
	for i, row := range rows {
		if row[0] != strconv.Itoa(i) || row[1] != "mean" || row[2] != "map" {
			t.Fatalf("mean line %d tagged %v", i, row[:3])
		}
		got := floats(t, row[3:])
		for n := range got {
			sum := 0.0
			for _, m := range maps[i] {
				sum += m[n]
			}
			if want := sum / float64(len(maps[i])); math.Abs(got[n]-want) > 1e-15*max(1, math.Abs(want)) {
				t.Fatalf("input %d value %d: mean %g, mean of the %d draw lines %g", i, n, got[n], len(maps[i]), want)
			}
		}
	}
}

// TestMCDropoutGraph: --mc-dropout S on a graph spec with its own dropout
// node (recipes/archs/stridednet.toml, the golden StridedNet's weights):
// Predict's probabilities and Explain's maps (saliency through
// gradients, occlusion through the receptive-field path) are those of
// the ensemble of the S networks with the documented keep masks folded
// into fc2 by hand (stridedFold); the S maps of an input differ, the mean
// summary is their mean; the same seed gives the same bytes (with any
// number of workers) and another seed other draws; the built-in route
// (--arch) and an ONNX file without dropout nodes are refused, saying why.
func TestMCDropoutGraph(t *testing.T) {
	m := inProcess(t)
	ctx := context.Background()
	dir := golden.Dir(t, "archs")
	w := filepath.Join(dir, "stridednet", "model.safetensors")
	in := filepath.Join(dir, "stridednet", "waveforms.csv")
	spec := GraphSpec{Path: filepath.Join(golden.RepoRoot(t), "recipes", "archs", "stridednet.toml")}
	const S, seed = 3, 7
	folded := stridedFold(t, w, seed, S)

	mc, err := Predict(ctx, PredictOptions{Model: spec, Weights: []string{w}, Input: in, MCDropout: S, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	ens, err := Predict(ctx, PredictOptions{Model: spec, Weights: folded, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Predict(ctx, PredictOptions{Model: spec, Weights: []string{w}, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	moved := 0.0
	for i := range mc.Probs {
		for c, v := range mc.Probs[i] {
			if d := math.Abs(float64(v - ens.Probs[i][c])); d > 1e-6 {
				t.Errorf("input %d class %d: MC dropout's mean %g, the folded networks' mean %g", i, c, v, ens.Probs[i][c])
			}
			moved = max(moved, math.Abs(float64(v-plain.Probs[i][c])))
		}
	}
	if moved < 1e-3 {
		t.Fatalf("the MC-dropout mean moved the probabilities by %g at most: the dropout did nothing", moved)
	}

	for _, ex := range []struct {
		id  string
		cfg sdk.Config
	}{{"saliency", nil}, {"occlusion", sdk.Config{"window": int64(40), "stride": int64(20)}}} {
		t.Run(ex.id, func(t *testing.T) {
			opt := ExplainOptions{Plugins: m, Model: spec, Weights: []string{w}, Input: in, Explainer: ex.id, Config: ex.cfg,
				Target: "predicted", MCDropout: S, Seed: seed, Workers: 2}
			out := explainCSV(t, opt)
			maps := checkMCDraws(t, out, 8, S, 640)
			eo := opt
			eo.Weights, eo.MCDropout = folded, 0
			_, want := csvRows(t, explainCSV(t, eo))
			_, got := csvRows(t, out)
			closeRows(t, ex.id+": MC-dropout draws against the folded networks", got, want, 2, 1e-5)

			o1 := opt
			o1.Workers = 1
			if again := explainCSV(t, o1); again != out {
				t.Error("the same seed on one worker gave other bytes")
			}
			o2 := opt
			o2.Seed = seed + 1
			if other := explainCSV(t, o2); other == out {
				t.Error("seeds 7 and 8 gave the same bytes")
			}
			om := opt
			om.Summaries = []SummarySpec{mustSummary(t, "mean")}
			checkMeanSummary(t, explainCSV(t, om), maps)
		})
	}

	paper := golden.Dir(t, "paper-1dcnn")
	pw, pin := filepath.Join(paper, "model.safetensors"), filepath.Join(paper, "waveforms.csv")
	for _, c := range []struct {
		what string
		opt  PredictOptions
		want string
	}{
		{"one draw", PredictOptions{Model: spec, Weights: []string{w}, Input: in, MCDropout: 1}, "--mc-dropout 1: want an integer 2..10000, the number of MC-dropout draws"},
		{"negative", PredictOptions{Model: spec, Weights: []string{w}, Input: in, MCDropout: -4}, "--mc-dropout -4: want an integer 2..10000"},
		{"too many", PredictOptions{Model: spec, Weights: []string{w}, Input: in, MCDropout: 10001}, "--mc-dropout 10001: want an integer 2..10000"},
		{"ensemble", PredictOptions{Model: spec, Weights: folded[:2], Input: in, MCDropout: 3}, "--mc-dropout 3 with 2 weights files: MC dropout samples the dropout of one network, and several files are an ensemble, one draw each (accepted: one weights file with --mc-dropout, or several without it)"},
		{"ONNX ensemble", PredictOptions{Weights: []string{filepath.Join(dir, "fcn", "model.onnx"), filepath.Join(dir, "stridednet", "model.onnx")}, Input: in, MCDropout: 3}, "--mc-dropout 3 with 2 weights files"},
		{"served", PredictOptions{Served: &torchserver.Server{}, Input: in, MCDropout: 3}, "--mc-dropout 3 with a model server already started"},
		{"ONNX without dropout", PredictOptions{Model: ONNXFile{Path: filepath.Join(dir, "stridednet", "model.onnx")}, Input: in, MCDropout: 3},
			"stridednet/model.onnx has no dropout node: MC dropout samples a network's own dropout, so every draw would be the network itself (accepted: a graph spec with dropout nodes"},
		{"spec without dropout", PredictOptions{Model: GraphSpec{Path: filepath.Join(golden.RepoRoot(t), "recipes", "archs", "fcn.toml")}, Weights: []string{filepath.Join(dir, "fcn", "model.safetensors")}, Input: in, MCDropout: 3},
			"fcn.toml with weights " + filepath.Join(dir, "fcn", "model.safetensors") + " has no dropout node"},
		{"built-in", PredictOptions{Weights: []string{pw}, Input: pin, MCDropout: 3}, `--mc-dropout: architecture "paper-1dcnn" has no dropout node`},
	} {
		_, err := Predict(ctx, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Predict: %v, want %q", c.what, err, c.want)
		}
		if c.what == "served" {
			continue // Explain's own checks of Served come first
		}
		eo := ExplainOptions{Plugins: m, Model: c.opt.Model, Weights: c.opt.Weights, Input: c.opt.Input, Explainer: "saliency", Target: "0", MCDropout: c.opt.MCDropout}
		if err := Explain(ctx, eo, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Explain: %v, want %q", c.what, err, c.want)
		}
	}
}

// TestMCDropoutFold: a graph's MC-dropout draws need dropout nodes on C x
// 1 features, with p > 0, each read by one linear or conv1d node; any
// other is refused naming the node and what is accepted.
func TestMCDropoutFold(t *testing.T) {
	node := func(name, op string, attrs map[string]any) graph.Node {
		return graph.Node{Name: name, Op: op, Attrs: attrs}
	}
	conv := node("conv", "conv1d", map[string]any{"out": int64(4), "kernel": int64(3)})
	pool := node("pool", "globalavgpool", nil)
	fc := node("fc", "linear", map[string]any{"out": int64(3)})
	drop := func(p float64) graph.Node { return node("drop", "dropout", map[string]any{"p": p}) }
	for _, c := range []struct {
		what  string
		nodes []graph.Node
		want  string
	}{
		{"over time", []graph.Node{conv, drop(0.3), node("conv2", "conv1d", map[string]any{"out": int64(4), "kernel": int64(3)}), pool, fc},
			`dropout node "drop" masks 4 channels x 10 steps; a graph's MC-dropout draw folds one mask a channel, shared over time`},
		{"p = 0", []graph.Node{conv, pool, drop(0), fc}, "every dropout node of net has p = 0"},
		{"none", []graph.Node{conv, pool, fc}, "net has no dropout node"},
		{"read by a relu", []graph.Node{conv, pool, drop(0.3), node("relu", "relu", nil), fc}, `--mc-dropout: net, draw 0: arch "net": dropout node "drop": read by relu node "relu"`},
	} {
		spec := graph.Spec{Name: "net", InChannels: 1, InLen: 12, Nodes: c.nodes}
		net, err := graph.Compile(spec)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		_, err = mcDropout{draws: 2, seed: 1}.fold(nn.Params{Arch: nn.GraphArch(spec), Data: make([]float32, net.NumParams())}, "net")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.what, err, c.want)
		}
	}
}

// TestMCDropoutTorch: --mc-dropout S of a PyTorch module (the golden
// StridedNet, one torch.nn.Dropout of p = 0.2 on fc2's 32 inputs), its
// draws made by the kit's model server: Predict and Explain give the
// ensemble of the S networks whose fc2 columns are scaled by the masks the
// kit documents for the seeds rng.Key(seed, "mc-dropout", "torch", -1, s)
// (computed here by a Python script of the documented formula: SHA-256
// of "<seed>:0:32", a torch.Generator, U >= p over 1 - p); the S maps
// of an input differ; the same seed gives the same bytes, another seed
// other draws.
func TestMCDropoutTorch(t *testing.T) {
	pythontest.Need(t, "torch")
	m := inProcess(t)
	ctx := context.Background()
	dir := golden.Dir(t, "archs")
	w := filepath.Join(dir, "stridednet", "model.safetensors")
	in := filepath.Join(dir, "stridednet", "waveforms.csv")
	model := TorchModule{torchserver.Model{Module: filepath.Join(dir, "archs.py") + ":StridedNet"}}
	const S, seed = 3, 11
	script := `import hashlib, sys, torch
sys.path.insert(0, sys.argv[1])
from uaxai_plugin import torchmodel as tm
sd = tm.load_state_dict(sys.argv[2])
for seed, out in zip(sys.argv[3::2], sys.argv[4::2]):
    key = "%d:0:32" % int(seed)
    k = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little") & ((1 << 63) - 1)
    m = (torch.rand((32,), generator=torch.Generator().manual_seed(k)) >= 0.2).float() / 0.8
    d = dict(sd)
    d["fc2.weight"] = sd["fc2.weight"] * m[None, :]
    tm.save_state_dict(out, d)
`
	args := []string{"-c", script, filepath.Join(golden.RepoRoot(t), "sdk", "python"), w}
	var folded []string
	for s := range S {
		p := filepath.Join(t.TempDir(), fmt.Sprintf("draw%d.safetensors", s))
		args = append(args, strconv.FormatUint(rng.Key(seed, "mc-dropout", "torch", -1, s), 10), p)
		folded = append(folded, p)
	}
	if out, err := exec.Command(pythontest.Python, args...).CombinedOutput(); err != nil {
		t.Fatalf("folding the masks: %v\n%s", err, out)
	}
	for _, p := range folded {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}

	mc, err := Predict(ctx, PredictOptions{Model: model, Weights: []string{w}, Input: in, MCDropout: S, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	ens, err := Predict(ctx, PredictOptions{Model: model, Weights: folded, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	for i := range mc.Probs {
		for c, v := range mc.Probs[i] {
			if d := math.Abs(float64(v - ens.Probs[i][c])); d > 1e-6 {
				t.Errorf("input %d class %d: MC dropout's mean %g, the folded networks' mean %g", i, c, v, ens.Probs[i][c])
			}
		}
	}

	opt := ExplainOptions{Plugins: m, Model: model, Weights: []string{w}, Input: in, Explainer: "saliency", Target: "predicted", MCDropout: S, Seed: seed}
	out := explainCSV(t, opt)
	checkMCDraws(t, out, 8, S, 640)
	eo := opt
	eo.Weights, eo.MCDropout = folded, 0
	_, want := csvRows(t, explainCSV(t, eo))
	_, got := csvRows(t, out)
	closeRows(t, "saliency of the MC-dropout draws against the folded networks", got, want, 2, 1e-5)
	if again := explainCSV(t, opt); again != out {
		t.Error("the same seed gave other bytes")
	}
	o2 := opt
	o2.Seed = seed + 1
	if other := explainCSV(t, o2); other == out {
		t.Error("seeds 11 and 12 gave the same bytes")
	}
}

// transformerNet is issue 38's small Transformer classifier: a Conv1d
// patch embedding, a TransformerEncoderLayer (batch first, dropout 0.2),
// the mean over tokens, a linear head; torch.manual_seed(7)'s weights.
const transformerNet = `import torch


class Classifier(torch.nn.Module):
    def __init__(self, dropout=0.2):
        super().__init__()
        torch.manual_seed(7)
        self.embed = torch.nn.Conv1d(1, 16, 16, stride=16)
        self.enc = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=dropout, batch_first=True)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        return torch.softmax(self.head(self.enc(self.embed(x).transpose(1, 2)).mean(dim=1)), dim=1)


if __name__ == "__main__":
    import sys
    sys.path.insert(0, sys.argv[1])
    from uaxai_plugin import torchmodel as tm
    tm.save_state_dict(sys.argv[2], Classifier().state_dict())
`

// TestMCDropoutTorchTransformer: --mc-dropout of a PyTorch Transformer
// classifier, as explain and predict serve it (TorchModule.serve): from
// the host's side, each draw's probabilities are the same in a Probs
// call (torch.no_grad(), where PyTorch's encoder layer has a fast path
// that skips dropout) and in an InputGrad call (with gradients: input
// gradients, and Grad-CAM's Layer), and the two draws differ.
func TestMCDropoutTorchTransformer(t *testing.T) {
	pythontest.Need(t, "torch")
	ctx := context.Background()
	dir := t.TempDir()
	src, w := filepath.Join(dir, "tnet.py"), filepath.Join(dir, "tnet.safetensors")
	if err := os.WriteFile(src, []byte(transformerNet), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(pythontest.Python, src, filepath.Join(golden.RepoRoot(t), "sdk", "python"), w).CombinedOutput(); err != nil {
		t.Fatalf("writing the weights: %v\n%s", err, out)
	}
	const B, T, K = 6, 64, 4
	x := make([]float32, B*T)
	r := rng.For(1, "test", "", -1, -1)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	in := inputs{n: B, c: 1, t: T, x: x}
	refs, names, started, calls, err := TorchModule{torchserver.Model{Module: src + ":Classifier"}}.serve(ctx, []string{w}, mcDropout{draws: 2, seed: 3}, in, limits.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer started.Close()
	if len(refs) != 2 || names[1] != w+", MC-dropout draw 1" {
		t.Fatalf("%d draws named %v, want 2, \"%s, MC-dropout draw 1\"", len(refs), names, w)
	}
	probs := make([][]float32, 2)
	for s, ref := range refs {
		m, err := driver.OpenDraw(ctx, sdk.Draw{Served: &ref}, calls)
		if err != nil {
			t.Fatal(err)
		}
		plain, graded := make([]float32, B*K), make([]float32, B*K)
		err = m.Call(ctx, func(model nn.Model) error {
			if err := model.Probs(ctx, plain, x); err != nil {
				return err
			}
			return model.InputGrad(ctx, make([]float32, B*T), graded, x, []int{0, 1, 2, 3, 0, 1})
		})
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		for j := range plain {
			if d := math.Abs(float64(plain[j] - graded[j])); d > 1e-6 {
				t.Fatalf("draw %d, input %d class %d: Probs %g, InputGrad's forward pass %g: two networks", s, j/K, j%K, plain[j], graded[j])
			}
		}
		probs[s] = plain
	}
	d := 0.0
	for j := range probs[0] {
		d = max(d, math.Abs(float64(probs[0][j]-probs[1][j])))
	}
	if d < 1e-3 {
		t.Errorf("the two draws differ by %g at most: the same network", d)
	}
}

// TestCheckMCDropoutBounds: the draw counts at the ends of 2..MaxDraws
// are accepted, and the counts just outside refused, as is none (0).
func TestCheckMCDropoutBounds(t *testing.T) {
	for draws, ok := range map[int]bool{0: true, 1: false, 2: true, recipe.MaxDraws: true, recipe.MaxDraws + 1: false} {
		err := checkMCDropout(draws, []string{"w.safetensors"}, nil, false)
		if (err == nil) != ok {
			t.Errorf("--mc-dropout %d: %v; accepted %v", draws, err, ok)
		}
	}
}
