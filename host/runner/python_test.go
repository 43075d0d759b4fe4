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

// pythonRecipe is the tiny recipe with MC dropout and Laplace too (every
// posterior kind), and, besides its Go occlusion, the numpy twin of it
// and KernelSHAP through the model service.
func pythonRecipe(out string) string {
	root := filepath.Join("..", "..", "plugins", "explainer")
	return fmt.Sprintf("plugin_dirs = [%q, %q]\n", filepath.Join(root, "python-occlusion"), filepath.Join(root, "python-kernelshap")) +
		tinyRecipe(out, laplaceTable+`
[[posterior]]
use = "mcdropout"
label = "MC dropout"
draws = 2

[[explainer]]
use = "python-occlusion"
window = 60
stride = 20

[[explainer]]
use = "python-kernelshap"
samples = 24
feature = 160
`)
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
		if r.Summary == "summary.mean" {
			rows[r.Label+"|"+r.Explainer] = r
		}
	}
	for _, post := range []string{"Deterministic", "Ensemble", "MC dropout", "Laplace"} {
		g, okg := rows[post+"|explainer.occlusion"]
		p, okp := rows[post+"|explainer.python-occlusion"]
		k, okk := rows[post+"|explainer.python-kernelshap"]
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
