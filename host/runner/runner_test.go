package runner

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/uaxai/uaxai/host/builtin"
	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/plugin"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/rundir"
	"github.com/uaxai/uaxai/host/store"
	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/pythontest"
	"github.com/uaxai/uaxai/internal/testdep"
	"github.com/uaxai/uaxai/plugins/explainer/occlusion"
	"github.com/uaxai/uaxai/sdk"
)

// tinyRecipe is a recipe small enough for a unit test: two posteriors,
// occlusion, mean and variance (which the single-draw baseline skips).
func tinyRecipe(out, extra string) string {
	return `name = "tiny"
seed = 7
out = "` + out + `"

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

[[explainer]]
use = "occlusion"
window = 60
stride = 20

[[summary]]
use = "mean"

[[summary]]
use = "variance"
` + extra
}

type notes struct {
	mu  sync.Mutex
	all []string
}

func (n *notes) Stage(string, int)   {}
func (n *notes) Advance(int, string) {}
func (n *notes) Note(s string)       { n.mu.Lock(); n.all = append(n.all, s); n.mu.Unlock() }

func runTiny(t *testing.T, dir string, workers int, cache *store.Cache, obs *notes) *Outcome {
	t.Helper()
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), "")), dir)
	if err != nil {
		t.Fatal(err)
	}
	m := inProcess(t)
	opt := Options{Plugins: m, Workers: workers, Observer: obs}
	if cache != nil {
		opt.Cache = *cache
	}
	o, err := Run(context.Background(), r, opt)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWorkersGiveIdenticalResults: the same recipe gives the same
// results.json and records.csv bytes with 1 and 2 workers, and a second
// run with a warm cache gives them again without fitting.
func TestWorkersGiveIdenticalResults(t *testing.T) {
	dir := t.TempDir()
	cache := &store.Cache{Dir: filepath.Join(dir, "cache")}
	one := runTiny(t, dir, 1, nil, &notes{})
	two := runTiny(t, dir, 2, cache, &notes{})
	for _, f := range []string{"results.json", "records.csv"} {
		a, b := read(t, filepath.Join(one.Dir, f)), read(t, filepath.Join(two.Dir, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between 1 and 2 workers", f)
		}
	}
	obs := &notes{}
	three := runTiny(t, dir, 2, cache, obs)
	if !bytes.Equal(read(t, filepath.Join(one.Dir, "results.json")), read(t, filepath.Join(three.Dir, "results.json"))) {
		t.Error("results.json differs after a cache hit")
	}
	hits := 0
	for _, n := range obs.all {
		if strings.Contains(n, "from the cache") {
			hits++
		}
	}
	if hits != 3 {
		t.Errorf("%d cache hits on the second run, want 3: the deterministic network and the ensemble's 2 members (notes: %q)", hits, obs.all)
	}
	// Every file of the run directory is there; timings only in the manifest.
	for _, f := range []string{"recipe.toml", "manifest.json", "results.json", "records.csv", "tables.md"} {
		if _, err := os.Stat(filepath.Join(one.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	if man := string(read(t, filepath.Join(one.Dir, "manifest.json"))); !strings.Contains(man, `"explainer.occlusion": "`+occlusion.New().Info().Version+`"`) || !strings.Contains(man, "timings_s") {
		t.Errorf("manifest lacks plugin versions or timings:\n%s", man)
	}
	if bytes.Contains(read(t, filepath.Join(one.Dir, "results.json")), []byte("timing")) {
		t.Error("results.json holds timings")
	}
	// Rows: baseline x mean (variance needs 2 draws), ensemble x mean, x variance.
	if got := len(one.Results.Rows); got != 3 {
		t.Errorf("%d result rows, want 3", got)
	}
	// Normal records are counted in records.csv, never scored.
	csv := string(read(t, filepath.Join(one.Dir, "records.csv")))
	if !strings.Contains(csv, ",normal,") || strings.Contains(csv, ",normal,0,0,0,true,") {
		t.Error("records.csv lacks the unscored normal records, or scores one")
	}
}

// TestHoldOut: per class round(frac * n) records are held out, the rest
// train, and the choice is a function of the seed.
func TestHoldOut(t *testing.T) {
	var recs []data.Record
	for i := 0; i < 40; i++ {
		recs = append(recs, data.Record{Label: i % 4, SNRdB: float64(i)})
	}
	tr, va := HoldOut(recs, 0.3, 1)
	if len(va) != 4*3 || len(tr) != 40-12 {
		t.Fatalf("held out %d, trained %d; want 12 and 28", len(va), len(tr))
	}
	per := map[int]int{}
	for _, r := range va {
		per[r.Label]++
	}
	for c := 0; c < 4; c++ {
		if per[c] != 3 {
			t.Errorf("class %d: %d held out, want 3", c, per[c])
		}
	}
	_, va2 := HoldOut(recs, 0.3, 1)
	_, va3 := HoldOut(recs, 0.3, 2)
	same := func(a, b []data.Record) bool {
		for i := range a {
			if a[i].SNRdB != b[i].SNRdB {
				return false
			}
		}
		return true
	}
	if !same(va, va2) {
		t.Error("same seed, different hold-out")
	}
	if same(va, va3) {
		t.Error("different seeds, same hold-out")
	}
}

// TestScriptSummaryInARecipe: a recipe loads recipes/scripts/trimmed_mean.go
// by path; with trim = 0 the trimmed mean is the mean, so its scores equal
// the mean row's (a metamorphic check through the whole engine).
func TestScriptSummaryInARecipe(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(golden.RepoRoot(t), "recipes", "scripts", "trimmed_mean.go")
	extra := "\n[[summary]]\nscript = \"" + script + "\"\ntrim = 0.0\n"
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), extra)), dir)
	if err != nil {
		t.Fatal(err)
	}
	m := inProcess(t)
	o, err := Run(context.Background(), r, Options{Plugins: m, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]engine.Row{}
	for _, row := range o.Results.Rows {
		byKey[row.Posterior+" "+row.Summary] = row
	}
	mean, ok1 := byKey["posterior.ensemble summary.mean"]
	trim, ok2 := byKey["posterior.ensemble summary.trimmed_mean"]
	if !ok1 || !ok2 {
		t.Fatalf("rows: %v", byKey)
	}
	for i := range mean.Records {
		a, b := mean.Records[i], trim.Records[i]
		if a.OK != b.OK || math.Abs(a.RMA-b.RMA) > 1e-12 || math.Abs(a.IoU-b.IoU) > 1e-12 {
			t.Fatalf("record %d: mean %+v, trimmed mean (trim 0) %+v", i, a, b)
		}
	}
	// A bad script key is placed at its line by recipe check.
	bad := strings.Replace(tinyRecipe(filepath.Join(dir, "runs"), extra), "trim = 0.0", "trim = 0.7", 1)
	r, err = recipe.Parse("tiny.toml", []byte(bad), dir)
	if err != nil {
		t.Fatal(err)
	}
	err = Check(context.Background(), r, m)
	line := strings.Count(bad[:strings.Index(bad, "trim = 0.7")], "\n") + 1
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("line %d", line)) {
		t.Errorf("trim = 0.7: %v; want an error at line %d", err, line)
	}
}

// TestShippedRecipesCheck: every recipe under recipes/ parses and every
// plugin accepts its table. The Python plugins of python_explainers.toml
// start with a python3 without numpy first on PATH (pythontest.BareShim):
// the host finds /usr/bin/python3 itself, as it does for a user whose
// first python3 is pyenv's.
func TestShippedRecipesCheck(t *testing.T) {
	root := filepath.Join(golden.RepoRoot(t), "recipes")
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".toml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) < 2 {
		t.Fatalf("recipes: %v %v", files, err)
	}
	pyErr := pythontest.Available()
	if pyErr != nil {
		testdep.Lacking(t, testdep.Python, "recipes with Python plugins are not checked: ", pyErr)
	} else {
		pythontest.BareShim(t)
		t.Setenv(plugin.PythonEnv, "")
	}
	checkedPython := false
	for _, f := range files {
		if filepath.Base(filepath.Dir(f)) == "archs" {
			continue // architecture files (sdk/nn/graph specs), not recipes: sdk/nn/graph's tests read them
		}
		if strings.HasPrefix(filepath.Base(f), "torch_") {
			// Their data and weights are what docs/own-data-and-models.md's commands
			// write; TestTorchExampleRecipes writes them and checks these.
			continue
		}
		r, err := recipe.Load(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if len(r.PluginDirs) > 0 && pyErr != nil {
			t.Logf("%s: not checked: its plugin_dirs hold Python plugins: %v", f, pyErr)
			continue
		}
		m := inProcess(t) // a manager a recipe, as a run has: plugin_dirs are the recipe's
		if err := Check(context.Background(), r, m); err != nil {
			t.Error(err)
		}
		// Without the trial of what the recipe brings, it passes too.
		if _, err := CheckStatic(context.Background(), r, inProcess(t)); err != nil {
			t.Errorf("CheckStatic: %v", err)
		}
		checkedPython = checkedPython || filepath.Base(f) == "python_explainers.toml"
	}
	if pyErr == nil && !checkedPython {
		t.Error("recipes/python_explainers.toml was not checked")
	}
}

// TestEverySummaryInARecipe: each built-in summary runs in a recipe. The
// map summaries get a row for every posterior with enough draws; the set
// and band summaries are reported as not scored.
func TestEverySummaryInARecipe(t *testing.T) {
	dir := t.TempDir()
	extra := `
[[summary]]
use = "quantile"
alpha = 0.5

[[summary]]
use = "cv"
kappa = 0.01

[[summary]]
use = "agreement"

[[summary]]
use = "band"
k = 1
l = 2

[[summary]]
use = "iband"
`
	r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), extra)), dir)
	if err != nil {
		t.Fatal(err)
	}
	m := inProcess(t)
	obs := &notes{}
	o, err := Run(context.Background(), r, Options{Plugins: m, Workers: 2, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, row := range o.Results.Rows {
		got = append(got, row.Posterior+" "+row.Summary)
	}
	want := []string{
		"posterior.deterministic summary.mean", "posterior.deterministic summary.quantile",
		"posterior.ensemble summary.mean", "posterior.ensemble summary.variance", "posterior.ensemble summary.quantile", "posterior.ensemble summary.cv",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	notes := strings.Join(o.Results.Notes, "\n")
	for _, w := range []string{"Deterministic with explainer.occlusion: 1 draw(s), summary.cv needs at least 2", "Deterministic with explainer.occlusion: 1 draw(s), summary.band needs at least 2"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
	checkOutputs(t, o, []string{
		"posterior.deterministic summary.agreement", "posterior.ensemble summary.agreement", "posterior.ensemble summary.band", "posterior.ensemble summary.iband",
	})
}

// checkOutputs checks the set and band outputs of a run: the ones wanted
// ("posterior summary"), each in its file under outputs/, named in
// results.json, with a line (a set) or two (a band) for every record
// that the run explained, i.e. every record of records.csv with a
// non-empty mask under the same posterior and explainer.
func checkOutputs(t *testing.T, o *Outcome, want []string) {
	t.Helper()
	var got []string
	for _, out := range o.Results.Outputs {
		got = append(got, out.Posterior+" "+out.Summary)
	}
	if !slices.Equal(got, want) {
		t.Errorf("outputs %q, want %q", got, want)
	}
	rj, err := os.ReadFile(filepath.Join(o.Dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Outputs []engine.Output `json:"outputs"`
	}
	if err := json.Unmarshal(rj, &doc); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc.Outputs, o.Results.Outputs) {
		t.Errorf("results.json outputs %+v, want %+v", doc.Outputs, o.Results.Outputs)
	}
	records := readCSV(t, filepath.Join(o.Dir, "records.csv"))
	for _, out := range o.Results.Outputs {
		var explained []string // split/record of the block's explained records
		seen := map[string]bool{}
		for _, rec := range records[1:] {
			key := rec[4] + "/" + rec[5]
			if rec[1] == out.Posterior && rec[2] == out.Explainer && rec[10] != "0" && !seen[key] {
				seen[key] = true
				explained = append(explained, key)
			}
		}
		if out.File == "" || out.Records != nil {
			t.Errorf("%s: file %q, %d records kept in memory", out.Summary, out.File, len(out.Records))
			continue
		}
		lines := readCSV(t, filepath.Join(o.Dir, out.File))
		per := 1
		if out.Kind == sdk.OutputBand {
			per = 2
		}
		if len(lines)-1 != per*len(explained) || out.Count != len(explained) {
			t.Errorf("%s: %d lines, count %d, for %d explained records", out.File, len(lines)-1, out.Count, len(explained))
			continue
		}
		if len(lines[0]) != 8+out.N || out.N != 640 {
			t.Errorf("%s: %d columns, length %d", out.File, len(lines[0]), out.N)
		}
		for i, l := range lines[1:] {
			if k := l[0] + "/" + l[1]; k != explained[i/per] {
				t.Errorf("%s line %d: record %s, want %s", out.File, i+2, k, explained[i/per])
			}
			switch out.Kind {
			case sdk.OutputSet:
				size := 0
				for _, v := range l[8:] {
					if v == "1" {
						size++
					} else if v != "0" {
						t.Fatalf("%s line %d: set value %q", out.File, i+2, v)
					}
				}
				if l[7] != strconv.Itoa(size) {
					t.Errorf("%s line %d: size %s, %d ones", out.File, i+2, l[7], size)
				}
			case sdk.OutputBand:
				if want := []string{"lower", "upper"}[i%2]; l[7] != want {
					t.Fatalf("%s line %d: bound %q, want %q", out.File, i+2, l[7], want)
				}
				if i%2 == 1 {
					for n := range out.N {
						lo, err1 := strconv.ParseFloat(lines[i][8+n], 64)
						hi, err2 := strconv.ParseFloat(l[8+n], 64)
						if err1 != nil || err2 != nil || !(lo <= hi) {
							t.Fatalf("%s record %s value %d: [%s, %s]", out.File, explained[i/per], n, lines[i][8+n], l[8+n])
						}
					}
				}
			}
		}
	}
}

// TestQuickRecipes runs every recipe under recipes/quick/ to the end, in
// process, and checks that each (posterior, explainer, map summary) with
// enough draws has a row.
func TestQuickRecipes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(golden.RepoRoot(t), "recipes", "quick", "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("quick recipes: %v %v", files, err)
	}
	m := inProcess(t)
	for _, f := range files {
		r, err := recipe.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(f) == "every_plugin.toml" { // every built-in, as it says
			used := map[string]bool{}
			for _, s := range slices.Concat(r.Posteriors, r.Explainers, r.Summaries) {
				used[s.ID] = true
			}
			for _, mk := range builtin.Constructors() {
				if id := mk().Info().ID; !used[id] {
					t.Errorf("every_plugin.toml does not use the built-in %s", id)
				}
			}
		}
		o, err := Run(context.Background(), r, Options{Plugins: m, Out: t.TempDir(), Workers: 2})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rows := map[string]bool{}
		for _, row := range o.Results.Rows {
			rows[row.Label+" / "+row.Explainer+" / "+row.Summary] = true
		}
		for _, p := range r.Posteriors {
			for _, e := range r.Explainers {
				for _, s := range r.Summaries {
					info, err := m.Summary(context.Background(), s.ID)
					if err != nil {
						t.Fatal(err)
					}
					want := info.Info().Output == sdk.OutputMap && p.Draws >= info.Info().MinDraws
					if got := rows[p.Label+" / "+e.ID+" / "+s.ID]; got != want {
						t.Errorf("%s: row %s / %s / %s present %v, want %v", filepath.Base(f), p.Label, e.ID, s.ID, got, want)
					}
				}
			}
		}
		checkPredictive(t, filepath.Join(o.Dir, "results.json"), r)
		checkRunFiles(t, o.Dir)
	}
}

// checkRunFiles: results.json names the outputs of the set and band
// summaries as outputs/NN-..., numbered 1, 2, ... in its order, and each
// file is there; it has no "analysis" key when the recipe asks for no
// analysis; manifest.json gives the wall time of every unit of the plan.
func checkRunFiles(t *testing.T, dir string) {
	t.Helper()
	var res struct {
		Outputs []struct {
			File string `json:"file"`
		} `json:"outputs"`
		Analysis *json.RawMessage `json:"analysis"`
	}
	var man struct {
		Units map[string]float64 `json:"units_s"`
	}
	for name, v := range map[string]any{"results.json": &res, "manifest.json": &man} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for i, o := range res.Outputs {
		if want := fmt.Sprintf("outputs/%02d-", i+1); !strings.HasPrefix(o.File, want) {
			t.Errorf("output %d: file %q, want it to start with %s", i, o.File, want)
		}
		if _, err := os.Stat(filepath.Join(dir, o.File)); err != nil {
			t.Error(err)
		}
	}
	if res.Analysis != nil {
		t.Errorf("results.json has an analysis (%s) for a recipe that asks for none", *res.Analysis)
	}
	plan, err := (rundir.Dir{Path: dir}).ReadPlan()
	if err != nil {
		t.Fatal(err)
	}
	if len(man.Units) != len(plan.Units) {
		t.Errorf("manifest.json times %d units, the plan has %d", len(man.Units), len(plan.Units))
	}
	for _, u := range plan.Units {
		if _, ok := man.Units[u.Name]; !ok {
			t.Errorf("manifest.json has no time for unit %s", u.Name)
		}
	}
}

// checkPredictive: results.json's "predictive" has one entry a posterior
// of the recipe, in its order, with the predictive quality of every test
// split (NLL and Brier finite and positive, ECE and entropy in range).
func checkPredictive(t *testing.T, path string, r *recipe.Recipe) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Predictive []struct {
			Label  string `json:"posterior_label"`
			Splits []struct {
				NLL, ECE, Brier, Entropy float64
			} `json:"splits"`
		} `json:"predictive"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Predictive) != len(r.Posteriors) {
		t.Fatalf("%s: %d predictive entries, want one a posterior (%d)", path, len(doc.Predictive), len(r.Posteriors))
	}
	for i, p := range doc.Predictive {
		if p.Label != r.Posteriors[i].Label || len(p.Splits) != r.Data.TestSplits {
			t.Errorf("predictive entry %d: %s with %d splits, want %s with %d", i, p.Label, len(p.Splits), r.Posteriors[i].Label, r.Data.TestSplits)
		}
		for si, q := range p.Splits {
			if !(q.NLL > 0 && q.Brier > 0 && q.ECE >= 0 && q.ECE <= 1 && q.Entropy >= 0 && q.Entropy <= math.Log(16)) {
				t.Errorf("%s split %d: %+v", p.Label, si, q)
			}
		}
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return lines
}

// TestCorruptCacheEntryIsRefitted: a bit flipped in a cached posterior is
// caught by its checksum; the entry is set aside, the posterior fitted
// again, and results.json is the same bytes as with a sound cache.
func TestCorruptCacheEntryIsRefitted(t *testing.T) {
	dir := t.TempDir()
	cache := &store.Cache{Dir: filepath.Join(dir, "cache")}
	first := runTiny(t, dir, 2, cache, &notes{})
	entries, err := filepath.Glob(filepath.Join(cache.Dir, "posteriors", "*.safetensors"))
	if err != nil || len(entries) != 3 {
		t.Fatalf("cache entries %v %v, want 3 (deterministic, the ensemble's 2 members)", entries, err)
	}
	b := read(t, entries[0])
	b[len(b)-3] ^= 0x10 // a bit of the last tensor's data
	if err := os.WriteFile(entries[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	obs := &notes{}
	second := runTiny(t, dir, 2, cache, obs)
	if !bytes.Equal(read(t, filepath.Join(first.Dir, "results.json")), read(t, filepath.Join(second.Dir, "results.json"))) {
		t.Error("results.json differs after a corrupt cache entry")
	}
	all := strings.Join(obs.all, "\n")
	if !strings.Contains(all, "cache entry "+entries[0]+" is corrupt") || !strings.Contains(all, "checksum mismatch") || strings.Count(all, "from the cache") != 2 {
		t.Errorf("notes %q: want the corrupt entry named and two cache hits", obs.all)
	}
	if aside := read(t, entries[0]+".corrupt"); !bytes.Equal(aside, b) {
		t.Error("the corrupt entry was not set aside unchanged")
	}
}

// TestEmptyValidationWarned: a val_fraction that holds out no record of
// any class leaves the validation set empty; LoadData says so once, as a
// warning (kept in the manifest) and a note, and says nothing when the
// validation set has records.
func TestEmptyValidationWarned(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		frac string
		warn bool
	}{{"0.01", true}, {"0.25", false}} {
		text := strings.Replace(tinyRecipe(dir, ""), "val_fraction = 0.25", "val_fraction = "+c.frac, 1)
		r, err := recipe.Parse("tiny.toml", []byte(text), dir)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := LoadData(t.Context(), r)
		if err != nil {
			t.Fatal(err)
		}
		if (ds.Val.N == 0) != c.warn {
			t.Fatalf("val_fraction %s: %d validation records; the case wants them empty = %v", c.frac, ds.Val.N, c.warn)
		}
		n := 0
		for _, w := range ds.Warnings {
			if strings.Contains(w, "the validation set is empty (val_fraction "+c.frac+" of each class of the") {
				n++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[c.warn]; n != want || len(ds.Notes) != len(ds.Warnings) {
			t.Errorf("val_fraction %s: %d empty-validation warnings, want %d (warnings %q, notes %q)", c.frac, n, want, ds.Warnings, ds.Notes)
		}
	}
}
