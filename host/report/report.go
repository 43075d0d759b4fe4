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
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/internal/atomicfile"
	"github.com/uaxai/uaxai/internal/termsafe"
	"github.com/uaxai/uaxai/sdk"
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
		h[i] = cell(s, markdown)
	}
	tbl.Header(h...)
	row := []string{}
	for _, r := range t.Rows {
		row = row[:0]
		for _, s := range r {
			row = append(row, cell(s, markdown))
		}
		if err := tbl.Append(row); err != nil {
			return fmt.Errorf("table %q: %w", t.Title, err)
		}
	}
	return tbl.Render()
}

// cell is s as one table cell: the characters a terminal or a Markdown
// reader would act on (a line break, which would end the row, ESC, a
// bidirectional override) written as Go escapes (termsafe.Escape), and in
// Markdown a '|', which would end the cell, as '\|'. Names that reach a
// table (classes, channels, stations, labels) come from input files.
func cell(s string, markdown bool) string {
	s = termsafe.Escape(s)
	if markdown {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	return s
}

// PM formats a statistic as "mean ± sd" with 4 decimals: "n/a" when no
// split had data, "mean ± n/a" when one did (a standard deviation over
// one split does not exist).
func PM(s eval.Stat) string { return pmf(s, "%.4f", "%.4f ± %.4f") }

// pmf is PM with the formats of the mean alone and of mean and sd.
func pmf(s eval.Stat, mean, both string) string {
	switch s.N {
	case 0:
		return "n/a"
	case 1:
		return fmt.Sprintf(mean, s.Mean) + " ± n/a"
	}
	return fmt.Sprintf(both, s.Mean, s.SD)
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
	// Without the disc-7 group in any row (data of other classes than
	// the one-phase PQD's), its columns are left out.
	hasD7, hasAll := false, false
	for _, r := range res.Rows {
		_, ok := r.Agg.Group("disc-7")
		_, all := r.Agg.Group("all")
		hasD7, hasAll = hasD7 || ok, hasAll || all
	}
	if hasAll && !hasD7 {
		t.Header = t.Header[:4]
	}
	for _, r := range res.Rows {
		all, _ := r.Agg.Group("all")
		d7, _ := r.Agg.Group("disc-7")
		row := []string{RowLabel(res, r), PM(r.Accuracy), PM(all.RMA), PM(all.IoU), PM(d7.RMA), PM(d7.IoU)}
		t.Rows = append(t.Rows, row[:len(t.Header)])
	}
	return t
}

// PerClass is tab:perclass_*: one row per class, an RMA and an IoU column
// per result row.
func PerClass(res *engine.Results) Table {
	return perClass(res, "Per-class localisation (mean ± sd over test splits)", []string{" RMA", " IoU"},
		func(c eval.ClassAgg) []string { return []string{PM(c.RMA), PM(c.IoU)} })
}

// perClass is a table of a row a class and, for each result row, the
// columns its label with each suffix names, filled by cells.
func perClass(res *engine.Results, title string, suffixes []string, cells func(c eval.ClassAgg) []string) Table {
	t := Table{Title: title, Header: []string{"Class"}}
	for _, r := range res.Rows {
		l := RowLabel(res, r)
		for _, s := range suffixes {
			t.Header = append(t.Header, l+s)
		}
	}
	if len(res.Rows) == 0 {
		return t
	}
	for _, ca := range res.Rows[0].Agg.Classes {
		row := []string{ClassName(res.ClassNames, ca.Class)}
		for _, r := range res.Rows {
			c, _ := r.Agg.Class(ca.Class)
			row = append(row, cells(c)...)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// ClassName is the name of class c among names (the data's; nil: the
// one-phase PQD's, data.ClassName), or "class(c)" when c is out of range
// (an unlabelled record's -1).
func ClassName(names []string, c int) string {
	if names == nil {
		return data.ClassName(c)
	}
	if c < 0 || c >= len(names) {
		return fmt.Sprintf("class(%d)", c)
	}
	return names[c]
}

// Markdown renders tables with titles as a Markdown document.
func Markdown(title string, notes []string, tables ...Table) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n", termsafe.Escape(title))
	for _, t := range tables {
		fmt.Fprintf(&b, "## %s\n\n", termsafe.Escape(t.Title))
		if err := t.Render(&b, true); err != nil {
			return nil, err
		}
		b.WriteString("\n")
	}
	if len(notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", termsafe.Escape(n))
		}
	}
	return b.Bytes(), nil
}

// ResultsJSON is the deterministic JSON of the results (no timings); a
// run writes it only when every unit is done (merge).
//
// Sections, if given, add keys after "notes" in the order given (the
// posteriors' predictive quality, the analyses): nil values are left out.
func ResultsJSON(recipe string, seed uint64, res *engine.Results, sections ...Section) ([]byte, error) {
	doc := struct {
		Recipe  string          `json:"recipe"`
		Seed    uint64          `json:"seed"`
		Rows    []RowJSON       `json:"rows"`
		Outputs []engine.Output `json:"outputs"`
		Notes   []string        `json:"notes"`
	}{Recipe: recipe, Seed: seed, Rows: RowsJSON(res), Outputs: res.Outputs, Notes: res.Notes}
	if doc.Outputs == nil {
		doc.Outputs = []engine.Output{}
	}
	if doc.Notes == nil {
		doc.Notes = []string{}
	}
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return nil, fmt.Errorf("results.json: %w", err)
	}
	for _, sec := range sections {
		if sec.Value == nil {
			continue
		}
		v, err := json.MarshalIndent(sec.Value, " ", " ")
		if err != nil {
			return nil, fmt.Errorf("results.json: %s: %w", sec.Key, err)
		}
		k, _ := json.Marshal(sec.Key)
		// doc ends in "\n}": add the key before the closing brace.
		b = append(append(append(append(b[:len(b)-2], ",\n "...), k...), ": "...), v...)
		b = append(b, "\n}"...)
	}
	return append(b, '\n'), nil
}

// RowJSON is a row as results.json holds it: its label (RowLabel), the
// row, and its number of records.
type RowJSON struct {
	Label string `json:"label"`
	engine.Row
	Records int `json:"records"`
}

// RowsJSON is res's rows as results.json holds them (never nil).
func RowsJSON(res *engine.Results) []RowJSON {
	out := []RowJSON{}
	for _, r := range res.Rows {
		out = append(out, RowJSON{Label: RowLabel(res, r), Row: r, Records: len(r.Records)})
	}
	return out
}

// Section is one more top-level key of results.json.
type Section struct {
	Key   string
	Value any
}

// RecordColumns are more columns of records.csv that another part of the
// run gives (the explanation metrics' scores, host/analysis): Cells gives
// a line's len(Header) cells.
type RecordColumns struct {
	Header []string
	Cells  func(r *engine.Row, rec *engine.Record) []string
}

// RecordsCSV writes one line per (row, record): the scores of every record,
// for a run of C > 1 channels its channel view (channelHeader), then the
// extra columns.
func RecordsCSV(res *engine.Results, splitNames []string, extra ...RecordColumns) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := []string{"row", "posterior", "explainer", "summary", "split", "record", "label", "class", "target", "predicted", "mask_len", "scored", "why", "rma", "iou"}
	names := channelNames(res) // C > 1: the channel columns (channels.go)
	if names != nil {
		head = append(head, channelHeader(names)...)
	}
	for _, e := range extra {
		head = append(head, e.Header...)
	}
	_ = w.Write(head)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 17, 64) }
	for _, r := range res.Rows {
		for _, rec := range r.Records {
			line := []string{RowLabel(res, r), r.Posterior, r.Explainer, r.Summary, splitNames[rec.Split], strconv.Itoa(rec.Index), strconv.Itoa(rec.Label),
				ClassName(res.ClassNames, rec.Label), strconv.Itoa(rec.Target), strconv.Itoa(rec.Pred), strconv.Itoa(rec.MaskLen),
				strconv.FormatBool(rec.OK), rec.Why.String(), f(rec.RMA), f(rec.IoU)}
			if names != nil {
				line = append(line, channelCells(rec, names, f)...)
			}
			for _, e := range extra {
				line = append(line, e.Cells(&r, &rec)...)
			}
			_ = w.Write(line)
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// OutputCSV writes the records of a set or band summary: one line per
// record for a set, two (bound "lower", then "upper") for a band. The
// columns are split, record, label, class, target, predicted, mask_len,
// then for a set its size and v0..v<N-1> as 0 or 1, for a band the bound
// and v0..v<N-1> as the shortest decimals that read back to the same
// float64.
func OutputCSV(o *engine.Output, splitNames []string) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := []string{"split", "record", "label", "class", "target", "predicted", "mask_len"}
	switch o.Kind {
	case sdk.OutputSet:
		head = append(head, "size")
	case sdk.OutputBand:
		head = append(head, "bound")
	default:
		return nil, fmt.Errorf("%s: output kind %q (want set or band)", o.Summary, o.Kind)
	}
	for n := range o.N {
		head = append(head, "v"+strconv.Itoa(n))
	}
	_ = w.Write(head)
	line := make([]string, 0, len(head))
	for _, rec := range o.Records {
		if rec.Split < 0 || rec.Split >= len(splitNames) {
			return nil, fmt.Errorf("%s: record %d of split %d, of %d splits", o.Summary, rec.Index, rec.Split, len(splitNames))
		}
		key := []string{splitNames[rec.Split], strconv.Itoa(rec.Index), strconv.Itoa(rec.Label), ClassName(o.ClassNames, rec.Label),
			strconv.Itoa(rec.Target), strconv.Itoa(rec.Pred), strconv.Itoa(rec.MaskLen)}
		if o.Kind == sdk.OutputSet {
			if len(rec.Set) != o.N {
				return nil, fmt.Errorf("%s: split %s record %d: a set of %d values, want %d", o.Summary, splitNames[rec.Split], rec.Index, len(rec.Set), o.N)
			}
			size := 0
			line = append(append(line[:0], key...), "")
			for _, in := range rec.Set {
				v := "0"
				if in {
					v, size = "1", size+1
				}
				line = append(line, v)
			}
			line[len(key)] = strconv.Itoa(size)
			_ = w.Write(line)
			continue
		}
		for _, bound := range []struct {
			name string
			v    []float64
		}{{"lower", rec.Lower}, {"upper", rec.Upper}} {
			if len(bound.v) != o.N {
				return nil, fmt.Errorf("%s: split %s record %d: its %s bound has %d values, want %d", o.Summary, splitNames[rec.Split], rec.Index, bound.name, len(bound.v), o.N)
			}
			line = append(append(line[:0], key...), bound.name)
			for _, v := range bound.v {
				line = append(line, strconv.FormatFloat(v, 'g', -1, 64))
			}
			_ = w.Write(line)
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// OutputFile is the run-directory path of the i-th set or band output of
// a run (i from 1): outputs/<i>-<posterior>_<explainer>_<summary>.csv, the
// labels reduced to lower-case letters, digits and dashes.
func OutputFile(i int, o *engine.Output) string {
	return fmt.Sprintf("outputs/%02d-%s_%s_%s.csv", i, Slug(o.Label), Slug(o.ExplainerLabel), Slug(o.SummaryLabel))
}

// Slug reduces a label to lower-case ASCII letters and digits, other runs
// of characters becoming one dash; at most 40 bytes.
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
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
