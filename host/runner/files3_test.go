package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/recipe"
)

// TestFilesThreePhaseAsGenerated: the three-phase data written by `uaxai
// data generate --source pqd-3phase` (NumPy files) and read back by a
// recipe of source "files" is the data of source "pqd-3phase" with the
// same seed and sizes, so the two runs score every row the same, and the
// files' run names the classes as the generator does (from classes.txt).
func TestFilesThreePhaseAsGenerated(t *testing.T) {
	dir := t.TempDir()
	cfg := data.DefaultConfig()
	const seed, perClass, tests, testPerClass = 7, 12, 1, 2
	if _, err := data.GenerateDir(context.Background(), filepath.Join(dir, "data"), data.GenerateOptions{Generator: data.PQD3{}, Format: data.FormatNPY,
		Config: cfg, Seed: seed, PerClass: perClass, Paper: true, ValFraction: 0.25, TestSplits: tests, TestPerClass: testPerClass}); err != nil {
		t.Fatal(err)
	}
	common := fmt.Sprintf(`name = "three"
seed = %d
out = %q
[train]
epochs = 2
batch = 32
[[posterior]]
use = "deterministic"
draws = 1
seed = 3
[[explainer]]
use = "occlusion"
window = 40
stride = 40
[[summary]]
use = "mean"
[evaluate]
groups = ["all"]
`, seed, filepath.Join(dir, "runs"))
	gen := common + fmt.Sprintf("[data]\nsource = \"pqd-3phase\"\ntrain_per_class = %d\nval_fraction = 0.25\ntest_splits = %d\ntest_per_class = %d\n", perClass, tests, testPerClass)
	files := common + "[model]\nin_channels = 3\nclasses = 13\n[data]\nsource = \"files\"\ntrain = \"data/train\"\nval = \"data/val\"\ntest = [\"data/test-0\"]\nchannel_names = [\"A\", \"B\", \"C\"]\n"
	m := inProcess(t)
	var rows [2][]byte
	for i, text := range []string{gen, files} {
		r, err := recipe.Parse("three.toml", []byte(text), dir)
		if err != nil {
			t.Fatal(err)
		}
		o, err := Run(context.Background(), r, Options{Plugins: m, Workers: 2})
		if err != nil {
			t.Fatalf("recipe %d: %v", i, err)
		}
		if got := o.Results.ClassNames; !reflect.DeepEqual(got, data.PQD3{}.Classes()) {
			t.Errorf("recipe %d: classes %v, want the generator's", i, got)
		}
		for j := range o.Results.Rows {
			o.Results.Rows[j].Fit = nil // the cache entry's path, not a score
		}
		if rows[i], err = json.Marshal(o.Results.Rows); err != nil {
			t.Fatal(err)
		}
	}
	bad := strings.Replace(files, `channel_names = ["A", "B", "C"]`, `channel_names = ["A", "B"]`, 1)
	r, err := recipe.Parse("three.toml", []byte(bad), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), r, Options{Plugins: m, Workers: 2}); err == nil || !strings.Contains(err.Error(), "names 2 channels, and the data has 3") || !strings.Contains(err.Error(), "line ") {
		t.Errorf("two channel names for three channels: %v, want an error naming the key's line and both counts", err)
	}
	if string(rows[0]) != string(rows[1]) {
		i := 0
		for i < len(rows[0]) && i < len(rows[1]) && rows[0][i] == rows[1][i] {
			i++
		}
		t.Errorf("the rows of the files' run differ from the generated run's from byte %d:\n%.300s\n%.300s", i, rows[0][i:], rows[1][i:])
	}
}
