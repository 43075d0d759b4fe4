package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/store"
	"github.com/uaxai/uaxai/internal/golden"
)

// replicatedResults is what the tests read of a replicated run's
// results.json.
type replicatedResults struct {
	Rows []struct {
		Label    string    `json:"label"`
		Accuracy eval.Stat `json:"accuracy"`
		Agg      eval.Agg  `json:"scores"`
	} `json:"rows"`
	Replicates []struct {
		Replicate int    `json:"replicate"`
		Seed      uint64 `json:"seed"`
		Rows      []struct {
			Label    string            `json:"label"`
			Accuracy eval.Stat         `json:"accuracy"`
			Agg      eval.Agg          `json:"scores"`
			Fit      map[string]string `json:"fit"`
		} `json:"rows"`
	} `json:"replicates"`
}

func readReplicated(t *testing.T, dir string) replicatedResults {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out replicatedResults
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReplicatedRun: R = 3 replicates of the tiny recipe are 3 independent
// fits (distinct seeds, and distinct scores: other networks), replicate 0
// is the run without [replicates], byte for byte in its rows; a top-level
// row is every statistic over the replicates' means, recomputed here from
// the replicates' rows; and the run gives the same bytes for 1 and 2
// workers and in two shards.
func TestReplicatedRun(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m := inProcess(t)
	cache := store.Cache{Dir: filepath.Join(dir, "cache")}
	text := tinyRecipe(filepath.Join(dir, "runs"), "\n[replicates]\ncount = 3\n")
	r, err := recipe.Parse("tiny.toml", []byte(text), dir)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(ctx, r, Options{Plugins: m, Cache: cache, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := readReplicated(t, o.Dir)
	if len(got.Replicates) != 3 {
		t.Fatalf("%d replicates in results.json, want 3", len(got.Replicates))
	}
	seeds := map[uint64]bool{}
	for k, rep := range got.Replicates {
		if rep.Replicate != k || rep.Seed != r.Replicates.Seed(r.Seed, k) || seeds[rep.Seed] {
			t.Errorf("replicate %d: number %d, seed %d; want %d, its own seed %d", k, rep.Replicate, rep.Seed, k, r.Replicates.Seed(r.Seed, k))
		}
		seeds[rep.Seed] = true
		if len(rep.Rows) != len(got.Rows) {
			t.Fatalf("replicate %d has %d rows, the aggregate %d", k, len(rep.Rows), len(got.Rows))
		}
	}
	// R independent fits: each replicate's deterministic network and
	// ensemble members are cache entries of their own (3 x (1 + 2)), no two
	// with the same parameters.
	entries, _ := filepath.Glob(filepath.Join(dir, "cache", "posteriors", "*.safetensors"))
	sums := map[[32]byte]string{}
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		if other, dup := sums[h]; dup {
			t.Errorf("cache entries %s and %s hold the same fit", filepath.Base(other), filepath.Base(e))
		}
		sums[h] = e
	}
	if len(entries) != 3*(1+2) {
		t.Errorf("%d cache entries, want 9: a deterministic network and 2 members in each of 3 replicates", len(entries))
	}
	// Other networks: the deterministic row's scores differ between
	// every two replicates.
	for a := range 3 {
		for b := a + 1; b < 3; b++ {
			ia, ib := got.Replicates[a].Rows[0].Agg.Groups[0].IoU.Mean, got.Replicates[b].Rows[0].Agg.Groups[0].IoU.Mean
			if ia == ib {
				t.Errorf("replicates %d and %d have the same IoU %v: the same networks", a, b, ia)
			}
		}
	}
	// The aggregate, recomputed from the replicates' rows.
	for i, row := range got.Rows {
		for gi, g := range row.Agg.Groups {
			var ms []float64
			for _, rep := range got.Replicates {
				ms = append(ms, rep.Rows[i].Agg.Groups[gi].IoU.Mean)
			}
			mean := (ms[0] + ms[1] + ms[2]) / 3
			var ss float64
			for _, v := range ms {
				ss += (v - mean) * (v - mean)
			}
			sd := math.Sqrt(ss / 2)
			if math.Abs(g.IoU.Mean-mean) > 1e-12 || math.Abs(g.IoU.SD-sd) > 1e-12 || g.IoU.N != 3 {
				t.Errorf("%s %s: IoU %+v; want mean %v sd %v over 3 replicates", row.Label, g.Name, g.IoU, mean, sd)
			}
			for s, gs := range g.Splits {
				var want float64
				for _, rep := range got.Replicates {
					want += rep.Rows[i].Agg.Groups[gi].Splits[s].IoU / 3
				}
				if math.Abs(gs.IoU-want) > 1e-12 {
					t.Errorf("%s %s split %d: IoU %v, want the replicates' mean %v", row.Label, g.Name, s, gs.IoU, want)
				}
			}
		}
		var acc float64
		for _, rep := range got.Replicates {
			acc += rep.Rows[i].Accuracy.Mean / 3
		}
		if math.Abs(row.Accuracy.Mean-acc) > 1e-12 || row.Accuracy.N != 3 {
			t.Errorf("%s: accuracy %+v, want mean %v over 3", row.Label, row.Accuracy, acc)
		}
	}
	// Replicate 0 is the recipe without [replicates].
	plainR, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), "")), dir)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Run(ctx, plainR, Options{Plugins: m, Cache: cache, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := os.ReadFile(filepath.Join(plain.Dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Rows []json.RawMessage `json:"rows"`
	}
	var g struct {
		Replicates []struct {
			Rows []json.RawMessage `json:"rows"`
		} `json:"replicates"`
	}
	rb, _ := os.ReadFile(filepath.Join(o.Dir, "results.json"))
	if json.Unmarshal(pb, &p) != nil || json.Unmarshal(rb, &g) != nil || len(p.Rows) != len(g.Replicates[0].Rows) {
		t.Fatal("results.json does not read back")
	}
	for i := range p.Rows {
		if compact(t, p.Rows[i]) != compact(t, g.Replicates[0].Rows[i]) {
			t.Errorf("row %d: replicate 0 differs from the run without [replicates]:\n%s\n%s", i, p.Rows[i], g.Replicates[0].Rows[i])
		}
	}
	// The same bytes for 2 workers, and in two shards.
	two, err := Run(ctx, r, Options{Plugins: m, Cache: cache, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "2 workers", two.Dir, o.Dir)
	run := filepath.Join(dir, "sharded")
	for i := range 2 {
		sh := engine.Shard{I: i, N: 2}
		if _, err := Run(ctx, r, Options{Plugins: m, Cache: cache, RunDir: run, Shard: &sh, Workers: 1}); err != nil {
			t.Fatal(err)
		}
	}
	merged, err := Merge(ctx, run, Options{Plugins: m})
	if err != nil {
		t.Fatal(err)
	}
	sameFiles(t, "sharded", merged.Dir, o.Dir)
	md, err := os.ReadFile(filepath.Join(o.Dir, "tables.md"))
	if err != nil || !strings.Contains(string(md), "mean ± sd over 3 replicates' means over the test splits") {
		t.Errorf("tables.md does not say its sd is over the replicates: %v", err)
	}
	for _, title := range []string{"Localisation across 3 training-seed replicates", "Paired IoU differences within each replicate, then across the 3 replicates", "Variance of IoU between training seeds and between test splits"} {
		if !strings.Contains(string(md), title) {
			t.Errorf("tables.md has no table %q", title)
		}
	}
	pairs := checkReplicateStats(t, rb, got)
	// A forest plot a pair, each a PNG (its content is host/figure's to test).
	figs, _ := filepath.Glob(filepath.Join(o.Dir, "figures", "replicates-*.png"))
	if len(figs) != pairs {
		t.Errorf("%d replicate figures, want one for each of the %d pairs: %v", len(figs), pairs, figs)
	}
	for _, f := range figs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(b)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if !strings.Contains(string(md), "figures/"+filepath.Base(f)) {
			t.Errorf("tables.md does not name %s", filepath.Base(f))
		}
	}
}

// checkReplicateStats recomputes results.json's replicate_stats pairs from
// its replicates' rows: the ensemble minus the deterministic network, each
// replicate's mean difference over the splits, their mean, and the
// replicates up.
func checkReplicateStats(t *testing.T, raw []byte, got replicatedResults) int {
	t.Helper()
	var doc struct {
		Stats struct {
			Pairs []struct {
				Label string                `json:"label"`
				Group string                `json:"group"`
				IoU   eval.PairedReplicates `json:"iou"`
			} `json:"pairs"`
			Methods []struct {
				Label  string `json:"label"`
				Groups []struct {
					Group string                `json:"group"`
					IoU   eval.ReplicateSummary `json:"iou"`
				} `json:"groups"`
			} `json:"methods"`
		} `json:"replicate_stats"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Stats.Methods) != len(got.Rows) {
		t.Fatalf("%d methods in replicate_stats, %d rows", len(doc.Stats.Methods), len(got.Rows))
	}
	// The tiny recipe's rows: Deterministic (mean, variance), Ensemble
	// (mean, variance); the pairs are Ensemble - Deterministic per
	// summary and group.
	want := 0
	for i, row := range got.Rows {
		for k := range i {
			if got.Rows[k].Label == row.Label || !strings.HasPrefix(row.Label, "Ensemble") || !strings.HasPrefix(got.Rows[k].Label, "Deterministic") ||
				strings.TrimPrefix(row.Label, "Ensemble") != strings.TrimPrefix(got.Rows[k].Label, "Deterministic") {
				continue
			}
			for gi, g := range row.Agg.Groups {
				p := doc.Stats.Pairs[want]
				want++
				if p.Group != g.Name || !strings.HasPrefix(p.Label, "Ensemble − Deterministic") {
					t.Fatalf("pair %d is %s %s; want Ensemble − Deterministic, %s", want-1, p.Label, p.Group, g.Name)
				}
				var ds []float64
				up := 0
				for r, rep := range got.Replicates {
					a, b := rep.Rows[i].Agg.Groups[gi].Splits, rep.Rows[k].Agg.Groups[gi].Splits
					var d float64
					for s := range a {
						d += (a[s].IoU - b[s].IoU) / float64(len(a))
					}
					ds = append(ds, d)
					if d > 0 {
						up++
					}
					if math.Abs(p.IoU.PerReplicate[r].Mean-d) > 1e-12 {
						t.Errorf("%s %s replicate %d: difference %v, want %v", p.Label, p.Group, r, p.IoU.PerReplicate[r].Mean, d)
					}
				}
				mean := (ds[0] + ds[1] + ds[2]) / 3
				if math.Abs(p.IoU.Across.Mean-mean) > 1e-12 || p.IoU.Positive != up || !p.IoU.Across.Defined || p.IoU.Across.N != 3 {
					t.Errorf("%s %s: across %+v, %d up; want mean %v, %d up, over 3 replicates", p.Label, p.Group, p.IoU.Across, p.IoU.Positive, mean, up)
				}
			}
		}
	}
	if want == 0 || want != len(doc.Stats.Pairs) {
		t.Errorf("%d pairs in replicate_stats, want %d (and some)", len(doc.Stats.Pairs), want)
	}
	for i, m := range doc.Stats.Methods {
		for gi, g := range m.Groups {
			if math.Abs(g.IoU.Across.Mean-got.Rows[i].Agg.Groups[gi].IoU.Mean) > 1e-12 {
				t.Errorf("%s %s: across-replicate IoU %v, the aggregate row's %v", m.Label, g.Group, g.IoU.Across.Mean, got.Rows[i].Agg.Groups[gi].IoU.Mean)
			}
		}
	}
	return len(doc.Stats.Pairs)
}

// compact is a JSON value without its layout.
func compact(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestResampledSplits: with resample_splits each replicate after the
// first is explained and scored on test splits of its own: against the
// same recipe without it, replicate 0's rows are the same bytes and
// replicate 1's differ (the same networks, from the cache, on other
// data); the run gives the same bytes for 1 and 2 workers.
func TestResampledSplits(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m := inProcess(t)
	cache := store.Cache{Dir: filepath.Join(dir, "cache")}
	rows := func(extra string, workers int) (string, [][]json.RawMessage) {
		r, err := recipe.Parse("tiny.toml", []byte(tinyRecipe(filepath.Join(dir, "runs"), "\n[replicates]\ncount = 2\n"+extra)), dir)
		if err != nil {
			t.Fatal(err)
		}
		o, err := Run(ctx, r, Options{Plugins: m, Cache: cache, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(o.Dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Replicates []struct {
				Rows []json.RawMessage `json:"rows"`
			} `json:"replicates"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || len(doc.Replicates) != 2 {
			t.Fatalf("results.json: %v, %d replicates", err, len(doc.Replicates))
		}
		return o.Dir, [][]json.RawMessage{doc.Replicates[0].Rows, doc.Replicates[1].Rows}
	}
	_, fixed := rows("", 1)
	resDir, res := rows("resample_splits = true\n", 1)
	for i := range fixed[0] {
		if compact(t, fixed[0][i]) != compact(t, res[0][i]) {
			t.Errorf("replicate 0, row %d: resample_splits changed it", i)
		}
	}
	for i := range fixed[1] {
		if compact(t, fixed[1][i]) == compact(t, res[1][i]) {
			t.Errorf("replicate 1, row %d: the same with and without resample_splits: its splits were not drawn anew", i)
		}
	}
	twoDir, _ := rows("resample_splits = true\n", 2)
	sameFiles(t, "resampled, 2 workers", twoDir, resDir)
}

// TestReplicatesRefusedBeforeTheRun: [replicates] over a posterior that
// trains nothing of its own (posterior.files) is refused by the recipe's
// check, naming [replicates] count and the posterior, before anything
// runs; the same recipe of one replicate passes.
func TestReplicatesRefusedBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	w := filepath.Join(golden.Dir(t, "paper-1dcnn"), "model.safetensors")
	src := func(count int) string {
		return tinyRecipe(filepath.Join(dir, "runs"), "") + fmt.Sprintf("\n[[posterior]]\nuse = \"files\"\nlabel = \"Files\"\nweights = %q\n\n[replicates]\ncount = %d\n", w, count)
	}
	for _, count := range []int{1, 2} {
		r, err := recipe.Parse("rep.toml", []byte(src(count)), dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = CheckStatic(context.Background(), r, inProcess(t))
		if count == 1 && err != nil && strings.Contains(err.Error(), "replicates") {
			t.Errorf("one replicate: %v", err)
		}
		if count == 2 && (err == nil || !strings.Contains(err.Error(), "[[posterior]] #3 uses posterior.files") || !strings.Contains(err.Error(), "2 replicates")) {
			t.Errorf("two replicates over posterior.files: %v; want the check to refuse it, naming the posterior", err)
		}
	}
}
