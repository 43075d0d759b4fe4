package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/paper"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
)

// Report is what the analyses give a run: tables for tables.md and the
// terminal, a JSON section for results.json ("analysis"), and files for
// the run directory (figures, maps).
type Report struct {
	Tables []report.Table
	JSON   map[string]any
	Files  []File
	Notes  []string
	Charts []report.Chart // report.html's metric curves (the PNGs' data)
}

// File is one file of the run directory.
type File struct {
	Name string // relative to the run directory
	Data []byte
}

// groupNames are the groups as the paper's tables name them.
var groupNames = map[string]string{"all": "all-15", "disc-7": "disc-7"}

// Stat is a measure's mean ± sd over the splits, with the records that
// went into it.
type Stat struct {
	eval.Stat
	Records int `json:"records"`
}

// groupStat aggregates f over the records of a pair: per split the mean
// over each class's records where f is ok, the unweighted mean of those
// class means over the group's classes, then mean ± sd over the splits
// with data.
func (a *Analyser) groupStat(p *pair, classes []int, f func(r *record) (float64, bool)) Stat {
	var macros []float64
	n := 0
	for _, recs := range p.recs {
		sum := map[int]float64{}
		cnt := map[int]int{}
		for _, r := range recs {
			if r == nil || !slices.Contains(classes, r.label) {
				continue
			}
			if v, ok := f(r); ok {
				sum[r.label] += v
				cnt[r.label]++
				n++
			}
		}
		m, k := 0.0, 0
		for _, c := range classes {
			if cnt[c] > 0 {
				m += sum[c] / float64(cnt[c])
				k++
			}
		}
		if k > 0 {
			macros = append(macros, m/float64(k))
		}
	}
	return Stat{Stat: eval.StatOf(macros), Records: n}
}

func (a *Analyser) groupOrder() []string {
	var gs []string
	for _, g := range []string{"all", "disc-7"} {
		if _, ok := a.s.Groups[g]; ok {
			gs = append(gs, g)
		}
	}
	return gs
}

// each calls fn on every analysed record of the pair, in split and
// record order.
func (p *pair) each(fn func(r *record)) {
	for _, recs := range p.recs {
		for _, r := range recs {
			if r != nil {
				fn(r)
			}
		}
	}
}

// orderedPairs lists the pairs in recipe order: by posterior, its
// replicates in order (one, 0, without [replicates]), then by explainer.
func (a *Analyser) orderedPairs() []*pair {
	var reps []int
	for k := range a.pairs {
		if !slices.Contains(reps, k.rep) {
			reps = append(reps, k.rep)
		}
	}
	slices.Sort(reps)
	var out []*pair
	for _, ps := range a.s.Posteriors {
		for _, rep := range reps {
			for _, es := range a.s.Explainers {
				if p := a.pairs[pairKey{ps, rep, es}]; p != nil {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// pairLabel names a pair in a table: the posterior, with its replicate
// when the run has more than one ("Laplace (replicate 2)", as the
// predictive table names it), and the explainer when the run has more
// than one.
func (a *Analyser) pairLabel(p *pair) string {
	post := p.post
	if len(a.replicates()) > 1 {
		post = fmt.Sprintf("%s (replicate %d)", p.post, p.rep)
	}
	return a.methodLabel(post, p.exp)
}

// methodLabel is a table's name of a posterior and an explainer: the
// posterior, and the explainer when the run has more than one.
func (a *Analyser) methodLabel(post, exp string) string {
	if len(a.s.Explainers) > 1 {
		return post + " / " + exp
	}
	return post
}

func f3(v float64) string { return fmt.Sprintf("%.3f", v) }

// pmG is "mean ± sd" in 4 and 2 significant digits, "± n/a" over one split.
func pmG(s eval.Stat) string {
	switch s.N {
	case 0:
		return "n/a"
	case 1:
		return fmt.Sprintf("%.4g ± n/a", s.Mean)
	}
	return fmt.Sprintf("%.4g ± %.2g", s.Mean, s.SD)
}

func signed3(s eval.Stat) string {
	switch s.N {
	case 0:
		return "n/a"
	case 1:
		return fmt.Sprintf("%+.3f ± n/a", s.Mean)
	}
	return fmt.Sprintf("%+.3f ± %.3f", s.Mean, s.SD)
}

// DistortionName is a distortion as tab:sensitivity names it: "Noise 30
// dB", "Amplitude x 1.05", "Shift +4 samples".
func DistortionName(d recipe.Distortion) string {
	v := strconv.FormatFloat(d.Value, 'g', -1, 64)
	switch d.Kind {
	case recipe.DistortNoise:
		return "Noise " + v + " dB"
	case recipe.DistortAmplitude:
		return "Amplitude x " + v
	case recipe.DistortShift:
		if d.Value > 0 {
			v = "+" + v
		}
		return "Shift " + v + " samples"
	}
	return d.String()
}

type sensJSON struct {
	Posterior  string `json:"posterior"`
	Explainer  string `json:"explainer"`
	Distortion string `json:"distortion"`
	Scope      string `json:"scope"`
	Corr       Stat   `json:"corr"`
	Stability  Stat   `json:"topl_stability"`
	W1         Stat   `json:"w1"`
	DeltaIoU   Stat   `json:"delta_iou"`
}

func (a *Analyser) sensitivity(rep *Report) {
	sens := a.s.Analysis.Sensitivity
	if sens == nil {
		return
	}
	pt, _ := paper.Lookup("tab:sensitivity")
	t := report.Table{Title: "tab:sensitivity: sensitivity of the explanations to input distortions (mean ± sd over test splits; the paper's row under ours)",
		Header: []string{"Method", "Distortion", "Scope", "Corr.", "Top-L stability", "W1 shift", "ΔIoU", "Records"}}
	var js []sensJSON
	for _, p := range a.orderedPairs() {
		for d, dist := range sens.Distortions {
			name := DistortionName(dist)
			for _, g := range a.groupOrder() {
				classes := a.s.Groups[g]
				get := func(f func(s sensResult) (float64, bool)) Stat {
					return a.groupStat(p, classes, func(r *record) (float64, bool) {
						if d >= len(r.sens) {
							return 0, false
						}
						return f(r.sens[d])
					})
				}
				corr := get(func(s sensResult) (float64, bool) { return s.corr, s.corrOK })
				stab := get(func(s sensResult) (float64, bool) { return s.stab, s.stabOK })
				w1 := get(func(s sensResult) (float64, bool) { return s.w1, true })
				dIoU := get(func(s sensResult) (float64, bool) { return s.dIoU, s.iouOK })
				js = append(js, sensJSON{p.post, p.exp, name, groupNames[g], corr, stab, w1, dIoU})
				t.Rows = append(t.Rows, []string{a.pairLabel(p), name, groupNames[g], report.PM3(corr.Stat), report.PM3(stab.Stat), report.PM3(w1.Stat), signed3(dIoU.Stat), strconv.Itoa(w1.Records)})
				if pt != nil {
					row := []string{"  (paper)", "", ""}
					for _, col := range []string{"Corr.", "Top-L stability", "W1 shift", "ΔIoU"} {
						v, ok := pt.Cell([]string{name, groupNames[g]}, col)
						if !ok {
							row = append(row, "n/a")
							continue
						}
						row = append(row, v.Text)
					}
					t.Rows = append(t.Rows, append(row, ""))
				}
			}
		}
	}
	rep.Tables = append(rep.Tables, t)
	rep.JSON["sensitivity"] = map[string]any{"records": sens.Records, "rows": js}
}

type calJSON struct {
	Posterior  string  `json:"posterior"`
	Explainer  string  `json:"explainer"`
	Band       string  `json:"band"`
	Level      float64 `json:"level"`
	Empirical  float64 `json:"empirical"`
	Reference  float64 `json:"reference"`
	Difference float64 `json:"difference"`
	Records    int     `json:"records"`
}

func (a *Analyser) calibration(rep *Report) {
	c := a.s.Analysis.Calibration
	if c == nil {
		return
	}
	pt, _ := paper.Lookup("tab:calibration")
	t := report.Table{Title: fmt.Sprintf("tab:calibration: band self-coverage (bands from %d draws evaluated on the other %d; reference: %d random partitions; a posterior with another number of draws: the leave-one-out min-max band)", c.Build, c.Build, c.Partitions),
		Header: []string{"Method", "Band level", "Empirical", "Reference", "Difference", "Paper (empirical / reference / difference)", "Records"}}
	var js []calJSON
	for _, p := range a.orderedPairs() {
		levels := c.Levels
		loo := false
		p.each(func(r *record) { loo = loo || r.loo })
		if loo {
			levels = []float64{float64(p.draws-2) / float64(p.draws)}
		}
		for li, lv := range levels {
			cov, tot, ref, n := 0, 0, 0.0, 0
			p.each(func(r *record) {
				if li < len(r.cal) {
					cov += r.cal[li].covered
					tot += r.cal[li].total
					ref += r.cal[li].ref
					n++
				}
			})
			if n == 0 {
				continue
			}
			emp := float64(cov) / float64(tot)
			ref /= float64(n)
			if loo {
				ref = lv // (S-2)/S, the same for every record
			}
			method, band := a.pairLabel(p), "interpolated"
			if loo {
				method += " (LOO min-max)"
				band = "loo-min-max"
			}
			level := fmt.Sprintf("%.2f", lv)
			theirs := "n/a"
			if pt != nil {
				key := method
				if loo {
					key = "Deep ensemble (LOO min-max)"
				}
				e, ok1 := pt.Cell([]string{key, level}, "Empirical")
				rf, ok2 := pt.Cell([]string{key, level}, "Reference")
				df, ok3 := pt.Cell([]string{key, level}, "Difference")
				if ok1 && ok2 && ok3 && (!loo || paper.Method(p.post) == "ensemble") {
					theirs = e.Text + " / " + rf.Text + " / " + df.Text
				}
			}
			t.Rows = append(t.Rows, []string{method, level, f3(emp), f3(ref), fmt.Sprintf("%+.3f", emp-ref), theirs, strconv.Itoa(n)})
			js = append(js, calJSON{p.post, p.exp, band, lv, emp, ref, emp - ref, n})
		}
	}
	rep.Tables = append(rep.Tables, t)
	rep.JSON["calibration"] = js
}

type agreeJSON struct {
	Posterior string  `json:"posterior"`
	Explainer string  `json:"explainer"`
	Scope     string  `json:"scope"`
	Eta       float64 `json:"eta"`
	Delta     float64 `json:"delta"`
	Precision Stat    `json:"precision"`
	Recall    Stat    `json:"recall"`
	F1        Stat    `json:"f1"`
	Empty     int     `json:"empty_sets"`
}

func (a *Analyser) agreement(rep *Report) {
	g := a.s.Analysis.Agreement
	if g == nil {
		return
	}
	t := report.Table{Title: "Agreement sets E[eta, delta] against the mask: precision, recall and F1 (mean ± sd over test splits; beyond the paper)",
		Header: []string{"Method", "Scope", "eta", "delta", "Precision", "Recall", "F1", "Empty sets"}}
	var js []agreeJSON
	for _, p := range a.orderedPairs() {
		for _, gr := range a.groupOrder() {
			classes := a.s.Groups[gr]
			for i, eta := range g.Etas {
				for k, delta := range g.Deltas {
					cell := i*len(g.Deltas) + k
					get := func(f func(m eval.SetMatch) float64) Stat {
						return a.groupStat(p, classes, func(r *record) (float64, bool) {
							if !r.agreeOK {
								return 0, false
							}
							return f(r.agree[cell]), true
						})
					}
					prec := get(func(m eval.SetMatch) float64 { return m.Precision })
					rec := get(func(m eval.SetMatch) float64 { return m.Recall })
					f1 := get(func(m eval.SetMatch) float64 { return m.F1 })
					empty := 0
					p.each(func(r *record) {
						if r.agreeOK && slices.Contains(classes, r.label) && r.agree[cell].Size == 0 {
							empty++
						}
					})
					js = append(js, agreeJSON{Posterior: p.post, Explainer: p.exp, Scope: groupNames[gr], Eta: eta, Delta: delta, Precision: prec, Recall: rec, F1: f1, Empty: empty})
					t.Rows = append(t.Rows, []string{a.pairLabel(p), groupNames[gr], strconv.FormatFloat(eta, 'g', -1, 64), strconv.FormatFloat(delta, 'g', -1, 64),
						report.PM3(prec.Stat), report.PM3(rec.Stat), report.PM3(f1.Stat), strconv.Itoa(empty)})
				}
			}
		}
	}
	rep.Tables = append(rep.Tables, t)
	rep.JSON["agreement"] = js
}

func (a *Analyser) bound(rep *Report) {
	bd := a.s.Analysis.Bound
	if bd == nil {
		return
	}
	t := report.Table{Title: fmt.Sprintf("Finite-sample term of cor:meanmap, C_x sqrt(log(2N/delta)/(2S)) at delta = %g, C_x the largest coordinate range of the draws", bd.Delta),
		Header: []string{"Method", "Draws", "Mean C_x", "Mean term", "Max term", "Records"}}
	type row struct {
		Posterior string  `json:"posterior"`
		Explainer string  `json:"explainer"`
		Draws     int     `json:"draws"`
		MeanCx    float64 `json:"mean_cx"`
		MeanTerm  float64 `json:"mean_term"`
		MaxTerm   float64 `json:"max_term"`
		Records   int     `json:"records"`
	}
	var js []row
	for _, p := range a.orderedPairs() {
		sc, st, mx, n := 0.0, 0.0, math.Inf(-1), 0
		p.each(func(r *record) {
			sc += r.cx
			st += r.term
			mx = max(mx, r.term)
			n++
		})
		if n == 0 {
			continue
		}
		js = append(js, row{p.post, p.exp, p.draws, sc / float64(n), st / float64(n), mx, n})
		t.Rows = append(t.Rows, []string{a.pairLabel(p), strconv.Itoa(p.draws), fmt.Sprintf("%.4f", sc/float64(n)), fmt.Sprintf("%.4f", st/float64(n)), fmt.Sprintf("%.4f", mx), strconv.Itoa(n)})
	}
	rep.Tables = append(rep.Tables, t)
	rep.JSON["bound"] = map[string]any{"delta": bd.Delta, "rows": js}
}

func (a *Analyser) totalVariance(rep *Report) {
	tv := a.s.Analysis.TotalVariance
	if tv == nil {
		return
	}
	t := report.Table{Title: fmt.Sprintf("Law of total variance (prop:totalvar): model and explainer variability of stochastic explainers, %d explainer seeds a draw (means over records and coordinates)", tv.Repeats),
		Header: []string{"Method", "Total variance", "Model variability", "Explainer variability", "Explainer share", "Records"}}
	type row struct {
		Posterior      string  `json:"posterior"`
		Explainer      string  `json:"explainer"`
		Total          float64 `json:"total"`
		Model          float64 `json:"model"`
		ExplainerVar   float64 `json:"explainer_variability"`
		ExplainerShare float64 `json:"explainer_share"`
		Records        int     `json:"records"`
	}
	var js []row
	for _, p := range a.orderedPairs() {
		var tot, mod, exp float64
		n := 0
		p.each(func(r *record) {
			if r.tv != nil {
				tot += r.tv.total
				mod += r.tv.model
				exp += r.tv.explainer
				n++
			}
		})
		if n == 0 {
			continue
		}
		share := exp / tot
		js = append(js, row{p.post, p.exp, tot / float64(n), mod / float64(n), exp / float64(n), share, n})
		t.Rows = append(t.Rows, []string{a.pairLabel(p), fmt.Sprintf("%.4g", tot/float64(n)), fmt.Sprintf("%.4g", mod/float64(n)), fmt.Sprintf("%.4g", exp/float64(n)), fmt.Sprintf("%.3f", share), strconv.Itoa(n)})
	}
	rep.Tables = append(rep.Tables, t)
	rep.JSON["total_variance"] = js
}

// Paired is the paper's headline comparison: the disc-7 IoU of the deep
// ensemble minus that of the deterministic network, split by split, with
// its 95% t-interval, for every (explainer, summary) that both have.
func Paired(res *engine.Results) (report.Table, []map[string]any) {
	t := report.Table{Title: "Paired disc-7 IoU difference, deep ensemble minus deterministic, across test splits (the paper: +0.042, 95% CI 0.035-0.049, all five splits up)",
		Header: []string{"Explainer / summary", "Mean difference", "95% t-interval", "Splits up", "Per split"}}
	var js []map[string]any
	for _, e := range res.Rows {
		if paper.Method(e.Posterior) != "ensemble" {
			continue
		}
		for _, d := range res.Rows {
			if paper.Method(d.Posterior) != "deterministic" || d.Explainer != e.Explainer || d.Summary != e.Summary || d.SummaryLabel != e.SummaryLabel || d.ExplainerLabel != e.ExplainerLabel {
				continue
			}
			ge, ok1 := e.Agg.Group("disc-7")
			gd, ok2 := d.Agg.Group("disc-7")
			if !ok1 || !ok2 || len(ge.Splits) != len(gd.Splits) {
				continue
			}
			a, b := make([]float64, len(ge.Splits)), make([]float64, len(gd.Splits))
			up := 0
			per := ""
			for i := range a {
				a[i], b[i] = ge.Splits[i].IoU, gd.Splits[i].IoU
				if a[i] > b[i] {
					up++
				}
				per += fmt.Sprintf("%+.3f ", a[i]-b[i])
			}
			name := e.ExplainerLabel + " / " + e.SummaryLabel
			iv, err := eval.PairedT(a, b, 0.95)
			if err != nil {
				t.Rows = append(t.Rows, []string{name, "n/a", err.Error(), fmt.Sprintf("%d of %d", up, len(a)), per})
				continue
			}
			t.Rows = append(t.Rows, []string{name, fmt.Sprintf("%+.4f", iv.Mean), fmt.Sprintf("%+.4f to %+.4f", iv.Lo, iv.Hi), fmt.Sprintf("%d of %d", up, len(a)), per})
			js = append(js, map[string]any{"explainer": e.Explainer, "summary": e.SummaryLabel, "difference": iv, "splits_up": up})
		}
	}
	return t, js
}
