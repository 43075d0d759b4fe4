package runner

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/internal/golden"
)

// TestThreePhaseQuick runs recipes/pqd_3phase_quick.toml (CI's run of the
// three-phase case study): a network of 3 input channels, its classes
// named by the generator in every table and record, masks per phase (a
// single-phase disturbance's mask lies in one phase), and the same bytes
// for one worker and two.
func TestThreePhaseQuick(t *testing.T) {
	skipUnlessHeavy(t)
	r, err := recipe.Load(filepath.Join(golden.RepoRoot(t), "recipes", "pqd_3phase_quick.toml"))
	if err != nil {
		t.Fatal(err)
	}
	arch, err := r.Arch()
	if err != nil {
		t.Fatal(err)
	}
	names := data.PQD3{}.Classes()
	if arch.InChannels != 3 || arch.InLen != 640 || arch.Classes() != len(names) {
		t.Fatalf("arch %d x %d, %d classes; want 3 x 640 and the generator's %d", arch.InChannels, arch.InLen, arch.Classes(), len(names))
	}
	m := inProcess(t)
	var results [2][]byte
	for i, workers := range []int{1, 2} {
		o, err := Run(context.Background(), r, Options{Plugins: m, Out: t.TempDir(), Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(o.Results.Rows), len(r.Posteriors)*len(r.Explainers)*len(r.Summaries); got != want {
			t.Errorf("%d rows, want %d", got, want)
		}
		results[i] = read(t, filepath.Join(o.Dir, "results.json"))
		if i > 0 {
			continue
		}
		recs := readCSV(t, filepath.Join(o.Dir, "records.csv"))
		col := map[string]int{}
		for j, h := range recs[0] {
			col[h] = j
		}
		single := map[string]bool{"slg_sag": true, "swell": true, "interruption": true, "impulsive_transient": true, "oscillatory_transient": true, "notch": true, "spike": true}
		seen := map[string]bool{}
		for _, rec := range recs[1:] {
			class := rec[col["class"]]
			label, _ := strconv.Atoi(rec[col["label"]])
			if label < 0 || label >= len(names) || names[label] != class {
				t.Fatalf("record %v: class %q of label %d, want the generator's names %v", rec, class, label, names)
			}
			n, _ := strconv.Atoi(rec[col["mask_len"]])
			if class == "normal" {
				if n != 0 || rec[col["scored"]] != "false" {
					t.Errorf("record %v: a normal record with a mask of %d samples, or scored", rec, n)
				}
				continue
			}
			seen[class] = true
			if n < 1 || n > 3*640 || single[class] && n > 640 {
				t.Errorf("record %v: a %s mask of %d samples (a single-phase disturbance lies in one phase of 640 samples)", rec, class, n)
			}
		}
		for c, n := range names {
			if n != "normal" && !seen[n] {
				t.Errorf("class %d %s never scored", c, n)
			}
		}
		tables := read(t, filepath.Join(o.Dir, "tables.md"))
		if !bytes.Contains(tables, []byte("Per-channel localisation")) {
			t.Fatalf("tables.md has no per-channel section:\n%s", tables)
		}
		if !regexp.MustCompile(`\|\s*slg_sag\s*\|`).Match(tables) || bytes.Contains(tables, []byte("disc-7")) {
			t.Errorf("tables.md lacks a slg_sag row or has disc-7 columns:\n%s", tables)
		}
		// The per-channel section names the phases (as columns) and the
		// generator's classes (sag_harmonics is a one-phase class only).
		sec := tables[bytes.Index(tables, []byte("Per-channel localisation")):]
		for _, want := range []string{"A RMA", "B IoU", "C RMA", "slg_sag", "ll_sag"} {
			if !regexp.MustCompile(`\|\s*` + want + `\s*\|`).Match(sec) {
				t.Errorf("the per-channel section lacks %q", want)
			}
		}
		if bytes.Contains(tables, []byte("sag_harmonics")) {
			t.Error("tables.md names the one-phase class sag_harmonics")
		}
		for _, class := range []string{"slg_sag", "ll_sag"} {
			figs, _ := filepath.Glob(filepath.Join(o.Dir, "figures", "qual-*-"+strings.ReplaceAll(class, "_", "-")+".png"))
			if len(figs) == 0 {
				figs, _ = filepath.Glob(filepath.Join(o.Dir, "figures", "qual-*"+class+"*.png"))
			}
			if len(figs) == 0 {
				t.Errorf("no qualitative figure of %s in %s/figures", class, o.Dir)
			}
		}
		if !slices.Contains(names, "slg_sag") {
			t.Fatalf("the generator's classes %v lack slg_sag", names)
		}
	}
	if !bytes.Equal(results[0], results[1]) {
		t.Error("results.json differs between 1 and 2 workers")
	}
}
