package runner

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/data/npy"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// torchExample does the worked example's first two steps in dir, as the
// docs/own-data-and-models.md says, at the quick twin's size: `uaxai data generate --paper
// --format npy --per-class 10 --test-per-class 2 --test-splits 1` into
// dir/torch-example-quick/data, and scripts/train_torch_example.py
// --quick on it into dir/torch-example-quick.
func torchExample(t *testing.T, root, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "torch-example-quick")
	_, err := data.GenerateDir(context.Background(), filepath.Join(out, "data"), data.GenerateOptions{
		Format: data.FormatNPY, Config: data.DefaultConfig(), Seed: 2026, PerClass: 10,
		Paper: true, ValFraction: 0.1, TestSplits: 1, TestPerClass: 2})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pythontest.Python, filepath.Join(root, "scripts", "train_torch_example.py"), "--quick",
		"--data", filepath.Join(out, "data"), "--out", out, "--threads", "1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("train_torch_example.py --quick: %v\n%s", err, b)
	}
	return out
}

// exampleRecipe reads a shipped torch example recipe with its
// "../runs/" paths moved to dir (the recipe's folder stays recipes/, so
// its module file resolves as it does for a user).
func exampleRecipe(t *testing.T, root, name, dir string) *recipe.Recipe {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "recipes", name))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), `"../runs/`, `"`+dir+"/")
	text = strings.ReplaceAll(text, "/torch-example/", "/torch-example-quick/") // the full recipe on the quick files
	// out is a top-level key: before the first table.
	i := strings.Index(text, "\n[data]")
	text = text[:i] + "\nout = \"" + filepath.Join(dir, "out") + "\"\n" + text[i:]
	r, err := recipe.Parse(name, []byte(text), filepath.Join(root, "recipes"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTorchExampleRecipes: the worked example end to end at the quick
// size. The training script's networks load in both recipes (their
// plugins check them); the quick twin runs to the end with a row for
// every posterior, explainer and summary and finite scores; and the
// single network's occlusion maps equal those of a plain torch loop
// (scripts/torch_occlusion_loop.py, an independent implementation)
// within 1e-4 of each map's largest value, on every explained record.
func TestTorchExampleRecipes(t *testing.T) {
	pythontest.Need(t, "torch")
	root := golden.RepoRoot(t)
	dir := t.TempDir()
	out := torchExample(t, root, dir)
	full := exampleRecipe(t, root, "torch_resnet.toml", dir)
	if err := Check(context.Background(), full, inProcess(t)); err != nil {
		t.Fatalf("torch_resnet.toml on the example's files: %v", err)
	}
	quick := exampleRecipe(t, root, "torch_resnet_quick.toml", dir)
	quick.Analysis.Output.Maps = true
	o, err := Run(context.Background(), quick, Options{Plugins: inProcess(t), Workers: 2, Observer: &notes{}})
	if err != nil {
		t.Fatal(err)
	}
	// A row for every posterior, explainer and summary that has the
	// summary's least number of draws.
	want := 0
	m := inProcess(t)
	for _, p := range quick.Posteriors {
		for _, sref := range quick.Summaries {
			sm, err := m.Summary(context.Background(), sref.ID)
			if err != nil {
				t.Fatal(err)
			}
			if p.Draws >= sm.Info().MinDraws {
				want += len(quick.Explainers)
			}
		}
	}
	if len(o.Results.Rows) != want || want < 2*len(quick.Posteriors) {
		t.Fatalf("%d result rows, want %d", len(o.Results.Rows), want)
	}
	for _, r := range o.Results.Rows {
		for _, g := range r.Agg.Groups {
			if g.RMA.N == 0 || !(g.RMA.Mean > 0 && g.RMA.Mean <= 1) || !(g.IoU.Mean >= 0 && g.IoU.Mean <= 1) {
				t.Errorf("row %s/%s/%s group %s: RMA %+v, IoU %+v (want scores in [0, 1] over the split)", r.Label, r.ExplainerLabel, r.SummaryLabel, g.Name, g.RMA, g.IoU)
			}
		}
		if len(r.Agg.Groups) == 0 || math.IsNaN(r.Accuracy.Mean) {
			t.Errorf("row %s/%s/%s: groups %d, accuracy %+v", r.Label, r.ExplainerLabel, r.SummaryLabel, len(r.Agg.Groups), r.Accuracy)
		}
	}

	// The single network's occlusion maps against the plain loop's.
	st, err := safetensors.ReadFile(filepath.Join(o.Dir, "maps", "01-single-network_explainer-occlusion.safetensors"))
	if err != nil {
		files, _ := filepath.Glob(filepath.Join(o.Dir, "maps", "*"))
		t.Fatalf("%v (have %v)", err, files)
	}
	maps, _ := st.Get("maps")
	rec, _ := st.Get("record")
	tgt, _ := st.Get("target")
	test := filepath.Join(out, "data", "test-0")
	split, err := data.ReadDir(test, data.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	classes := make([]int64, len(split.Records))
	for i, r := range rec.Data {
		classes[int(r)] = int64(tgt.Data[i])
	}
	tfile := filepath.Join(dir, "targets.npy")
	writeInt64NPY(t, tfile, classes)
	loop := filepath.Join(dir, "loop.npy")
	cmd := exec.Command(pythontest.Python, filepath.Join(root, "scripts", "torch_occlusion_loop.py"),
		"--module", filepath.Join(root, "recipes", "torch", "resnet1d.py")+":ResNet1D", "--weights", filepath.Join(out, "resnet-0.safetensors"),
		"--input", filepath.Join(test, "waveforms.npy"), "--window", "60", "--stride", "40", "--baseline", "0", "--output", "logits",
		"--targets", tfile, "--out", loop)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("torch_occlusion_loop.py: %v\n%s", err, b)
	}
	la, err := npy.ReadFile(loop)
	if err != nil {
		t.Fatal(err)
	}
	lm := la.Float
	const n = 640
	var got, ref [][]float64
	for i, r := range rec.Data {
		g, w := make([]float64, n), make([]float64, n)
		for j := range n {
			g[j] = float64(maps.Data[i*n+j])
			w[j] = float64(lm[int(r)*n+j])
		}
		got, ref = append(got, g), append(ref, w)
	}
	if len(got) < 10 {
		t.Fatalf("%d records explained, want the test split's disturbed records", len(got))
	}
	golden.RowsClose(t, "occlusion through posterior.torch vs a plain torch loop", got, ref, 1e-4)
}

// writeInt64NPY writes v as a NumPy (len(v),) int64 array.
func writeInt64NPY(t *testing.T, path string, v []int64) {
	t.Helper()
	var b bytes.Buffer
	if err := npy.WriteHeader(&b, "<i8", []int{len(v)}); err != nil {
		t.Fatal(err)
	}
	for _, x := range v {
		binary.Write(&b, binary.LittleEndian, x)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
