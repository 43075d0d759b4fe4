package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/rundir"
	"github.com/uaxai/uaxai/host/store"
)

// analysisExtra gives the tiny recipe analysis tables whose per-record
// results travel through the units: sensitivity (distortions), the
// calibration's LOO coverage, agreement sets, the bound, qualitative
// figures and the maps' safetensors.
const analysisExtra = `
[[summary]]
use = "band"
k = 1
l = 2

[sensitivity]
distortions = ["noise 30", "shift -4"]
records = "all"

[agreement]
etas = [0.5, 1.0]
deltas = [0.0, 0.05]

[bound]
delta = 0.05

[figures]
qualitative = ["sag", "swell"]
perclass = true

[output]
maps = true
`

// tiny64 is the tiny recipe with 64 records a split: two batches of 32,
// so that units of 32 records cut every split in two.
func tiny64(out, extra string) string {
	return strings.Replace(tinyRecipe(out, extra), "test_per_class = 2", "test_per_class = 4", 1)
}

// resultFiles are the files a sharded run's merge must write byte for
// byte as a run in one piece does.
var resultFiles = []string{"results.json", "records.csv", "tables.md"}

func sameFiles(t *testing.T, what, got, want string) {
	t.Helper()
	files := append([]string(nil), resultFiles...)
	extra, _ := filepath.Glob(filepath.Join(want, "*", "*"))
	for _, f := range extra {
		rel, _ := filepath.Rel(want, f)
		if !strings.HasPrefix(rel, "units") && !strings.HasPrefix(rel, "shards") {
			files = append(files, rel)
		}
	}
	for _, f := range files {
		a, err := os.ReadFile(filepath.Join(got, f))
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if b := read(t, filepath.Join(want, f)); !bytes.Equal(a, b) {
			t.Errorf("%s: %s differs from the run in one piece's", what, f)
		}
	}
}

// TestShardedRunsMergeByteForByte: the tiny recipe with analysis tables,
// run as 1, 2 and 3 shards in shuffled orders (units of 32 records, two
// a split), then merged, gives the same results.json,
// records.csv, tables.md, figures, safetensors and outputs as one run.
// Shards of fit units then explain units (Slurm's two arrays) too.
func TestShardedRunsMergeByteForByte(t *testing.T) {
	dir := t.TempDir()
	r, err := recipe.Parse("tiny.toml", []byte(tiny64(filepath.Join(dir, "runs"), analysisExtra)), dir)
	if err != nil {
		t.Fatal(err)
	}
	cache := store.Cache{Dir: filepath.Join(dir, "cache")}
	m := inProcess(t)
	whole, err := Run(context.Background(), r, Options{Plugins: m, Cache: cache, UnitRecords: 32})
	if err != nil {
		t.Fatal(err)
	}
	for _, pat := range []string{"figures/*.png", "maps/*.safetensors", "outputs/*.csv"} {
		if got, _ := filepath.Glob(filepath.Join(whole.Dir, pat)); len(got) == 0 {
			t.Fatalf("the run wrote no %s: the test would compare nothing of it", pat)
		}
	}
	if res := string(read(t, filepath.Join(whole.Dir, "results.json"))); !strings.Contains(res, `"sensitivity"`) {
		t.Fatalf("results.json has no sensitivity section:\n%.500s", res)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	type split struct {
		kind string
		n    int
	}
	for _, c := range [][]split{{{"", 1}}, {{"", 2}}, {{"", 3}}, {{engine.FitUnit, 2}, {engine.ExplainUnit, 3}}} {
		run := filepath.Join(dir, "shards", strings.Repeat("x", len(c))+string(rune('0'+c[len(c)-1].n)))
		for _, sp := range c {
			for _, i := range rng.Perm(sp.n) {
				sh := engine.Shard{I: i, N: sp.n, Kind: sp.kind}
				if _, err := Run(context.Background(), r, Options{Plugins: m, Cache: cache, UnitRecords: 32, RunDir: run, Shard: &sh}); err != nil {
					t.Fatalf("shard %v: %v", sh, err)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(run, "results.json")); err == nil {
			t.Fatalf("%v: a shard wrote results.json", c)
		}
		if _, err := Merge(context.Background(), run, Options{Plugins: m}); err != nil {
			t.Fatalf("%v: merge: %v", c, err)
		}
		sameFiles(t, run, run, whole.Dir)
	}
}

// TestMergeBeforeTheShardsAreDone: a merge with a shard missing names
// the units it lacks; a shard of another recipe is refused by the run
// directory; a unit file cut short is set aside and done again by
// --resume, which ends in the same bytes.
func TestMergeBeforeTheShardsAreDone(t *testing.T) {
	dir := t.TempDir()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), "")), dir)
	if err != nil {
		t.Fatal(err)
	}
	m := inProcess(t)
	cache := store.Cache{Dir: filepath.Join(dir, "cache")}
	run := filepath.Join(dir, "run")
	sh := engine.Shard{I: 0, N: 2}
	if _, err := Run(context.Background(), r, Options{Plugins: m, Cache: cache, RunDir: run, Shard: &sh}); err != nil {
		t.Fatal(err)
	}
	// The shard's status file says what it was and how it ended.
	var status struct {
		Status, Kind  string
		Shard, Shards int
		Units         map[string]float64 `json:"units_s"`
	}
	if b, err := os.ReadFile(filepath.Join(run, "shards", "all-0-of-2.json")); err != nil {
		t.Error(err)
	} else if err := json.Unmarshal(b, &status); err != nil || status.Status != "complete" || status.Kind != "all" || status.Shard != 0 || status.Shards != 2 || len(status.Units) != 5 {
		t.Errorf("shard status %+v, %v; want complete, all, 0 of 2, 5 units done (the shard's 4 and member fit-01-00)", status, err)
	}
	_, err = Merge(context.Background(), run, Options{Plugins: m})
	// The units: fit-00, the ensemble's members fit-01-00 and fit-01-01,
	// then the explain units. Shard 0/2 did units 0, 2, 4 and 6 (fit-00,
	// fit-01-01 and the second split's explain units), and fitted member
	// fit-01-00 (shard 1's) itself, since its units needed it.
	if err == nil || !strings.Contains(err.Error(), "2 of 7 units are not done: explain-00-00-00-0000, explain-01-00-00-0000") {
		t.Errorf("merge with shard 1/2 missing: %v", err)
	}
	other, err := recipe.Parse("tiny.toml", []byte(strings.Replace(tinyRecipe(filepath.Join(dir, "runs"), ""), "seed = 7", "seed = 8", 1)), dir)
	if err != nil {
		t.Fatal(err)
	}
	sh1 := engine.Shard{I: 1, N: 2}
	if _, err := Run(context.Background(), other, Options{Plugins: m, Cache: cache, RunDir: run, Shard: &sh1}); err == nil || !strings.Contains(err.Error(), "holds another run") {
		t.Errorf("a shard of another recipe: %v", err)
	}
	// A power cut: unit fit-00 cut short.
	d := rundir.Dir{Path: run}
	b, err := os.ReadFile(d.UnitPath("fit-00"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.UnitPath("fit-00"), b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	obs := &stageNotes{}
	o, err := Resume(context.Background(), run, Options{Plugins: m, Cache: cache, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(obs.list, "\n"), "fit-00.unit") {
		t.Errorf("notes %q do not name the unit cut short", obs.list)
	}
	if _, err := os.Stat(d.UnitPath("fit-00") + ".corrupt"); err != nil {
		t.Errorf("the unit cut short was not set aside: %v", err)
	}
	whole, err := Run(context.Background(), r, Options{Plugins: m, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "resumed", o.Dir, whole.Dir)
}

// TestPrepare: Prepare writes the plan and runs nothing; its counts are
// the plan's; explain units carry their records (every split's records
// once a pair) and every unit its posterior's label.
func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	r, err := recipe.Parse("tiny.toml", []byte(tiny64(filepath.Join(dir, "runs"), "")), dir)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	fit, explain, err := Prepare(context.Background(), r, Options{Plugins: inProcess(t), UnitRecords: 32}, run)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := rundir.Dir{Path: run}.ReadPlan()
	if err != nil {
		t.Fatal(err)
	}
	// 2 splits of 64 records in blocks of 32, under 2 pairs; the
	// ensemble's 2 members are fit units of their own.
	if fit != 3 || explain != 2*2*2 || len(pl.Units) != fit+explain {
		t.Errorf("Prepare = %d fit, %d explain units; plan has %d", fit, explain, len(pl.Units))
	}
	records := map[string]int{}
	for _, u := range pl.Units {
		records[u.Posterior] += u.Records
	}
	if records["Deterministic"] != 128 || records["Ensemble"] != 128 {
		t.Errorf("records by posterior: %v, want 128 each", records)
	}
	if units, _ := filepath.Glob(filepath.Join(run, "units", "*.unit")); len(units) != 0 {
		t.Errorf("Prepare ran units: %v", units)
	}
	if _, err := os.Stat(filepath.Join(run, "recipe.toml")); err != nil {
		t.Error(err)
	}
}

// TestUnitCopiedOntoAnotherIsRedone: a unit file copied onto another
// unit's name (posterior 0's fit onto posterior 2's, with posterior 2's
// explain units removed so that a resume explains with the fit it finds;
// split 0's explain unit onto split 1's) is refused by merge, whose error
// names the file, the unit it holds and the unit expected; --resume sets
// it aside, does the unit again and writes the same bytes as a clean run.
func TestUnitCopiedOntoAnotherIsRedone(t *testing.T) {
	dir := t.TempDir()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), `
[[posterior]]
use = "mcdropout"
label = "MC dropout"
draws = 2
`)), dir)
	if err != nil {
		t.Fatal(err)
	}
	m := inProcess(t)
	cache := store.Cache{Dir: filepath.Join(dir, "cache")}
	clean, err := Run(context.Background(), r, Options{Plugins: m, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		from, to string
		drop     string // a glob of units removed after the copy
	}{
		{"fit-00", "fit-02", "explain-02-*.unit"},
		{"explain-00-00-00-0000", "explain-00-00-01-0000", ""},
	} {
		run := filepath.Join(dir, "run"+string(rune('0'+i)))
		if _, err := Run(context.Background(), r, Options{Plugins: m, Cache: cache, RunDir: run}); err != nil {
			t.Fatal(err)
		}
		d := rundir.Dir{Path: run}
		b, err := os.ReadFile(d.UnitPath(c.from))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(d.UnitPath(c.to)); err != nil {
			t.Fatalf("the run has no unit %s to copy onto: %v", c.to, err)
		}
		if err := os.WriteFile(d.UnitPath(c.to), b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = Merge(context.Background(), run, Options{Plugins: m})
		if err == nil {
			t.Errorf("merge with %s copied onto %s succeeded", c.from, c.to)
		} else {
			for _, s := range []string{d.UnitPath(c.to), "holds unit " + c.from, "says unit " + c.to} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("merge with %s copied onto %s: %v; want it to say %q", c.from, c.to, err, s)
				}
			}
		}
		if c.drop != "" {
			drop, _ := filepath.Glob(filepath.Join(run, "units", c.drop))
			if len(drop) == 0 {
				t.Fatalf("no units %s to remove", c.drop)
			}
			for _, f := range drop {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		}
		obs := &stageNotes{}
		o, err := Resume(context.Background(), run, Options{Plugins: m, Cache: cache, Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(obs.list, "\n"), c.to+".unit") {
			t.Errorf("notes %q do not name the unit set aside", obs.list)
		}
		if _, err := os.Stat(d.UnitPath(c.to) + ".corrupt"); err != nil {
			t.Errorf("the copied unit was not set aside: %v", err)
		}
		sameFiles(t, c.from+" copied onto "+c.to+", resumed", o.Dir, clean.Dir)
		if _, err := Merge(context.Background(), run, Options{Plugins: m}); err != nil {
			t.Errorf("merge after the resume: %v", err)
		}
		sameFiles(t, c.from+" copied onto "+c.to+", resumed and merged", run, clean.Dir)
	}
}
