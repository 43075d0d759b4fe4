// Package report turns engine results into the paper's tables (terminal and
// Markdown, drawn with tablewriter), results.json, a CSV with a row per
// record, and the run directory that holds them.
package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/internal/atomicfile"
)

// Table is a titled grid of cells.
type Table struct {
	Title  string
	Header []string
	Rows   [][]string
}

// Render draws the table with tablewriter: boxed for a terminal, or as
// GitHub Markdown.
func (t Table) Render(w io.Writer, markdown bool) error {
	opts := []tablewriter.Option{tablewriter.WithHeaderAutoFormat(tw.Off)}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	}
	tbl := tablewriter.NewTable(w, opts...)
	h := make([]any, len(t.Header))
	for i, s := range t.Header {
		h[i] = s
	}
	tbl.Header(h...)
	for _, r := range t.Rows {
		if err := tbl.Append(r); err != nil {
			return fmt.Errorf("table %q: %w", t.Title, err)
		}
	}
	return tbl.Render()
}

// PM formats a statistic as "mean ± sd" with 4 decimals ("n/a" when no
// split had data).
func PM(s eval.Stat) string {
	if s.N == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.4f ± %.4f", s.Mean, s.SD)
}

// RowLabel is the posterior's label, qualified by the explainer's and the
// summary's labels when the run has more than one of either, so that every
// row of a run has its own label.
func RowLabel(res *engine.Results, r engine.Row) string {
	exps, sums := map[string]bool{}, map[string]bool{}
	for _, x := range res.Rows {
		exps[x.ExplainerLabel] = true
		sums[x.SummaryLabel] = true
	}
	l := r.Label
	if len(exps) > 1 {
		l += " / " + r.ExplainerLabel
	}
	if len(sums) > 1 {
		l += " / " + r.SummaryLabel
	}
	return l
}

// Main is tab:bnn_results: Method, Accuracy, RMA, IoU, RMA (disc-7),
// IoU (disc-7), each mean ± sd over the test splits.
func Main(res *engine.Results) Table {
	t := Table{Title: "Accuracy and localisation of the UA-RAO maps (mean ± sd over test splits)",
		Header: []string{"Method", "Accuracy", "RMA", "IoU", "RMA (disc-7)", "IoU (disc-7)"}}
	for _, r := range res.Rows {
		all, _ := r.Agg.Group("all")
		d7, _ := r.Agg.Group("disc-7")
		t.Rows = append(t.Rows, []string{RowLabel(res, r), PM(r.Accuracy), PM(all.RMA), PM(all.IoU), PM(d7.RMA), PM(d7.IoU)})
	}
	return t
}

// PerClass is tab:perclass_*: one row per class, an RMA and an IoU column
// per result row.
func PerClass(res *engine.Results) Table {
	t := Table{Title: "Per-class localisation (mean ± sd over test splits)", Header: []string{"Class"}}
	for _, r := range res.Rows {
		l := RowLabel(res, r)
		t.Header = append(t.Header, l+" RMA", l+" IoU")
	}
	if len(res.Rows) == 0 {
		return t
	}
	for _, ca := range res.Rows[0].Agg.Classes {
		row := []string{data.ClassName(ca.Class)}
		for _, r := range res.Rows {
			c, _ := r.Agg.Class(ca.Class)
			row = append(row, PM(c.RMA), PM(c.IoU))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Markdown renders tables with titles as a Markdown document.
func Markdown(title string, notes []string, tables ...Table) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", title)
	for _, t := range tables {
		fmt.Fprintf(&b, "## %s\n\n", t.Title)
		if err := t.Render(&b, true); err != nil {
			return nil, err
		}
		b.WriteString("\n")
	}
	if len(notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.Bytes(), nil
}

// ResultsJSON is the deterministic JSON of the results (no timings).
func ResultsJSON(recipe string, seed uint64, res *engine.Results) ([]byte, error) {
	type row struct {
		Label string `json:"label"`
		engine.Row
		Records int `json:"records"`
	}
	doc := struct {
		Recipe string   `json:"recipe"`
		Seed   uint64   `json:"seed"`
		Rows   []row    `json:"rows"`
		Notes  []string `json:"notes"`
	}{Recipe: recipe, Seed: seed, Rows: []row{}, Notes: res.Notes}
	for _, r := range res.Rows {
		doc.Rows = append(doc.Rows, row{Label: RowLabel(res, r), Row: r, Records: len(r.Records)})
	}
	if doc.Notes == nil {
		doc.Notes = []string{}
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return nil, fmt.Errorf("results.json: %w", err)
	}
	return append(b, '\n'), nil
}

// RecordsCSV writes one line per (row, record): the scores of every record.
func RecordsCSV(res *engine.Results, splitNames []string) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"row", "posterior", "explainer", "summary", "split", "record", "label", "class", "target", "predicted", "mask_len", "scored", "why", "rma", "iou"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 17, 64) }
	for _, r := range res.Rows {
		for _, rec := range r.Records {
			_ = w.Write([]string{RowLabel(res, r), r.Posterior, r.Explainer, r.Summary, splitNames[rec.Split], strconv.Itoa(rec.Index), strconv.Itoa(rec.Label),
				data.ClassName(rec.Label), strconv.Itoa(rec.Target), strconv.Itoa(rec.Pred), strconv.Itoa(rec.MaskLen),
				strconv.FormatBool(rec.OK), rec.Why.String(), f(rec.RMA), f(rec.IoU)})
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// NewRunDir creates root/<name>-<UTC time>, adding a suffix if it exists.
func NewRunDir(root, name string, now time.Time) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	base := filepath.Join(root, name+"-"+now.UTC().Format("20060102-150405"))
	dir := base
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !os.IsExist(err) {
			return "", err
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// WriteFile writes one file of a run directory atomically (a temp file,
// fsync, mode 0644, a rename, fsync of the directory), so an interrupted run
// never leaves a half-written file.
func WriteFile(dir, name string, b []byte) error {
	return atomicfile.WriteFile(filepath.Join(dir, name), b)
}
