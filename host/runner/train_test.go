package runner

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/safetensors"
)

// smallArch is a network small enough to train in a unit test.
func smallArch() nn.Arch {
	return nn.Arch{Name: "small", InChannels: 1, InLen: 24, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "conv1", Out: 4, Kernel: 3},
		{Kind: nn.KindBatchNorm1D, Name: "bn1"},
		{Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: 3},
	}}
}

// smallData is n noisy rows of length 24 whose level depends on the class.
func smallData(n int, seed uint64) sdk.Dataset {
	r := rand.New(rand.NewPCG(seed, 1))
	d := sdk.Dataset{N: n, Len: 24, Y: make([]int, n)}
	for i := range n {
		d.Y[i] = i % 3
		for range 24 {
			d.X = append(d.X, float32(float64(d.Y[i])*0.7+r.NormFloat64()))
		}
	}
	return d
}

func smallOptions(out string) TrainOptions {
	cfg := nn.PaperTrainConfig()
	cfg.Epochs, cfg.Batch = 4, 8
	return TrainOptions{Arch: smallArch(), Config: cfg, Seed: 11, Workers: 2, Out: out}
}

// TestTrain: Train gives nn.Train's checkpoint, writes it to Out, and its
// test scores are those of the eval-mode model's probabilities.
func TestTrain(t *testing.T) {
	ds := Datasets{Train: smallData(48, 1), Val: smallData(12, 2),
		Tests: []engine.TestSplit{{Name: "a", Data: smallData(30, 3)}, {Name: "b", Data: smallData(21, 4)}}}
	out := filepath.Join(t.TempDir(), "w.safetensors")
	opt := smallOptions(out)
	var epochs []int
	opt.Progress = func(r nn.EpochReport) { epochs = append(epochs, r.Epoch) }
	res, err := Train(t.Context(), ds, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(epochs, []int{1, 2, 3, 4}) {
		t.Errorf("progress reported epochs %v, want 1..4", epochs)
	}
	// The same protocol through nn.Train directly, with one worker.
	want, err := nn.Train(t.Context(), smallArch(), ds.Train, ds.Val, opt.Config, opt.Seed, nn.TrainOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Params.Data, want.Params.Data) || res.BestEpoch != want.BestEpoch || len(res.History) != len(want.History) {
		t.Fatalf("checkpoint differs from nn.Train's (best epoch %d vs %d)", res.BestEpoch, want.BestEpoch)
	}
	f, err := safetensors.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if f.Meta["arch"] != "small" || f.Meta["best_epoch"] != strconv.Itoa(want.BestEpoch) {
		t.Errorf("metadata %v, want arch small, best_epoch %d", f.Meta, want.BestEpoch)
	}
	saved, err := nn.ParamsFromFile(smallArch(), f, out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(saved.Data, want.Params.Data) {
		t.Error("the weights file is not the checkpoint")
	}
	// Scores from the probabilities of the (batchnorm-folded) model.
	m, err := nn.NewModel(want.Params)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tests) != len(ds.Tests) {
		t.Fatalf("%d test scores for %d splits", len(res.Tests), len(ds.Tests))
	}
	var accs []float64
	for i, s := range ds.Tests {
		p := make([]float32, s.Data.N*3)
		if err := m.Probs(context.Background(), p, s.Data.X); err != nil {
			t.Fatal(err)
		}
		var loss float64
		correct := 0
		for r := range s.Data.N {
			row := p[r*3 : r*3+3]
			loss -= math.Log(float64(row[s.Data.Y[r]]))
			if slices.Index(row, slices.Max(row)) == s.Data.Y[r] {
				correct++
			}
		}
		loss /= float64(s.Data.N)
		acc := float64(correct) / float64(s.Data.N)
		accs = append(accs, acc)
		got := res.Tests[i]
		if got.Split != s.Name || got.Records != s.Data.N || got.Accuracy != acc || math.Abs(got.Loss-loss) > 1e-5*loss {
			t.Errorf("split %s: %+v; want %d records, accuracy %v, loss %v", s.Name, got, s.Data.N, acc, loss)
		}
	}
	st := res.TestAccuracy()
	if mean := (accs[0] + accs[1]) / 2; st.N != 2 || math.Abs(st.Mean-mean) > 1e-15 {
		t.Errorf("test accuracy %+v, want the mean %v of 2 splits", st, mean)
	}
}

// TestTrainErrors: a weights file that cannot be written is named, a
// test split of the wrong length is named, a cancelled context stops it.
func TestTrainErrors(t *testing.T) {
	ds := Datasets{Train: smallData(12, 1), Val: smallData(6, 2)}
	bad := filepath.Join(t.TempDir(), "missing", "w.safetensors")
	if _, err := Train(t.Context(), ds, smallOptions(bad)); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("unwritable weights file: %v, want an error naming %s", err, bad)
	}
	short := ds
	short.Tests = []engine.TestSplit{{Name: "short", Data: sdk.Dataset{X: make([]float32, 10), Y: []int{0}, N: 1, Len: 10}}}
	if _, err := Train(t.Context(), short, smallOptions("")); err == nil || !strings.Contains(err.Error(), "test split short") {
		t.Errorf("test split of 10 values: %v, want an error naming the split", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Train(ctx, ds, smallOptions("")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// TestRecipeTraining: a pqd recipe trains the generator's paper splits
// (the defaults of [data] are data.DefaultConfig) with its model, [train]
// and seed.
func TestRecipeTraining(t *testing.T) {
	r, err := recipe.Parse("t.toml", []byte(tinyRecipe(t.TempDir(), "")), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ds, opt, err := RecipeTraining(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	arch, err := r.Arch()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(opt, TrainOptions{Arch: arch, Config: r.Train, Seed: r.Seed}) {
		t.Errorf("options %+v, want the recipe's arch, [train] and seed %d", opt, r.Seed)
	}
	want, err := PaperDatasets(t.Context(), data.DefaultConfig(), r.Seed, r.Data.TrainPerClass, r.Data.ValFraction, r.Data.TestSplits, r.Data.TestPerClass)
	if err != nil {
		t.Fatal(err)
	}
	same := func(what string, a, b sdk.Dataset) {
		if a.N != b.N || a.Len != b.Len || !slices.Equal(a.X, b.X) || !slices.Equal(a.Y, b.Y) {
			t.Errorf("%s: %d x %d records differ from PaperDatasets' %d x %d", what, a.N, a.Len, b.N, b.Len)
		}
	}
	same("train", ds.Train, want.Train)
	same("val", ds.Val, want.Val)
	if len(ds.Tests) != r.Data.TestSplits || len(want.Tests) != r.Data.TestSplits {
		t.Fatalf("%d and %d test splits, want %d", len(ds.Tests), len(want.Tests), r.Data.TestSplits)
	}
	for i := range ds.Tests {
		if ds.Tests[i].Name != want.Tests[i].Name {
			t.Errorf("test split %d: %q vs %q", i, ds.Tests[i].Name, want.Tests[i].Name)
		}
		same(ds.Tests[i].Name, ds.Tests[i].Data, want.Tests[i].Data)
	}

	// Splits from files that do not fit the model are an error in the recipe.
	dir := t.TempDir()
	recs := []data.Record{{Label: 0, X: make([]float64, 10), D: make([]float64, 10)}, {Label: 1, X: make([]float64, 10), D: make([]float64, 10)}}
	if err := data.WriteCSV(filepath.Join(dir, "d"), data.Split{Name: "d", Records: recs}); err != nil {
		t.Fatal(err)
	}
	rf, err := recipe.Parse("f.toml", []byte(filesRecipe(`name = "f"`, "train = \"d\"\nval_fraction = 0.5\ntest = [\"d\"]")), dir)
	if err == nil {
		_, _, err = RecipeTraining(t.Context(), rf)
	}
	if err == nil || !strings.Contains(err.Error(), "waveforms of 10 values") {
		t.Errorf("files of 10 values for the paper model: %v", err)
	}
}

// filesRecipe is a recipe of source = "files": top (the top-level keys),
// then [data] with the lines of data, then one plugin of each kind.
func filesRecipe(top, data string) string {
	return top + "\n[data]\nsource = \"files\"\n" + data + `
[[posterior]]
use = "deterministic"
[[explainer]]
use = "occlusion"
[[summary]]
use = "mean"
`
}
