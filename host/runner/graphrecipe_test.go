package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/store"
	"github.com/uaxai/uaxai/internal/golden"
)

// TestResNetQuickRecipe: recipes/resnet1d_quick.toml trains the ResNet1D
// graph (recipes/archs/resnet1d.toml) in Go with every posterior (one
// network, an ensemble, MC dropout, Laplace on the one network) and
// explains it with occlusion and Grad-CAM: a row for every posterior,
// explainer and summary its draws allow, scores in [0, 1], and networks
// that learned (the best posterior's accuracy at least three times
// chance, 1/16). Run again from the cache with one worker instead of two,
// it gives the same results.json bytes.
func TestResNetQuickRecipe(t *testing.T) {
	skipUnlessHeavy(t)
	if testing.Short() {
		t.Skip("trains six ResNet1D networks (about a minute on 2 cores)")
	}
	root := golden.RepoRoot(t)
	r, err := recipe.Load(filepath.Join(root, "recipes", "resnet1d_quick.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Model.GraphSpec == nil {
		t.Fatal("the recipe's model is not a graph")
	}
	cache := store.Cache{Dir: t.TempDir()}
	obs := &notes{}
	run := func(workers int) (*Outcome, []byte) {
		o, err := Run(context.Background(), r, Options{Plugins: inProcess(t), Workers: workers, Cache: cache, Out: t.TempDir(), Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(o.Dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		return o, b
	}
	o, first := run(2)
	want := 0
	for _, p := range r.Posteriors {
		for range r.Explainers {
			want++ // mean
			if p.Draws >= 2 {
				want++ // cv
			}
		}
	}
	if len(o.Results.Rows) != want {
		t.Fatalf("%d result rows, want %d", len(o.Results.Rows), want)
	}
	best := 0.0
	for _, row := range o.Results.Rows {
		best = max(best, row.Accuracy.Mean)
		for _, g := range row.Agg.Groups {
			if g.RMA.N == 0 || !(g.RMA.Mean > 0 && g.RMA.Mean <= 1) || !(g.IoU.Mean >= 0 && g.IoU.Mean <= 1) {
				t.Errorf("row %s/%s/%s group %s: RMA %+v, IoU %+v (want scores in [0, 1])", row.Label, row.ExplainerLabel, row.SummaryLabel, g.Name, g.RMA, g.IoU)
			}
		}
	}
	if best < 3.0/16 {
		t.Errorf("best accuracy %.4f, want at least 3/16 (three times chance)", best)
	}
	// Occlusion took the graph's receptive-field path, and said so.
	said := false
	for _, n := range obs.all {
		said = said || strings.Contains(n, "occlusion on a graph network: receptive-field recomputation of ")
	}
	if !said {
		t.Errorf("no note says that occlusion took the receptive-field path; notes:\n%s", strings.Join(obs.all, "\n"))
	}
	_, again := run(1)
	if !bytes.Equal(first, again) {
		t.Error("results.json differs between 2 workers and 1 worker (from the cache)")
	}
}
