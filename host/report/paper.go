package report

import (
	"fmt"
	"strings"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/paper"
)

// paperLayouts says, for each of the paper's aggregate and per-class
// tables, which step of a row names its method, and the columns.
var paperLayouts = map[string]struct {
	title string
	by    string // "posterior", "explainer" or "summary"
	cols  []string
}{
	"tab:bnn_results":    {"tab:bnn_results: deterministic and Bayesian occlusion explanations, mean UA-RAO", "posterior", []string{"Accuracy", "RMA", "IoU", "RMA (disc-7)", "IoU (disc-7)"}},
	"tab:xai_results":    {"tab:xai_results: attribution operators with the deep ensemble and the mean UA-RAO", "explainer", []string{"RMA", "IoU", "RMA (disc-7)", "IoU (disc-7)"}},
	"tab:uarao_results":  {"tab:uarao_results: UA-RAO summaries with the deep ensemble and occlusion", "summary", []string{"RMA", "IoU", "RMA (disc-7)", "IoU (disc-7)"}},
	"tab:perclass_bnn":   {"tab:perclass_bnn: per-class IoU, deterministic and Bayesian occlusion", "posterior", nil},
	"tab:perclass_xai":   {"tab:perclass_xai: per-class IoU of the attribution operators, deep ensemble, mean UA-RAO", "explainer", nil},
	"tab:perclass_uarao": {"tab:perclass_uarao: per-class IoU of the UA-RAO summaries, deep ensemble occlusion", "summary", nil},
}

// IsRowTable reports whether the paper's table id is drawn from a run's
// rows (PaperTable); the others come from host/analysis.
func IsRowTable(id string) bool { _, ok := paperLayouts[id]; return ok }

// MethodKey is the paper's method key (package paper) of a row, as the
// table id reads it: its posterior, explainer or summary; a quantile
// summary by its label ("5% quantile"). "" if it is none of the paper's.
func MethodKey(id string, r engine.Row) string {
	switch paperLayouts[id].by {
	case "posterior":
		return paper.Method(r.Posterior)
	case "explainer":
		return paper.Method(r.Explainer)
	case "summary":
		if k := paper.Method(r.Summary); k != "" {
			return k
		}
		return paper.Method(r.SummaryLabel)
	}
	return ""
}

// PaperTable lays a run's rows out as the paper's table id, with the
// paper's value beside each of ours: an aggregate table has a row of ours
// and, under it, the paper's row for the same method ("(paper)"); a
// per-class table has a row a class and a column a method, each cell
// "ours (paper)". A row of ours that is not one of the paper's methods
// keeps its row with "n/a" for the paper.
func PaperTable(res *engine.Results, id string) (Table, error) {
	lay, ok := paperLayouts[id]
	if !ok {
		return Table{}, fmt.Errorf("%s is not a table of a run's rows", id)
	}
	pt, err := paper.Lookup(id)
	if err != nil {
		return Table{}, err
	}
	t := Table{Title: lay.title + " (ours, and the paper's value)"}
	if lay.cols != nil {
		t.Header = append([]string{"Method"}, lay.cols...)
		for _, r := range res.Rows {
			ours := []string{RowLabel(res, r)}
			theirs := []string{"  (paper)"}
			key := MethodKey(id, r)
			for _, c := range lay.cols {
				ours = append(ours, PM(rowStat(r, c)))
				v, ok := pt.Cell([]string{key}, c)
				if key == "" || !ok {
					theirs = append(theirs, "n/a")
					continue
				}
				theirs = append(theirs, v.Text)
			}
			t.Rows = append(t.Rows, ours, theirs)
		}
		return t, nil
	}
	t.Header = []string{"Disturbance"}
	for _, r := range res.Rows {
		t.Header = append(t.Header, RowLabel(res, r))
	}
	for _, prow := range pt.Rows {
		cls := paper.Class(prow[0])
		ci, err := data.ClassByName(cls)
		if err != nil {
			return Table{}, fmt.Errorf("%s: class %q: %w", id, prow[0], err)
		}
		row := []string{prow[0]}
		for _, r := range res.Rows {
			c, ok := r.Agg.Class(ci)
			cell := "n/a"
			if ok {
				cell = PM3(c.IoU)
			}
			if v, ok := pt.Cell([]string{cls}, MethodKey(id, r)); ok && MethodKey(id, r) != "" {
				cell += " (" + v.Text + ")"
			}
			row = append(row, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// rowStat is the statistic of a row under one of the paper's column names.
func rowStat(r engine.Row, col string) eval.Stat {
	if col == "Accuracy" {
		return r.Accuracy
	}
	group := "all"
	if strings.HasSuffix(col, "(disc-7)") {
		group = "disc-7"
	}
	g, ok := r.Agg.Group(group)
	if !ok {
		return eval.Stat{}
	}
	if strings.HasPrefix(col, "RMA") {
		return g.RMA
	}
	return g.IoU
}

// PM3 is PM with the per-class tables' three decimals.
func PM3(s eval.Stat) string { return pmf(s, "%.3f", "%.3f ± %.3f") }

// PerClassIoU is a per-class table in the paper's layout without the
// paper's values: a row a class, a column a row of the run, IoU mean ± sd.
func PerClassIoU(res *engine.Results) Table {
	return perClass(res, "Per-class IoU (mean ± sd over test splits)", []string{""},
		func(c eval.ClassAgg) []string { return []string{PM3(c.IoU)} })
}
