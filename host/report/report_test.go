package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk"
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
	if err != nil || a == b || filepath.Base(a) != "r-20261122-050000" || filepath.Base(b) != "r-20261122-050000-2" {
		t.Fatalf("run dirs %q, %q (%v)", a, b, err)
	}
	if c, err := NewRunDir(root, "r", now); err != nil || filepath.Base(c) != "r-20261122-050000-3" {
		t.Fatalf("third run dir %q (%v), want suffix -3", c, err)
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

// TestOutputCSV: a set's line holds its size and its 0/1 values, a band's
// two lines read back to the very float64 values; bad outputs are errors.
func TestOutputCSV(t *testing.T) {
	vals := []float64{0.1, -1.0 / 3, math.SmallestNonzeroFloat64, 1e300, -0.0, math.Pi}
	up := make([]float64, len(vals))
	for i, v := range vals {
		up[i] = math.Nextafter(v, math.Inf(1))
	}
	band := &engine.Output{Summary: "summary.iband", Kind: sdk.OutputBand, N: len(vals), Records: []engine.OutputRecord{
		{Split: 1, Index: 7, Label: 3, Target: 3, Pred: 4, MaskLen: 12, Lower: vals, Upper: up}}}
	b, err := OutputCSV(band, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || strings.Join(lines[0][:8], ",") != "split,record,label,class,target,predicted,mask_len,bound" || lines[0][8] != "v0" || lines[0][13] != "v5" {
		t.Fatalf("band CSV %q", lines)
	}
	for k, want := range [][]float64{vals, up} {
		l := lines[k+1]
		if strings.Join(l[:8], ",") != fmt.Sprintf("b,7,3,%s,3,4,12,%s", data.ClassName(3), []string{"lower", "upper"}[k]) {
			t.Errorf("band line %d: %q", k+2, l[:8])
		}
		for n, w := range want {
			if v, err := strconv.ParseFloat(l[8+n], 64); err != nil || math.Float64bits(v) != math.Float64bits(w) {
				t.Errorf("band line %d value %d: %q reads as %v, want %v", k+2, n, l[8+n], v, w)
			}
		}
	}
	set := &engine.Output{Summary: "summary.agreement", Kind: sdk.OutputSet, N: 4, Records: []engine.OutputRecord{
		{Split: 0, Index: 2, Label: 5, Target: 5, Pred: 5, MaskLen: 2, Set: []bool{false, true, true, false}},
		{Split: 0, Index: 3, Label: 5, Target: 5, Pred: 6, MaskLen: 1, Set: []bool{false, false, false, false}}}}
	if b, err = OutputCSV(set, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	c5 := data.ClassName(5)
	want := "split,record,label,class,target,predicted,mask_len,size,v0,v1,v2,v3\n" +
		"a,2,5," + c5 + ",5,5,2,2,0,1,1,0\n" + "a,3,5," + c5 + ",5,6,1,0,0,0,0,0\n"
	if string(b) != want {
		t.Errorf("set CSV\n%s\nwant\n%s", b, want)
	}
	for _, c := range []struct {
		name string
		o    engine.Output
		want string
	}{
		{"map", engine.Output{Summary: "summary.mean", Kind: sdk.OutputMap}, `summary.mean: output kind "map" (want set or band)`},
		{"short set", engine.Output{Summary: "s", Kind: sdk.OutputSet, N: 3, Records: []engine.OutputRecord{{Index: 4, Set: []bool{true}}}}, "s: split a record 4: a set of 1 values, want 3"},
		{"short upper", engine.Output{Summary: "s", Kind: sdk.OutputBand, N: 1, Records: []engine.OutputRecord{{Lower: []float64{1}}}}, "s: split a record 0: its upper bound has 0 values, want 1"},
		{"split", engine.Output{Summary: "s", Kind: sdk.OutputSet, Records: []engine.OutputRecord{{Split: 1, Index: 2}}}, "s: record 2 of split 1, of 1 splits"},
	} {
		if _, err := OutputCSV(&c.o, []string{"a"}); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestOutputFile(t *testing.T) {
	for _, c := range []struct {
		i       int
		p, e, s string
		want    string
	}{
		{1, "Deep ensemble", "explainer.occlusion", "Band (k=1, l=4)", "outputs/01-deep-ensemble_explainer-occlusion_band-k-1-l-4.csv"},
		{12, "  MC--dropout ", "Grad-CAM", "summary.iband", "outputs/12-mc-dropout_grad-cam_summary-iband.csv"},
		{3, "…", "ÄÖ", strings.Repeat("ab", 30), "outputs/03-x_x_" + strings.Repeat("ab", 20) + ".csv"},
		{4, "z0", "9a", "`{/:@[", "outputs/04-z0_9a_x.csv"}, // the ends of the ranges and their neighbours
	} {
		if got := OutputFile(c.i, &engine.Output{Label: c.p, ExplainerLabel: c.e, SummaryLabel: c.s}); got != c.want {
			t.Errorf("OutputFile(%d, %q, %q, %q) = %q, want %q", c.i, c.p, c.e, c.s, got, c.want)
		}
	}
}

// TestOutputsInResultsJSON: results.json lists the outputs as the engine
// gives them, and an empty list when there are none; tables.md has a
// Notes section only when there are notes.
func TestOutputsInResultsJSON(t *testing.T) {
	o := engine.Output{Posterior: "posterior.ensemble", Summary: "summary.iband", Kind: sdk.OutputBand, Draws: 5, N: 640, Count: 3, File: "outputs/01-x.csv"}
	for _, c := range []struct {
		outs []engine.Output
		want string
	}{
		{nil, `"outputs": []`},
		{[]engine.Output{o}, `"file": "outputs/01-x.csv"`},
	} {
		b, err := ResultsJSON("r", 1, &engine.Results{Outputs: c.outs})
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Outputs []engine.Output `json:"outputs"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) || len(doc.Outputs) != len(c.outs) || len(c.outs) > 0 && !reflect.DeepEqual(doc.Outputs[0], o) {
			t.Errorf("results.json with %d outputs:\n%s", len(c.outs), b)
		}
	}
	for _, notes := range [][]string{nil, {"n1"}} {
		md, err := Markdown("x", notes)
		if err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(string(md), "## Notes"); has != (len(notes) > 0) {
			t.Errorf("%d notes: tables.md %q", len(notes), md)
		}
	}
}

func TestResultsJSONSections(t *testing.T) {
	b, err := ResultsJSON("r", 1, &engine.Results{}, Section{"predictive", map[string]any{"nll": 0.5}}, Section{"skipped", nil}, Section{"analysis", []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if _, ok := doc["skipped"]; ok {
		t.Error("a nil section was written")
	}
	if doc["predictive"].(map[string]any)["nll"] != 0.5 || len(doc["analysis"].([]any)) != 2 || doc["recipe"] != "r" {
		t.Errorf("sections: %s", b)
	}
	if i, j := bytes.Index(b, []byte(`"notes"`)), bytes.Index(b, []byte(`"predictive"`)); i < 0 || j < i || bytes.Index(b, []byte(`"analysis"`)) < j {
		t.Errorf("sections not after notes, in order:\n%s", b)
	}
}

// TestMainGroups: the disc-7 columns are the one-phase PQD's; rows of
// other data, scored in group "all" only, leave them out, and the class
// names of the data name the per-class rows and records.csv.
func TestMainGroups(t *testing.T) {
	row := func(groups ...string) engine.Row {
		r := engine.Row{Posterior: "posterior.ensemble", Explainer: "explainer.occlusion", Summary: "summary.mean", Label: "Ens"}
		for _, g := range groups {
			r.Agg.Groups = append(r.Agg.Groups, eval.GroupAgg{Name: g, RMA: eval.Stat{Mean: 0.5, N: 1}})
		}
		r.Agg.Classes = []eval.ClassAgg{{Class: 1}}
		r.Records = []engine.Record{{Split: 0, Index: 0, Label: 1}}
		return r
	}
	for _, c := range []struct {
		groups []string
		cols   int
	}{{[]string{"all", "disc-7"}, 6}, {[]string{"all"}, 4}} {
		tab := Main(&engine.Results{Rows: []engine.Row{row(c.groups...)}})
		if len(tab.Header) != c.cols || len(tab.Rows[0]) != c.cols {
			t.Errorf("groups %v: header %q, row %q; want %d columns", c.groups, tab.Header, tab.Rows[0], c.cols)
		}
	}
	names := []string{"normal", "slg_sag"}
	res := &engine.Results{Rows: []engine.Row{row("all")}, ClassNames: names}
	if got := PerClass(res).Rows[0][0]; got != "slg_sag" {
		t.Errorf("per-class row of class 1 named %q, want the data's slg_sag", got)
	}
	b, err := RecordsCSV(res, []string{"test-0"})
	if err != nil || !strings.Contains(string(b), ",1,slg_sag,") {
		t.Errorf("records.csv %q (%v) lacks the data's class name", b, err)
	}
	if got := PerClass(&engine.Results{Rows: []engine.Row{row("all")}}).Rows[0][0]; got != data.ClassName(1) {
		t.Errorf("without names, class 1 is %q, want the one-phase PQD's %q", got, data.ClassName(1))
	}
	if got := ClassName(names, 5); got != "class(5)" {
		t.Errorf("ClassName out of range = %q", got)
	}
}

// TestTableCellsEscaped: a name from an input file that holds a line
// break, a '|' or an escape sequence stays in its cell: every row of the
// Markdown table is one line with as many unescaped '|' as the header's,
// and the terminal's table holds no control character.
func TestTableCellsEscaped(t *testing.T) {
	tb := Table{Title: "t\nx", Header: []string{"Class", "IoU"}, Rows: [][]string{
		{"sag\n| evil | row |", "0.5"}, {"a|b\x1b[2J", "0.25"}, {"plain", "1"},
	}}
	var md bytes.Buffer
	if err := tb.Render(&md, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(md.String(), "\n"), "\n")
	if len(lines) != 2+len(tb.Rows) {
		t.Fatalf("markdown table has %d lines, want %d (header, rule, a line a row):\n%s", len(lines), 2+len(tb.Rows), md.String())
	}
	bars := func(l string) int { return strings.Count(l, "|") - strings.Count(l, `\|`) }
	for i, l := range lines {
		if bars(l) != bars(lines[0]) {
			t.Errorf("markdown line %d %q has %d cell borders, the header %d", i, l, bars(l), bars(lines[0]))
		}
	}
	if !strings.Contains(md.String(), `a\|b\x1b[2J`) {
		t.Errorf("markdown lacks the escaped cell a\\|b\\x1b[2J:\n%s", md.String())
	}
	var term bytes.Buffer
	if err := tb.Render(&term, false); err != nil {
		t.Fatal(err)
	}
	for _, r := range term.String() {
		if r < 0x20 && r != '\n' || r == 0x7f {
			t.Fatalf("terminal table holds control character %U:\n%s", r, term.String())
		}
	}
	if !strings.Contains(term.String(), `sag\n| evil | row |`) {
		t.Errorf("terminal table does not hold the escaped cell:\n%s", term.String())
	}
	doc, err := Markdown("title\nrow", []string{"note\n# heading"}, tb)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "# heading") || l == "row" || l == "x" {
			t.Errorf("a title or note's line break made line %q:\n%s", l, doc)
		}
	}
}

// TestPMOneSplit: a statistic over one split has no standard deviation:
// "mean ± n/a"; over none, "n/a"; over two or more, mean ± sd.
func TestPMOneSplit(t *testing.T) {
	for _, c := range []struct {
		xs      []float64
		pm, pm3 string
	}{
		{nil, "n/a", "n/a"},
		{[]float64{0.25}, "0.2500 ± n/a", "0.250 ± n/a"},
		{[]float64{0.25, 0.75}, fmt.Sprintf("0.5000 ± %.4f", eval.StatOf([]float64{0.25, 0.75}).SD), fmt.Sprintf("0.500 ± %.3f", eval.StatOf([]float64{0.25, 0.75}).SD)},
	} {
		s := eval.StatOf(c.xs)
		if got := PM(s); got != c.pm {
			t.Errorf("PM of %v: %q, want %q", c.xs, got, c.pm)
		}
		if got := PM3(s); got != c.pm3 {
			t.Errorf("PM3 of %v: %q, want %q", c.xs, got, c.pm3)
		}
	}
}
