package analysis

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/sdk/metric"
)

// The explanation metrics of [evaluate] metrics (sdk/metric), as the
// engine's metric step scored them (engine.Batch.DrawScores,
// SummaryScores): per metric, one table of every (posterior, explainer)
// pair, results.json "metrics", and metrics.csv with every record's every
// score.
//
// Per record r, with m_rs the score of draw s's map under draw s's
// network (defined draws only) and m_ri that of summary i's map under the
// posterior predictive:
//
//	draws mean  d_r = mean_s m_rs     draws sd  sd_r = sd_s m_rs (S >= 2)
//	summary     m_ri                  gain      m_ri - d_r
//
// and the table gives, per group of classes (every record of an
// unlabelled split), the mean ± sd over the test splits of the class
// means of d_r, sd_r and m_ri (as every table of the run), and the gain
// of each summary over the draws, paired over the records, with its 95%
// Student t interval: is the summary's map more faithful (sparser, more
// robust) to the posterior than a single draw's is to its network?

// noMap is the reason of a summary's score where the summary gives no
// map (a set or band summary): not a score, so metrics.csv leaves it out.
const noMap = "no map"

// metricScores keeps the batch's scores of record j.
func metricScores(b *engine.Batch, j int, rec *record) {
	if b.DrawScores == nil {
		return
	}
	rec.drawScores = make([][]metric.Score, len(b.DrawScores))
	rec.sumScores = make([][]metric.Score, len(b.DrawScores))
	for k := range b.DrawScores {
		rec.drawScores[k] = b.DrawScores[k][j]
		rec.sumScores[k] = make([]metric.Score, len(b.Summaries))
		for i := range b.Summaries {
			if k < len(b.SummaryScores) && i < len(b.SummaryScores[k]) && b.SummaryScores[k][i] != nil {
				rec.sumScores[k][i] = b.SummaryScores[k][i][j]
			} else {
				rec.sumScores[k][i] = metric.Score{Value: math.NaN(), Undefined: noMap}
			}
		}
	}
}

// drawStats are a record's d_r and sd_r of metric k (ok false: no draw
// defined; sdOK false: fewer than two).
func (r *record) drawStats(k int) (mean, sd float64, ok, sdOK bool) {
	if k >= len(r.drawScores) {
		return 0, 0, false, false
	}
	var xs []float64
	for _, s := range r.drawScores[k] {
		if s.Undefined == "" {
			xs = append(xs, s.Value)
		}
	}
	if len(xs) == 0 {
		return 0, 0, false, false
	}
	mean, sd = eval.MeanSD(xs)
	return mean, sd, true, len(xs) >= 2
}

// sumScore is a record's m_ri of metric k.
func (r *record) sumScore(k, i int) (float64, bool) {
	if k >= len(r.sumScores) || i >= len(r.sumScores[k]) {
		return 0, false
	}
	s := r.sumScores[k][i]
	return s.Value, s.Undefined == ""
}

type metricRowJSON struct {
	Posterior string         `json:"posterior"`
	Replicate int            `json:"replicate,omitempty"`
	Explainer string         `json:"explainer"`
	Scope     string         `json:"scope"`
	Draws     Stat           `json:"draws"`
	DrawsSD   Stat           `json:"draws_sd"`
	Summaries []metricSumRow `json:"summaries"`
	Undefined int            `json:"undefined_draw_scores"`
}

type metricSumRow struct {
	Summary string         `json:"summary"`
	Score   Stat           `json:"score"`
	Gain    *eval.Interval `json:"gain_over_draws,omitempty"`
	// Why, when Gain is absent, says why (fewer than two records).
	Why string `json:"why,omitempty"`
}

// scope is a table's group of records: the classes (nil: every record).
type scope struct {
	name    string
	classes []int
}

// scopes are the table's record groups: the run's groups of classes, or
// every record when the run has an unlabelled split.
func (a *Analyser) scopes() []scope {
	for _, t := range a.s.Tests {
		if t.Unlabelled {
			return []scope{{"all records", nil}}
		}
	}
	var out []scope
	for _, g := range a.groupOrder() {
		out = append(out, scope{groupNames[g], a.s.Groups[g]})
	}
	return out
}

// inScope reports whether r belongs to classes (nil: every record).
func inScope(r *record, classes []int) bool {
	return classes == nil || slices.Contains(classes, r.label)
}

// scopeStat is groupStat, with nil classes the mean over a split's
// records (no classes to average over).
func (a *Analyser) scopeStat(p *pair, classes []int, f func(r *record) (float64, bool)) Stat {
	if classes != nil {
		return a.groupStat(p, classes, f)
	}
	var means []float64
	n := 0
	for _, recs := range p.recs {
		var s float64
		k := 0
		for _, r := range recs {
			if r == nil {
				continue
			}
			if v, ok := f(r); ok {
				s += v
				k++
			}
		}
		if k > 0 {
			means = append(means, s/float64(k))
			n += k
		}
	}
	return Stat{Stat: eval.StatOf(means), Records: n}
}

// metricsReport adds the metrics' tables, JSON and metrics.csv.
func (a *Analyser) metricsReport(rep *Report) error {
	if len(a.s.Metrics) == 0 {
		return nil
	}
	var all, across []map[string]any
	for k, info := range a.s.Metrics {
		better := "higher is better"
		if !info.Higher {
			better = "lower is better, or neither"
		}
		t := report.Table{Title: fmt.Sprintf("%s (%s, %s): the draws' maps under their own networks and each map summary's under the posterior predictive (mean ± sd over test splits; gain: summary minus the draws' mean, paired over records, 95%% t interval)", info.ID, info.Category, better),
			Header: []string{"Method", "Scope", "Draws", "SD over draws"}}
		for _, s := range a.s.Summaries {
			t.Header = append(t.Header, s, s+" gain")
		}
		t.Header = append(t.Header, "Records")
		var rows []metricRowJSON
		for _, p := range a.orderedPairs() {
			for _, sc := range a.scopes() {
				row := metricRowJSON{Posterior: p.post, Replicate: p.rep, Explainer: p.exp, Scope: sc.name}
				row.Draws = a.scopeStat(p, sc.classes, func(r *record) (float64, bool) {
					m, _, ok, _ := r.drawStats(k)
					return m, ok
				})
				row.DrawsSD = a.scopeStat(p, sc.classes, func(r *record) (float64, bool) {
					_, sd, _, ok := r.drawStats(k)
					return sd, ok
				})
				p.each(func(r *record) {
					if inScope(r, sc.classes) && k < len(r.drawScores) {
						for _, s := range r.drawScores[k] {
							if s.Undefined != "" {
								row.Undefined++
							}
						}
					}
				})
				cells := []string{a.pairLabel(p), sc.name, report.PM3(row.Draws.Stat), report.PM3(row.DrawsSD.Stat)}
				for i, label := range a.s.Summaries {
					sr := metricSumRow{Summary: label, Score: a.scopeStat(p, sc.classes, func(r *record) (float64, bool) { return r.sumScore(k, i) })}
					var sum, draws []float64
					p.each(func(r *record) {
						if !inScope(r, sc.classes) {
							return
						}
						v, ok := r.sumScore(k, i)
						d, _, dok, _ := r.drawStats(k)
						if ok && dok {
							sum, draws = append(sum, v), append(draws, d)
						}
					})
					gain := "n/a"
					if iv, err := eval.PairedT(sum, draws, 0.95); err == nil {
						sr.Gain = &iv
						gain = fmt.Sprintf("%+.3f (%+.3f, %+.3f)", iv.Mean, iv.Lo, iv.Hi)
					} else {
						sr.Why = err.Error()
					}
					row.Summaries = append(row.Summaries, sr)
					cells = append(cells, report.PM3(sr.Score.Stat), gain)
				}
				cells = append(cells, strconv.Itoa(row.Draws.Records))
				t.Rows = append(t.Rows, cells)
				rows = append(rows, row)
			}
		}
		rep.Tables = append(rep.Tables, t)
		all = append(all, map[string]any{"metric": info.ID, "category": info.Category, "higher_is_better": info.Higher, "rows": rows})
		at, arows, ok, err := a.metricAcrossReplicates(info, rows)
		if err != nil {
			return err
		}
		if ok {
			rep.Tables = append(rep.Tables, at)
			across = append(across, map[string]any{"metric": info.ID, "category": info.Category, "higher_is_better": info.Higher, "replicates": len(a.replicates()), "rows": arows})
		}
	}
	rep.JSON["metrics"] = all
	if across != nil {
		rep.JSON["metrics_across_replicates"] = across
	}
	a.metricCurves(rep)
	data, err := a.metricsCSV()
	if err != nil {
		return err
	}
	rep.Files = append(rep.Files, File{Name: "metrics.csv", Data: data})
	return nil
}

// metricsCSV is every score of every record: one line a (pair, split,
// record, map, metric), map "draw <s>" or a summary's label; value empty
// and undefined saying why when the record has no score; curve the
// points of a curve metric separated by spaces. Numbers are Go's shortest
// float64 form. Pairs in recipe order, then splits, records, maps (draws,
// then summaries), metrics.
func (a *Analyser) metricsCSV() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"posterior", "replicate", "explainer", "split", "record", "label", "target", "predicted", "map", "metric", "value", "undefined", "curve"})
	line := func(p *pair, si, ri int, r *record, what string, k int, s metric.Score) {
		var v, curve []byte
		if s.Undefined == "" {
			v = strconv.AppendFloat(nil, s.Value, 'g', -1, 64)
		}
		for c, x := range s.Curve {
			if c > 0 {
				curve = append(curve, ' ')
			}
			curve = strconv.AppendFloat(curve, x, 'g', -1, 64)
		}
		_ = w.Write([]string{p.post, strconv.Itoa(p.rep), p.exp, a.s.Tests[si].Name, strconv.Itoa(ri), strconv.Itoa(r.label), strconv.Itoa(r.target), strconv.Itoa(r.pred),
			what, a.s.Metrics[k].ID, string(v), s.Undefined, string(curve)})
	}
	for _, p := range a.orderedPairs() {
		for si, recs := range p.recs {
			for ri, r := range recs {
				if r == nil || r.drawScores == nil {
					continue
				}
				for s := range p.draws {
					for k := range a.s.Metrics {
						if k < len(r.drawScores) && s < len(r.drawScores[k]) {
							line(p, si, ri, r, "draw "+strconv.Itoa(s), k, r.drawScores[k][s])
						}
					}
				}
				for i, label := range a.s.Summaries {
					for k := range a.s.Metrics {
						if k < len(r.sumScores) && i < len(r.sumScores[k]) && r.sumScores[k][i].Undefined != noMap {
							line(p, si, ri, r, label, k, r.sumScores[k][i])
						}
					}
				}
			}
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// RecordColumns are the metrics' columns of records.csv (false without
// metrics): per metric, "<id>" the score of the line's summary map and
// "<id>_draws" the mean of the record's draws' scores, in Go's shortest
// float64 form; empty where undefined or not scored.
func (a *Analyser) RecordColumns() (report.RecordColumns, bool) {
	if len(a.s.Metrics) == 0 {
		return report.RecordColumns{}, false
	}
	var head []string
	for _, m := range a.s.Metrics {
		head = append(head, m.ID, m.ID+"_draws")
	}
	cells := func(row *engine.Row, rec *engine.Record) []string {
		out := make([]string, len(head))
		r := a.recordOf(pairKey{row.Label, row.Replicate, row.ExplainerLabel}, rec.Split, rec.Index)
		i := slices.Index(a.s.Summaries, row.SummaryLabel)
		if r == nil {
			return out
		}
		for k := range a.s.Metrics {
			if v, ok := r.sumScore(k, i); ok && i >= 0 {
				out[2*k] = strconv.FormatFloat(v, 'g', -1, 64)
			}
			if m, _, ok, _ := r.drawStats(k); ok {
				out[2*k+1] = strconv.FormatFloat(m, 'g', -1, 64)
			}
		}
		return out
	}
	return report.RecordColumns{Header: head, Cells: cells}, true
}

// metricCurves draws, for each curve metric and pair, figures/metric-
// <id>-<i>-<posterior>_<explainer>.png and report.html's chart of the
// same lines (Report.Charts): the draws' curve (the mean over
// the records of each draw's curve, then over the draws) with the band
// from the lowest to the highest draw's, and each map summary's mean
// curve. A figure that cannot be drawn is a note.
func (a *Analyser) metricCurves(rep *Report) {
	for k, info := range a.s.Metrics {
		if !info.Curve {
			continue
		}
		for pi, p := range a.orderedPairs() {
			f, ok := a.curveFigure(p, k, info)
			if !ok {
				continue
			}
			var buf bytes.Buffer
			if err := figure.CurvesPlot(&buf, f); err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s curves of %s / %s not drawn: %v", info.ID, p.post, p.exp, err))
				continue
			}
			name := fmt.Sprintf("figures/metric-%s-%02d-%s_%s.png", report.Slug(strings.TrimPrefix(info.ID, "metric.")), pi+1, report.Slug(p.post), report.Slug(p.exp))
			rep.Files = append(rep.Files, File{Name: name, Data: buf.Bytes()})
			ch := report.Chart{Title: f.Title, XLabel: f.XLabel, YLabel: f.YLabel}
			for _, l := range f.Lines {
				ch.Lines = append(ch.Lines, report.ChartLine{Label: l.Label, Y: l.Y, Lo: l.Lo, Hi: l.Hi})
			}
			rep.Charts = append(rep.Charts, ch)
		}
	}
}

// curveFigure is metric k's curves of pair p (false: no record has a
// defined curve). Records whose curve is undefined or of another length
// than the first's are left out of every line.
func (a *Analyser) curveFigure(p *pair, k int, info metric.Info) (figure.Curves, bool) {
	n := -1
	p.each(func(r *record) {
		if n < 0 && k < len(r.drawScores) {
			for _, s := range r.drawScores[k] {
				if s.Undefined == "" && len(s.Curve) > 0 {
					n = len(s.Curve)
					return
				}
			}
		}
	})
	if n <= 0 {
		return figure.Curves{}, false
	}
	mean := func(pick func(r *record) (metric.Score, bool)) ([]float64, bool) {
		sum := make([]float64, n)
		cnt := 0
		p.each(func(r *record) {
			if s, ok := pick(r); ok && s.Undefined == "" && len(s.Curve) == n {
				for j, v := range s.Curve {
					sum[j] += v
				}
				cnt++
			}
		})
		if cnt == 0 {
			return nil, false
		}
		for j := range sum {
			sum[j] /= float64(cnt)
		}
		return sum, true
	}
	var perDraw [][]float64
	for s := range p.draws {
		if c, ok := mean(func(r *record) (metric.Score, bool) {
			if k < len(r.drawScores) && s < len(r.drawScores[k]) {
				return r.drawScores[k][s], true
			}
			return metric.Score{}, false
		}); ok {
			perDraw = append(perDraw, c)
		}
	}
	if len(perDraw) == 0 {
		return figure.Curves{}, false
	}
	draws := figure.Curve{Label: fmt.Sprintf("draws (mean of %d)", len(perDraw)), Y: make([]float64, n)}
	if len(perDraw) > 1 {
		draws.Label = fmt.Sprintf("draws (mean, band: lowest to highest of %d)", len(perDraw))
		draws.Lo, draws.Hi = slices.Clone(perDraw[0]), slices.Clone(perDraw[0])
	}
	for _, c := range perDraw {
		for j, v := range c {
			draws.Y[j] += v / float64(len(perDraw))
			if draws.Lo != nil {
				draws.Lo[j], draws.Hi[j] = min(draws.Lo[j], v), max(draws.Hi[j], v)
			}
		}
	}
	xl := "step (regions or features removed)"
	if info.Category == metric.Randomisation {
		xl = "step (layers randomised)"
	}
	f := figure.Curves{Title: fmt.Sprintf("%s: %s / %s (mean over records)", info.ID, p.post, p.exp), XLabel: xl, YLabel: "curve value", Lines: []figure.Curve{draws}}
	for i, label := range a.s.Summaries {
		if c, ok := mean(func(r *record) (metric.Score, bool) {
			if k < len(r.sumScores) && i < len(r.sumScores[k]) {
				return r.sumScores[k][i], true
			}
			return metric.Score{}, false
		}); ok {
			f.Lines = append(f.Lines, figure.Curve{Label: label, Y: c})
		}
	}
	return f, true
}

// randomisedReport adds the table of [evaluate] randomise_draws: per pair
// and group, the mean over samples of the 1-Wasserstein distance between
// a record's S maps and its S maps under the re-initialised draws, the
// same relative to the maps' mean |R|, and the records (mean ± sd over
// the test splits). A distance near 0 says re-initialising the model
// leaves the explanation distribution where it was: the explainer does
// not read the model.
func (a *Analyser) randomisedReport(rep *Report) {
	t := report.Table{Title: "Randomisation of the whole posterior: 1-Wasserstein distance per sample between the draws' maps and the re-initialised draws' maps (mean over samples; relative: over the maps' mean |R|; mean ± sd over test splits)",
		Header: []string{"Method", "Scope", "W1", "W1 / mean |R|", "Records"}}
	type row struct {
		Posterior string `json:"posterior"`
		Replicate int    `json:"replicate,omitempty"`
		Explainer string `json:"explainer"`
		Scope     string `json:"scope"`
		W1        Stat   `json:"w1"`
		Relative  Stat   `json:"w1_relative"`
	}
	var js []row
	for _, p := range a.orderedPairs() {
		any, why := false, ""
		p.each(func(r *record) {
			any = any || r.randOK
			if why == "" {
				why = r.randWhy
			}
		})
		if why != "" {
			rep.Notes = append(rep.Notes, fmt.Sprintf("randomise_draws: %s / %s is left out of the randomisation table: %s", p.post, p.exp, why))
		}
		if !any {
			continue
		}
		for _, sc := range a.scopes() {
			w := a.scopeStat(p, sc.classes, func(r *record) (float64, bool) { return r.randW1, r.randOK && !math.IsNaN(r.randW1) })
			rel := a.scopeStat(p, sc.classes, func(r *record) (float64, bool) {
				return r.randW1 / r.meanAbs, r.randOK && r.meanAbs > 0 && !math.IsNaN(r.randW1)
			})
			js = append(js, row{p.post, p.rep, p.exp, sc.name, w, rel})
			t.Rows = append(t.Rows, []string{a.pairLabel(p), sc.name, pmG(w.Stat), report.PM3(rel.Stat), strconv.Itoa(w.Records)})
		}
	}
	if len(js) == 0 {
		return
	}
	rep.Tables = append(rep.Tables, t)
	rep.JSON["randomised_draws"] = js
}
