package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
)

// pythonRecipe is the tiny recipe with every posterior kind (a
// deterministic network, a 2-member ensemble, MC dropout and Laplace),
// the Go occlusion, its numpy twin and KernelSHAP through the model
// service, and the mean.
func pythonRecipe(out string) string {
	root := filepath.Join("..", "..", "plugins", "explainer")
	return fmt.Sprintf(`name = "python"
seed = 7
out = %q
plugin_dirs = [%q, %q]

[data]
train_per_class = 12
val_fraction = 0.25
test_splits = 2
test_per_class = 2

[train]
epochs = 2

[[posterior]]
use = "deterministic"
label = "Deterministic"

[[posterior]]
use = "ensemble"
label = "Ensemble"
draws = 2
members = 2

[[posterior]]
use = "mcdropout"
label = "MC dropout"
draws = 2

[[posterior]]
use = "laplace"
label = "Laplace"
draws = 2
calibration_draws = 3

[[explainer]]
use = "occlusion"
label = "Go"
window = 60
stride = 20

[[explainer]]
use = "python-occlusion"
label = "Python"
window = 60
stride = 20

[[explainer]]
use = "python-kernelshap"
label = "KernelSHAP"
samples = 24
feature = 160

[[summary]]
use = "mean"
`, out, filepath.Join(root, "python-occlusion"), filepath.Join(root, "python-kernelshap"))
}

// TestPythonExplainersInARecipe: the Python explainers run in a recipe
// through the model service under every posterior kind. python-occlusion's
// rows score exactly as the Go occlusion's (the same digits in every
// table), and the run gives the same result bytes with 1 and 2 workers.
func TestPythonExplainersInARecipe(t *testing.T) {
	pythontest.Need(t)
	dir := t.TempDir()
	here := filepath.Join(golden.RepoRoot(t), "host", "runner")
	run := func(workers int) *Outcome {
		r, err := recipe.Parse("python.toml", []byte(pythonRecipe(filepath.Join(dir, "runs"))), here)
		if err != nil {
			t.Fatal(err)
		}
		o, err := Run(context.Background(), r, Options{Plugins: inProcess(t), Workers: workers, Observer: &notes{}})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	one := run(1)
	rows := map[string]engine.Row{}
	for _, r := range one.Results.Rows {
		rows[r.Label+"|"+r.ExplainerLabel] = r
	}
	for _, post := range []string{"Deterministic", "Ensemble", "MC dropout", "Laplace"} {
		g, okg := rows[post+"|Go"]
		p, okp := rows[post+"|Python"]
		k, okk := rows[post+"|KernelSHAP"]
		if !okg || !okp || !okk {
			t.Fatalf("%s: rows missing (have %d rows)", post, len(one.Results.Rows))
		}
		gj, _ := json.Marshal(g.Agg)
		pj, _ := json.Marshal(p.Agg)
		if !bytes.Equal(gj, pj) {
			i := 0
			for i < min(len(gj), len(pj)) && gj[i] == pj[i] {
				i++
			}
			lo := max(0, i-60)
			t.Errorf("%s: python-occlusion scores differ from occlusion's at byte %d:\n  go     ...%s\n  python ...%s", post, i, gj[lo:min(len(gj), i+40)], pj[lo:min(len(pj), i+40)])
		}
		kj, _ := json.Marshal(k.Agg)
		if bytes.Equal(kj, gj) {
			t.Errorf("%s: KernelSHAP scores equal occlusion's", post)
		}
	}
	two := run(2)
	for _, f := range []string{"results.json", "records.csv", "tables.md"} {
		if !bytes.Equal(read(t, filepath.Join(one.Dir, f)), read(t, filepath.Join(two.Dir, f))) {
			t.Errorf("%s differs between 1 and 2 workers", f)
		}
	}
}
