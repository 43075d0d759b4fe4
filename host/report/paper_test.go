package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/paper"
)

// rowWith aggregates two splits in which every record of class c has IoU
// base+c/100 (split 0) and base+c/100+0.02 (split 1), RMA half of it.
func rowWith(t *testing.T, post, exp, sum, sumLabel string, base float64) engine.Row {
	t.Helper()
	var scores []eval.Score
	classes := []int{}
	for c := 1; c < data.NumClasses; c++ {
		classes = append(classes, c)
		for s := range 2 {
			v := base + float64(c)/100 + 0.02*float64(s)
			scores = append(scores, eval.Score{Split: s, Class: c, RMA: v / 2, IoU: v, OK: true})
		}
	}
	agg, err := eval.Aggregate(scores, classes, eval.PaperGroups(), 2)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Row{Posterior: post, Explainer: exp, Summary: sum, Label: post, ExplainerLabel: exp, SummaryLabel: sumLabel,
		Agg: agg, Accuracy: eval.StatOf([]float64{0.9, 0.92})}
}

func TestPaperTableAggregate(t *testing.T) {
	res := &engine.Results{Rows: []engine.Row{
		rowWith(t, "posterior.deterministic", "explainer.occlusion", "summary.mean", "mean", 0.1),
		rowWith(t, "posterior.ensemble", "explainer.occlusion", "summary.mean", "mean", 0.2),
		rowWith(t, "posterior.mine", "explainer.occlusion", "summary.mean", "mean", 0.3),
	}}
	tb, err := PaperTable(res, "tab:bnn_results")
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Rows) != 6 || len(tb.Header) != 6 {
		t.Fatalf("%d rows, header %v", len(tb.Rows), tb.Header)
	}
	// Ours: the disc-7 IoU is the mean over the splits of the macro of the
	// seven classes' values.
	d7 := 0.0
	for _, c := range []int{1, 2, 3, 4, 5, 8, 9} {
		d7 += 0.2 + float64(c)/100 + 0.01
	}
	d7 /= 7
	if got, want := tb.Rows[2][5], fmt.Sprintf("%.4f ± %.4f", d7, eval.StatOf([]float64{d7 - 0.01, d7 + 0.01}).SD); got != want {
		t.Errorf("ensemble disc-7 IoU %q, want %q", got, want)
	}
	// The paper's row under ours, for the same method; none for a method
	// the paper does not have.
	if got := tb.Rows[3]; got[0] != "  (paper)" || got[1] != "0.9813 ± 0.0023" || got[5] != "0.2985 ± 0.0092" {
		t.Errorf("ensemble's paper row %v", got)
	}
	if got := tb.Rows[1]; got[5] != "0.2565 ± 0.0082" {
		t.Errorf("deterministic paper row %v", got)
	}
	if got := tb.Rows[5]; got[1] != "n/a" || got[5] != "n/a" {
		t.Errorf("unknown method's paper row %v", got)
	}
	if _, err := PaperTable(res, "tab:sensitivity"); err == nil {
		t.Error("tab:sensitivity is not a row table")
	}
}

func TestPaperTablePerClassAndQuantiles(t *testing.T) {
	res := &engine.Results{Rows: []engine.Row{
		rowWith(t, "posterior.ensemble", "explainer.occlusion", "summary.mean", "Mean", 0.1),
		rowWith(t, "posterior.ensemble", "explainer.occlusion", "summary.quantile", "5% quantile", 0.2),
		rowWith(t, "posterior.ensemble", "explainer.occlusion", "summary.quantile", "my quantile", 0.3),
	}}
	tb, err := PaperTable(res, "tab:perclass_uarao")
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Rows) != 15 || len(tb.Header) != 4 {
		t.Fatalf("%d rows, header %v", len(tb.Rows), tb.Header)
	}
	var swell []string
	for _, r := range tb.Rows {
		if r[0] == "Swell" {
			swell = r
		}
	}
	sw := 0.1 + 2.0/100 + 0.01
	want := []string{"Swell", fmt.Sprintf("%.3f ± %.3f (0.773 ± 0.010)", sw, 0.02/2*1.4142135623730951),
		fmt.Sprintf("%.3f ± %.3f (0.765 ± 0.012)", sw+0.1, 0.014142135623730951), fmt.Sprintf("%.3f ± %.3f", sw+0.2, 0.014142135623730951)}
	if strings.Join(swell, "|") != strings.Join(want, "|") {
		t.Errorf("swell row %q, want %q", swell, want)
	}
	if MethodKey("tab:uarao_results", res.Rows[1]) != "q05" || MethodKey("tab:uarao_results", res.Rows[2]) != "" {
		t.Error("quantile rows are matched by their label")
	}
}

// TestPerClassBarsHTML: the per-class chart of report.html carries the
// paper's values of a named per-class table as markers: each a value of
// the paper's table for the row's method and the class (paper.Lookup),
// drawn with its value in the SVG; without a table, none.
func TestPerClassBarsHTML(t *testing.T) {
	res := &engine.Results{Rows: []engine.Row{rowWith(t, "posterior.ensemble", "explainer.occlusion", "summary.mean", "", 0.3)}}
	tab, err := paper.Lookup("tab:perclass_bnn")
	if err != nil {
		t.Fatal(err)
	}
	b, err := PerClassIoUBars(res, "tab:perclass_bnn")
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for ci, name := range b.Classes {
		want, ok := tab.Cell([]string{name}, MethodKey("tab:perclass_bnn", res.Rows[0]))
		if ok != !math.IsNaN(b.Paper[0][ci]) || ok && want.Mean != b.Paper[0][ci] {
			t.Errorf("class %s: marker %v, the paper's %v (%v)", name, b.Paper[0][ci], want.Mean, ok)
		}
		if ok {
			marked++
		}
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, HTML{Title: "t", Bars: b}); err != nil {
		t.Fatal(err)
	}
	if marked == 0 || strings.Count(buf.String(), "<title>the paper: ") != marked {
		t.Errorf("%d markers in the SVG, want %d", strings.Count(buf.String(), "<title>the paper: "), marked)
	}
	none, err := PerClassIoUBars(res, PerClassPaperTable([]string{"tab:bnn_results"}))
	if err != nil || none.Paper != nil {
		t.Errorf("without a per-class table: markers %v (%v)", none.Paper, err)
	}
}
