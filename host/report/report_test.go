package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
)

func TestPM(t *testing.T) {
	if got := PM(eval.Stat{Mean: 0.61324, SD: 0.00336, N: 5}); got != "0.6132 ± 0.0034" {
		t.Errorf("PM = %q", got)
	}
	if got := PM(eval.Stat{}); got != "n/a" {
		t.Errorf("PM of no splits = %q, want n/a", got)
	}
}

// TestRowLabels: with two explainers the rows are told apart by the
// explainer's label in the table, the Markdown and results.json.
func TestRowLabels(t *testing.T) {
	res := &engine.Results{Rows: []engine.Row{
		{Posterior: "posterior.ensemble", Explainer: "explainer.occlusion", Summary: "summary.mean", Label: "Ens", ExplainerLabel: "occ-w60", SummaryLabel: "mean"},
		{Posterior: "posterior.ensemble", Explainer: "explainer.occlusion", Summary: "summary.mean", Label: "Ens", ExplainerLabel: "occ-w20", SummaryLabel: "mean"},
	}}
	var b bytes.Buffer
	if err := Main(res).Render(&b, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Ens / occ-w60", "Ens / occ-w20", "RMA (disc-7)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	md, err := Markdown("x", []string{"a note"}, Main(res))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| Ens / occ-w20 |") || !strings.Contains(string(md), "- a note") {
		t.Errorf("markdown:\n%s", md)
	}
	j, err := ResultsJSON("x", 1, res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"label": "Ens / occ-w60"`) || !strings.Contains(string(j), `"label": "Ens / occ-w20"`) {
		t.Errorf("results.json does not tell the rows apart:\n%.600s", j)
	}
}

func TestRunDirAndWriteFile(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	a, err := NewRunDir(root, "r", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRunDir(root, "r", now)
	if err != nil || a == b || filepath.Base(a) != "r-20261122-050000" {
		t.Fatalf("run dirs %q, %q (%v)", a, b, err)
	}
	if err := WriteFile(a, "f.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(a, "f.json"))
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v", st.Mode().Perm(), err)
	}
	left, _ := filepath.Glob(filepath.Join(a, ".f.json.*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
