package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
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

// TestResultsJSONSchema: every key of results.json is snake_case, no key
// repeats in a case-insensitive way within an object, and the rows decode
// back into the engine's types unchanged.
func TestResultsJSONSchema(t *testing.T) {
	agg, err := eval.Aggregate([]eval.Score{
		{Split: 0, Class: 1, RMA: 0.5, IoU: 0.25, OK: true},
		{Split: 1, Class: 1, RMA: 0.7, IoU: 0.5, OK: true},
		{Split: 1, Class: 4, Why: eval.ZeroMass},
	}, []int{1, 4}, map[string][]int{"all": {1, 4}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	res := &engine.Results{Rows: []engine.Row{{
		Posterior: "posterior.ensemble", Explainer: "explainer.occlusion", Summary: "summary.mean",
		Label: "Ens", ExplainerLabel: "occlusion", SummaryLabel: "mean", Draws: 5,
		Accuracy: eval.StatOf([]float64{0.9, 0.95}), AccuracyBySplit: []float64{0.9, 0.95}, Agg: agg,
		Fit: map[string]string{"scale": "2.5", "delta": "100"},
	}}, Notes: []string{"n"}}
	j, err := ResultsJSON("x", 3, res)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			seen := map[string]string{}
			for k, x := range v {
				if !snake.MatchString(k) {
					t.Errorf("%s: key %q is not snake_case", path, k)
				}
				if o, ok := seen[strings.ToLower(k)]; ok {
					t.Errorf("%s: keys %q and %q differ only in case", path, k, o)
				}
				seen[strings.ToLower(k)] = k
				walk(path+"."+k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), x)
			}
		}
	}
	walk("$", doc)
	var back struct {
		Rows []engine.Row `json:"rows"`
	}
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != 1 || !reflect.DeepEqual(back.Rows[0], res.Rows[0]) {
		t.Errorf("rows do not round-trip:\n got %+v\nwant %+v", back.Rows, res.Rows)
	}
}
