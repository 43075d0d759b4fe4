package runner

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/uaxai/uaxai/host/recipe"
)

// TestSharedTrunkWorkers: under MC dropout the occlusion explainer shares
// the trunk between the draws of a batch (its cache hits from the second
// draw on, and a worker's batches interleave with the other's); the
// results are the same bytes with 1 and 2 workers.
func TestSharedTrunkWorkers(t *testing.T) {
	dir := t.TempDir()
	extra := `
[[posterior]]
use = "mcdropout"
label = "MC dropout"
draws = 3
p = 0.2
`
	var outs []*Outcome
	for _, workers := range []int{1, 2} {
		r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), extra)), dir)
		if err != nil {
			t.Fatal(err)
		}
		o, err := Run(context.Background(), r, Options{Plugins: inProcess(t), Workers: workers, Observer: &notes{}})
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o)
	}
	for _, f := range []string{"results.json", "records.csv"} {
		if !bytes.Equal(read(t, filepath.Join(outs[0].Dir, f)), read(t, filepath.Join(outs[1].Dir, f))) {
			t.Errorf("%s differs between 1 and 2 workers", f)
		}
	}
	if !bytes.Contains(read(t, filepath.Join(outs[0].Dir, "results.json")), []byte(`"posterior.mcdropout"`)) {
		t.Error("no MC-dropout row")
	}
}
