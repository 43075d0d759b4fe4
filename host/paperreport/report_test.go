package paperreport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRewritePaperReportOrder: the sections of a report written again are
// in the paper's order, whatever the start times in the manifests say
// (the same second for all, or the reverse order), as Paper wrote them.
// It was the start times, of one-second resolution, that made the report
// of two quick recipes started in the same second come out in another
// order.
func TestRewritePaperReportOrder(t *testing.T) {
	recipes := []string{"/r/bnn_results.toml", "/r/xai_results.toml", "/r/sensitivity.toml", "/r/zz_extra.toml", "/r/aa_extra.toml"}
	// The order Paper runs them in: Order, then the others by name
	// (the headline variants, last, are TestPaperRecipesOrder's).
	want := []string{"bnn_results", "xai_results", "sensitivity", "aa_extra", "zz_extra"}
	for _, starts := range map[string][]string{
		"same second": {"2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		"reversed":    {"2026-01-01T00:00:09Z", "2026-01-01T00:00:08Z", "2026-01-01T00:00:07Z", "2026-01-01T00:00:06Z", "2026-01-01T00:00:05Z"},
	} {
		dir := t.TempDir()
		// Directory names in the reverse of the paper's order, so that
		// neither the glob's order nor the times can give the right one.
		for i, r := range recipes {
			name := strings.TrimSuffix(filepath.Base(r), ".toml")
			rd := filepath.Join(dir, string(rune('z'-i))+"-"+name)
			if err := os.MkdirAll(rd, 0o755); err != nil {
				t.Fatal(err)
			}
			man, _ := json.Marshal(map[string]any{"recipe": name, "recipe_path": r, "started": starts[i], "status": "complete", "wall_s": 1.5})
			if err := os.WriteFile(filepath.Join(rd, "manifest.json"), man, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		po, err := Rewrite(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range po.Parts {
			got = append(got, p.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("parts %v, want %v", got, want)
		}
		rep, err := os.ReadFile(filepath.Join(dir, "REPORT.md"))
		if err != nil {
			t.Fatal(err)
		}
		var sections []string
		for _, l := range strings.Split(string(rep), "\n") {
			if s, ok := strings.CutPrefix(l, "## "); ok {
				sections = append(sections, s)
			}
		}
		if !slices.Equal(sections, want) {
			t.Errorf("sections %v, want %v", sections, want)
		}
	}
}

// TestPaperRecipesOrder: Recipes lists a folder's recipes in the
// order compareOrder gives.
func TestPaperRecipesOrder(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"zz.toml", "headline/b.toml", "calibration.toml", "headline/a.toml", "bnn_results.toml", "aa.toml"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Recipes(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i], _ = filepath.Rel(dir, got[i])
	}
	want := []string{"bnn_results.toml", "calibration.toml", "aa.toml", "zz.toml", "headline/a.toml", "headline/b.toml"}
	if !slices.Equal(got, want) {
		t.Errorf("Recipes %v, want %v", got, want)
	}
}
