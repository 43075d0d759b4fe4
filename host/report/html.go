package report

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/uaxai/uaxai/host/data"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/paper"
)

// This file writes report.html: one self-contained page (no network
// access; its script and style are inline, written here, html.js and
// html.css) with the run's tables, the per-class IoU chart and the
// metrics' curves (inline SVG),
// a browser of the explained records (analysis.Explored) and, for a
// recording, the timeline of its windows.

//go:embed html.js
var htmlJS string

//go:embed html.css
var htmlCSS string

// HTML is what report.html shows.
type HTML struct {
	Title           string
	Notes, Warnings []string
	Tables          []Table // tables.md's
	Bars            *Bars   // nil: nothing scored
	Charts          []Chart // the metrics' curves
	Records         []Explored
	Windows         []Window
	ClassNames      []string
	Fs              float64 // samples a second of the records (0: time in samples)
	// Unit is the waveforms' unit ("p.u.": a recording divided by its
	// nominal, or the generator's; "": unknown); F0 the system frequency
	// (the timeline's tick a cycle, 0: none); Trigger a recording's trigger,
	// s from its first sample (NaN: none; the timeline's times are ms
	// from it).
	Unit        string
	F0, Trigger float64
	// PeakUnits, per channel, is what 1 p.u. of the waveform is in the
	// recording's own unit (sqrt(2) x the nominal RMS) and Units that
	// unit: the waveform's axis then also reads in V, kV or A (nil: p.u.
	// only).
	PeakUnits []float64
	Units     []string
	// Events are a recording's events (events.csv), shown under the
	// timeline.
	Events []Event
}

// Event is one row of the report's event table: consecutive windows of
// one class (events.csv).
type Event struct {
	Posterior, Class string
	First, Last      int     // windows
	StartMS, EndMS   float64 // from Origin
	Origin           string  // "trigger" or "first sample"
	Probability, MI  float64 // means over the windows
	TopChannel       string  // "" with one channel
	TopShare         float64
	OOD              int // windows flagged out of distribution
}

// Bars is the per-class IoU chart: Values[m][c] ± SD[m][c] of method m
// on class c, and the paper's value Paper[m][c] (NaN: none).
type Bars struct {
	Title            string
	Classes, Methods []string
	Values, SD       [][]float64
	Paper            [][]float64 // nil: no paper table
}

// PerClassPaperTable is the paper's per-class table among ids (a
// recipe's [paper] tables: the last "tab:perclass_..."), or "".
func PerClassPaperTable(ids []string) string {
	var pt string
	for _, id := range ids {
		if strings.HasPrefix(id, "tab:perclass_") {
			pt = id
		}
	}
	return pt
}

// PerClassIoUBars is the per-class chart of res's rows: each row's IoU
// of each scored class, mean and SD over the test splits (0 for a class
// no split scored), and, with pt a paper table (PerClassPaperTable), the
// paper's value of the row's method and the class (NaN where the paper
// has none). It is nil without rows. report.html and the PNG figure
// (host/analysis) draw it.
func PerClassIoUBars(res *engine.Results, pt string) (*Bars, error) {
	if len(res.Rows) == 0 {
		return nil, nil
	}
	b := &Bars{Title: "Per-class IoU (mean ± sd over test splits)"}
	var tab *paper.Table
	if pt != "" {
		t, err := paper.Lookup(pt)
		if err != nil {
			return nil, err
		}
		tab = t
		b.Title += "; markers: the paper (" + pt + ")"
	}
	classes := res.Rows[0].Agg.Classes
	for _, c := range classes {
		b.Classes = append(b.Classes, ClassName(res.ClassNames, c.Class))
	}
	for _, r := range res.Rows {
		b.Methods = append(b.Methods, RowLabel(res, r))
		vals, sds, pap := make([]float64, len(classes)), make([]float64, len(classes)), make([]float64, len(classes))
		for i, c := range classes {
			pap[i] = math.NaN()
			if ca, ok := r.Agg.Class(c.Class); ok && ca.IoU.N > 0 {
				vals[i], sds[i] = ca.IoU.Mean, ca.IoU.SD
			}
			if key := MethodKey(pt, r); tab != nil && key != "" {
				if v, ok := tab.Cell([]string{ClassName(res.ClassNames, c.Class)}, key); ok {
					pap[i] = v.Mean
				}
			}
		}
		b.Values, b.SD = append(b.Values, vals), append(b.SD, sds)
		if tab != nil {
			b.Paper = append(b.Paper, pap)
		}
	}
	return b, nil
}

// palette is the methods' and classes' colours (Okabe-Ito, then more).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
	"#8C564B", "#7F7F7F", "#BCBD22", "#17BECF", "#9467BD", "#FF9896", "#98DF8A", "#C49C94"}

// svg draws the chart: a group of bars a class, a bar a method, its SD
// as a whisker, the paper's value as a black tick; the legend inside.
func (b *Bars) svg() template.HTML {
	const barW, gap, h, top, left = 12.0, 14.0, 220.0, 30.0, 44.0
	nm := len(b.Methods)
	groupW := float64(nm)*barW + gap
	legendH := 18.0 * float64(nm)
	w := left + groupW*float64(len(b.Classes)) + 20
	H := top + h + 90 + legendH
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" class="bars" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`, w, H, w, H)
	y := func(v float64) float64 { return top + h*(1-math.Max(0, math.Min(1, v))) }
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&s, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" class="tick" text-anchor="end">%.2f</text>`, left, w-20, y(t), y(t), left-4, y(t)+4, t)
	}
	for ci, c := range b.Classes {
		x0 := left + float64(ci)*groupW + gap/2
		for m := range b.Methods {
			v, sd := b.Values[m][ci], b.SD[m][ci]
			x := x0 + float64(m)*barW
			fmt.Fprintf(&s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %.4f ± %.4f</title></rect>`,
				x, y(v), barW-1, y(0)-y(v), palette[m%len(palette)], template.HTMLEscapeString(b.Methods[m]), template.HTMLEscapeString(c), v, sd)
			fmt.Fprintf(&s, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`, x+barW/2-0.5, x+barW/2-0.5, y(v-sd), y(v+sd))
			if b.Paper != nil && !math.IsNaN(b.Paper[m][ci]) {
				fmt.Fprintf(&s, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#000" stroke-width="2"><title>the paper: %.4f</title></line>`, x, x+barW-1, y(b.Paper[m][ci]), y(b.Paper[m][ci]), b.Paper[m][ci])
			}
		}
		xc := x0 + float64(nm)*barW/2
		fmt.Fprintf(&s, `<text class="tick" transform="translate(%.1f,%.1f) rotate(-45)" text-anchor="end">%s</text>`, xc, top+h+12, template.HTMLEscapeString(c))
	}
	for m, name := range b.Methods {
		ly := top + h + 90 + 18*float64(m)
		fmt.Fprintf(&s, `<rect x="%.0f" y="%.1f" width="12" height="12" fill="%s"/><text x="%.0f" y="%.1f" class="tick">%s</text>`, left, ly-10, palette[m%len(palette)], left+18, ly, template.HTMLEscapeString(name))
	}
	fmt.Fprintf(&s, `<text x="%.0f" y="16" class="title">%s</text></svg>`, left, template.HTMLEscapeString(b.Title))
	return template.HTML(s.String())
}

// jsRecord is one Explored as the page's script reads it: arrays of
// float32 as base64 little-endian bytes, C x B values a series (B
// columns a channel: B = T, each sample's own value, up to MaxColumns,
// else B = MaxColumns thinned columns). The members (S' x C x B) are the
// maps' own float32 values (the hover shows them exactly; their colour is
// computed from them), of largest |R| in a column when thinned. The
// lines are C x B values, or when thinned 2 x C x B: the columns'
// minima, then their maxima.
type jsRecord struct {
	Posterior string    `json:"p"`
	Explainer string    `json:"e"`
	Split     string    `json:"sp"`
	Record    int       `json:"r"`
	Key       string    `json:"key"`
	Label     string    `json:"label"`
	Pred      string    `json:"pred"`
	Prob      float64   `json:"prob"`
	DrawProbs []float64 `json:"dp"`
	C         int       `json:"C"`
	T         int       `json:"T"`
	B         int       `json:"B"`
	ChNames   []string  `json:"cn"`
	Wave      string    `json:"wave"`
	Mask      string    `json:"mask"`
	Mem       string    `json:"mem"`
	MemS      int       `json:"ns"`
	Draws     int       `json:"draws"`
	Lo        float64   `json:"lo"` // the smallest and largest member value (all T samples)
	Hi        float64   `json:"hi"`
	Mean      string    `json:"mean"`
	Q05       string    `json:"q05"`
	Q95       string    `json:"q95"`
	Var       string    `json:"var"`
	CV        string    `json:"cv"`
	OOD       string    `json:"ood,omitempty"`
}

func f32b64(x []float32) string {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// line is series x (C x T) as the page carries it in B columns: x
// itself when B = T, else its columns' minima followed by their maxima.
func line(x []float32, C, T, B int) string {
	if B == T {
		return f32b64(x)
	}
	lh := make([]float32, 2*C*B)
	thinMinMax(lh[:C*B], lh[C*B:], x, C, T, B)
	return f32b64(lh)
}

func toJS(e Explored, names []string) (jsRecord, error) {
	N := len(e.Mean)
	C := max(e.Channels, 1)
	bad := N == 0 || N%C != 0 || len(e.Wave) != N || len(e.Members) == 0 || (e.Mask != nil && len(e.Mask) != N)
	for _, s := range [][]float32{e.Q05, e.Q95, e.Variance, e.CV} {
		bad = bad || len(s) != N
	}
	for _, m := range e.Members {
		bad = bad || len(m) != N
	}
	if bad {
		return jsRecord{}, fmt.Errorf("report.html: record %d of split %s under %s / %s: %d map values, %d input values, %d channels, %d members (want C x T values in each series and member, the mask's too)",
			e.Record, e.SplitName, e.PosteriorName(), e.Explainer, N, len(e.Wave), C, len(e.Members))
	}
	T := N / C
	B := min(T, MaxColumns)
	j := jsRecord{Posterior: e.PosteriorName(), Explainer: e.Explainer, Split: e.SplitName, Record: e.Record, Key: fmt.Sprintf("%s/%d", e.SplitName, e.Record),
		Pred: ClassName(names, e.Pred), Prob: e.Prob, DrawProbs: e.DrawProbs, C: C, T: T, B: B, ChNames: e.ChannelNames, Draws: e.Draws, MemS: len(e.Members), OOD: e.OOD,
		Wave: line(e.Wave, C, T, B), Mean: line(e.Mean, C, T, B), Q05: line(e.Q05, C, T, B), Q95: line(e.Q95, C, T, B), Var: line(e.Variance, C, T, B), CV: line(e.CV, C, T, B)}
	if e.Label >= 0 {
		j.Label = ClassName(names, e.Label)
	}
	if e.Mask != nil {
		m := make([]byte, C*B)
		thinAny(m, e.Mask, C, T, B)
		j.Mask = base64.StdEncoding.EncodeToString(m)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, m := range e.Members {
		for _, v := range m {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return jsRecord{}, fmt.Errorf("report.html: record %d of split %s under %s / %s: a member map value is %v (want finite values)", e.Record, e.SplitName, e.PosteriorName(), e.Explainer, v)
			}
			lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
		}
	}
	j.Lo, j.Hi = lo, hi
	mem := make([]float32, len(e.Members)*C*B)
	for s, m := range e.Members {
		if B == T {
			copy(mem[s*N:], m)
		} else {
			thinMaxAbs(mem[s*C*B:(s+1)*C*B], m, C, T, B)
		}
	}
	j.Mem = f32b64(mem)
	return j, nil
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":     func(v float64) float64 { return 100 * v },
	"windows": func(first, last int) int { return last - first + 1 },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<link rel="icon" href="data:,">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<style>{{.CSS}}</style></head>
<body><h1>{{.Title}}</h1>
<nav><a href="#tables">Tables</a>{{if .Bars}} · <a href="#charts">Per-class chart</a>{{end}}{{if .HasWindows}} · <a href="#timeline">Timeline</a>{{end}}{{if .HasRecords}} · <a href="#records">Records</a>{{end}}{{if or .Warnings .Notes}} · <a href="#notes">Warnings and notes</a>{{end}}</nav>
{{if .Warnings}}<section id="warnings" class="warn"><h2>Warnings</h2><ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
<section id="tables"><h2>Tables</h2>{{if not .Tables}}<p>No tables: the run scored nothing (a recording has no ground truth).</p>{{end}}
{{range .Tables}}<table><caption>{{.Title}}</caption><thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead><tbody>{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</tbody></table>{{end}}</section>
{{if .Bars}}<section id="charts"><h2>Per-class chart</h2>{{.BarsSVG}}</section>{{end}}
{{if .ChartsSVG}}<section id="curves"><h2>Metric curves</h2><p>Each curve metric's mean curve over the records: the draws' (the band from the lowest to the highest draw's) and each map summary's.</p>{{range .ChartsSVG}}<div class="cwrap">{{.}}</div>{{end}}</section>{{end}}
{{if .HasWindows}}<section id="timeline"><h2>Timeline of the recording</h2>
<p>Each window along the recording's time, with the waveform of the windows this page holds under it (ms from the trigger, the purple dashed line, or from the first sample; a tick a cycle when they fit), coloured by its predicted class; the bar's height is the predictive probability of that class, the black line the share of draws that agree with it and the red line the mutual information between the prediction and the draw (nats, scaled to the largest). A black band above a window marks it outside what the model was trained on (its RMS, fundamental frequency or THD far from the training windows of the class it was given, or the network's penultimate features far from every class's training records; hover for which). Click a window to see its panel.{{if .Thinned}} The recording has more than {{.MaxTimeline}} windows: a bar is a run of consecutive windows, coloured by their most frequent class, showing their lowest probability, lowest agreement and highest mutual information.{{end}}</p>
<label>Posterior <select id="tl-post"></select></label><div class="cwrap"><canvas id="tl" height="170"></canvas></div><div id="tl-legend" class="legend"></div>
{{if .Events}}<table id="events"><caption>Events: consecutive windows of one class (events.csv)</caption><thead><tr><th>Posterior</th><th>Class</th><th>Windows</th><th>Start ms</th><th>End ms</th><th>Mean p</th><th>Mean MI</th><th>Top channel</th><th>Out of distribution</th></tr></thead><tbody>
{{range .Events}}<tr{{if .OOD}} class="ood"{{end}}><td>{{.Posterior}}</td><td>{{.Class}}</td><td>{{.First}}..{{.Last}}</td><td>{{printf "%.1f" .StartMS}}</td><td>{{printf "%.1f" .EndMS}}</td><td>{{printf "%.3f" .Probability}}</td><td>{{printf "%.3g" .MI}}</td><td>{{if .TopChannel}}{{.TopChannel}} ({{printf "%.0f" (pct .TopShare)}}%){{end}}</td><td>{{if .OOD}}{{.OOD}} of {{windows .First .Last}}{{end}}</td></tr>{{end}}</tbody></table>
<p>Times are ms from the {{(index .Events 0).Origin}}.</p>{{end}}</section>{{end}}
{{if .HasRecords}}<section id="records"><h2>Explained records</h2>
<p>Drag across a plot to zoom the time axis, double-click to reset; hover for values (the heat maps' are the maps' own float32 values). A record longer than {{.MaxColumns}} samples is drawn in {{.MaxColumns}} columns: a heat map cell is the value of largest |R| among its samples, a line the band from their minimum to their maximum, and the hover says which samples. The heat maps (draws x time) share one colour scale across records and methods (<span id="scale"></span>); each map's own range is written beside it.</p>
<div class="browser"><div class="list"><button id="prev" type="button">&larr; previous</button> <button id="next" type="button">next &rarr;</button><ol id="reclist"></ol></div>
<div id="panel" class="panel"></div></div><div id="tip" class="tip"></div></section>{{end}}
{{if or .Warnings .Notes}}<section id="notes"><h2>Warnings and notes</h2><ul>{{range .Warnings}}<li class="warn">{{.}}</li>{{end}}{{range .Notes}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
<script type="application/json" id="data">{{.Data}}</script>
<script>{{.JS}}</script>
</body></html>
`))

// thinned reports whether a posterior has more than MaxTimeline windows.
func thinned(ws []Window) bool {
	n := map[string]int{}
	for _, w := range ws {
		if n[w.Posterior]++; n[w.Posterior] > MaxTimeline {
			return true
		}
	}
	return false
}

// WriteHTML writes report.html.
func WriteHTML(w io.Writer, h HTML) error {
	recs := make([]jsRecord, 0, len(h.Records))
	for _, e := range h.Records {
		j, err := toJS(e, h.ClassNames)
		if err != nil {
			return err
		}
		recs = append(recs, j)
	}
	var trigger *float64
	if !math.IsNaN(h.Trigger) && !math.IsInf(h.Trigger, 0) && len(h.Windows) > 0 {
		trigger = &h.Trigger
	}
	// a class's colour is its index's in the run's class list, as in the
	// PNG figures (figure.ClassColour), the same in every run
	names := h.ClassNames
	if names == nil {
		names = data.ClassNames[:]
	}
	classColours := map[string]string{}
	for i, n := range names {
		classColours[n] = figure.ClassColourHex(i)
	}
	js, err := json.Marshal(map[string]any{"records": recs, "windows": thinWindows(h.Windows, MaxTimeline), "fs": h.Fs, "palette": palette, "classColours": classColours,
		"unit": h.Unit, "f0": h.F0, "trigger": trigger, "peakUnits": h.PeakUnits, "units": h.Units})
	if err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	v := map[string]any{"Events": h.Events, "Title": h.Title, "Notes": h.Notes, "Warnings": h.Warnings, "Tables": h.Tables, "Bars": h.Bars,
		"HasRecords": len(recs) > 0, "HasWindows": len(h.Windows) > 0, "MaxColumns": MaxColumns, "MaxTimeline": MaxTimeline, "Thinned": thinned(h.Windows),
		// json.Marshal escapes <, > and &: the data cannot close its script.
		"Data": template.JS(js), "JS": template.JS(htmlJS), "CSS": template.CSS(htmlCSS)}
	if h.Bars != nil {
		v["BarsSVG"] = h.Bars.svg()
	}
	var charts []template.HTML
	for i := range h.Charts {
		charts = append(charts, h.Charts[i].svg())
	}
	v["ChartsSVG"] = charts
	var buf bytes.Buffer
	if err := page.Execute(&buf, v); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}
