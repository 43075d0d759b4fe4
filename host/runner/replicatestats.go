package runner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/report"
)

// This file computes the statistics of a replicated run across replicates
// (host/eval/replicates.go): for each method, a score's mean over the
// replicates with the t-interval across replicate means; for each pair of
// posteriors under the same explainer and summary, the paired difference
// within each replicate, its mean and t-interval across replicates, and the
// replicates in which it is positive; and the variance of each score and
// difference split into between-seed and between-split parts. They go to
// results.json ("replicate_stats") and to three tables.

// replicateLevel is the confidence level of the intervals across
// replicates.
const replicateLevel = 0.95

// methodStats is one method (an aggregate row) across replicates.
type methodStats struct {
	Label     string                 `json:"label"`
	Posterior string                 `json:"posterior"`
	Explainer string                 `json:"explainer"`
	Summary   string                 `json:"summary"`
	Groups    []methodGroupStats     `json:"groups"`
	row       engine.Row             // the aggregate row
	byGroup   map[string][][]float64 // IoU matrix by group, for the pairs
}

type methodGroupStats struct {
	Group string                `json:"group"`
	RMA   eval.ReplicateSummary `json:"rma"`
	IoU   eval.ReplicateSummary `json:"iou"`
	// IoUComponents is the IoU's variance split by seed and split; nil
	// with fewer than 2 replicates or splits.
	IoUComponents *eval.Components `json:"iou_components"`
	// Splits are the test splits scored in every replicate (a split where
	// a replicate has no scored class of the group is left out).
	Splits []int `json:"splits"`
}

// pairStats is method A minus method B (two posteriors, the same
// explainer and summary) across replicates.
type pairStats struct {
	A, B       string                `json:"-"`
	Label      string                `json:"label"` // "A − B / explainer / summary"
	PosteriorA string                `json:"posterior_a"`
	PosteriorB string                `json:"posterior_b"`
	Explainer  string                `json:"explainer"`
	Summary    string                `json:"summary"`
	Group      string                `json:"group"`
	IoU        eval.PairedReplicates `json:"iou"`
	Components *eval.Components      `json:"iou_components"` // of the difference; nil as above
	Splits     []int                 `json:"splits"`
	Figure     string                `json:"figure"` // its forest plot, relative to the run directory
}

// replicateStats is results.json's "replicate_stats".
type replicateStats struct {
	Level   float64       `json:"level"`
	Methods []methodStats `json:"methods"`
	Pairs   []pairStats   `json:"pairs"`
}

// scoredSplits are the splits in which every replicate's row i scores a
// class of group gi.
func scoredSplits(reps []*engine.Results, i, gi int) []int {
	var out []int
	for s := range reps[0].Rows[i].Agg.Groups[gi].Splits {
		ok := true
		for _, rep := range reps {
			ok = ok && rep.Rows[i].Agg.Groups[gi].Splits[s].Classes > 0
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// scoreMatrix is y[r][k] = row i's group gi score of replicate r in split
// splits[k].
func scoreMatrix(reps []*engine.Results, i, gi int, splits []int, iou bool) [][]float64 {
	y := make([][]float64, len(reps))
	for r, rep := range reps {
		y[r] = make([]float64, len(splits))
		for k, s := range splits {
			gs := rep.Rows[i].Agg.Groups[gi].Splits[s]
			y[r][k] = gs.RMA
			if iou {
				y[r][k] = gs.IoU
			}
		}
	}
	return y
}

// computeReplicateStats computes the statistics of a replicated run from
// its replicates' results (byReplicate) and the aggregate rows.
func computeReplicateStats(reps []*engine.Results, agg []engine.Row) (*replicateStats, error) {
	st := &replicateStats{Level: replicateLevel}
	shown := &engine.Results{Rows: agg}
	for i, row := range agg {
		m := methodStats{Label: report.RowLabel(shown, row), Posterior: row.Posterior, Explainer: row.Explainer, Summary: row.SummaryLabel,
			row: row, byGroup: map[string][][]float64{}}
		for gi, g := range row.Agg.Groups {
			splits := scoredSplits(reps, i, gi)
			if len(splits) == 0 {
				continue
			}
			gs := methodGroupStats{Group: g.Name, Splits: splits}
			var err error
			if gs.RMA, err = eval.AcrossReplicates(scoreMatrix(reps, i, gi, splits, false), replicateLevel); err != nil {
				return nil, fmt.Errorf("%s, %s RMA: %w", m.Label, g.Name, err)
			}
			iou := scoreMatrix(reps, i, gi, splits, true)
			if gs.IoU, err = eval.AcrossReplicates(iou, replicateLevel); err != nil {
				return nil, fmt.Errorf("%s, %s IoU: %w", m.Label, g.Name, err)
			}
			if len(reps) >= 2 && len(splits) >= 2 {
				c, err := eval.VarianceComponents(iou)
				if err != nil {
					return nil, fmt.Errorf("%s, %s IoU: %w", m.Label, g.Name, err)
				}
				gs.IoUComponents = &c
			}
			m.Groups = append(m.Groups, gs)
			m.byGroup[g.Name] = iou
		}
		st.Methods = append(st.Methods, m)
	}
	// Every pair of posteriors under one explainer and summary: the later
	// in the recipe minus the earlier (the ensemble minus the baseline).
	for j, a := range st.Methods {
		for k := 0; k < j; k++ {
			b := st.Methods[k]
			if a.row.Label == b.row.Label || a.row.ExplainerLabel != b.row.ExplainerLabel || a.row.SummaryLabel != b.row.SummaryLabel {
				continue
			}
			for gi, g := range a.row.Agg.Groups {
				splits := common(scoredSplits(reps, j, gi), scoredSplits(reps, k, gi))
				if len(splits) == 0 {
					continue
				}
				ya, yb := scoreMatrix(reps, j, gi, splits, true), scoreMatrix(reps, k, gi, splits, true)
				p := pairStats{A: a.row.Label, B: b.row.Label, PosteriorA: a.Posterior, PosteriorB: b.Posterior, Explainer: a.row.ExplainerLabel, Summary: a.row.SummaryLabel,
					Group: g.Name, Splits: splits}
				p.Label = a.row.Label + " − " + b.row.Label
				if len(agg) > 0 && multi(agg, func(r engine.Row) string { return r.ExplainerLabel }) {
					p.Label += " / " + a.row.ExplainerLabel
				}
				if multi(agg, func(r engine.Row) string { return r.SummaryLabel }) {
					p.Label += " / " + a.row.SummaryLabel
				}
				var err error
				if p.IoU, err = eval.PairedAcrossReplicates(ya, yb, replicateLevel); err != nil {
					return nil, fmt.Errorf("%s, %s IoU: %w", p.Label, g.Name, err)
				}
				if len(reps) >= 2 && len(splits) >= 2 {
					d, err := eval.Difference(ya, yb)
					if err != nil {
						return nil, err
					}
					c, err := eval.VarianceComponents(d)
					if err != nil {
						return nil, fmt.Errorf("%s, %s IoU difference: %w", p.Label, g.Name, err)
					}
					p.Components = &c
				}
				st.Pairs = append(st.Pairs, p)
			}
		}
	}
	return st, nil
}

// common is the elements of a that b has, in a's order.
func common(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// multi reports whether rows take more than one value of key.
func multi(rows []engine.Row, key func(engine.Row) string) bool {
	seen := map[string]bool{}
	for _, r := range rows {
		seen[key(r)] = true
	}
	return len(seen) > 1
}

// ci is an estimate as "m [lo, hi]", or "m (n/a)" when its interval is
// undefined (one replicate, or one split).
func ci(e eval.Estimate, format string) string {
	m := fmt.Sprintf(format, e.Mean)
	if !e.Defined {
		return m + " (n/a)"
	}
	return fmt.Sprintf("%s ["+format+", "+format+"]", m, e.Lo, e.Hi)
}

// tables are the three tables across replicates.
func (st *replicateStats) tables(R int) []report.Table {
	var groups []string
	for _, m := range st.Methods {
		for _, g := range m.Groups {
			if !slices.Contains(groups, g.Group) {
				groups = append(groups, g.Group)
			}
		}
	}
	means := report.Table{Title: fmt.Sprintf("Localisation across %d training-seed replicates: the mean over replicates [95%% t-interval across the replicates' means]", R),
		Header: []string{"Method"}}
	for _, g := range groups {
		means.Header = append(means.Header, "RMA ("+g+")", "IoU ("+g+")")
	}
	for _, m := range st.Methods {
		row := []string{m.Label}
		for _, g := range groups {
			cells := []string{"n/a", "n/a"}
			for _, mg := range m.Groups {
				if mg.Group == g {
					cells = []string{ci(mg.RMA.Across, "%.4f"), ci(mg.IoU.Across, "%.4f")}
				}
			}
			row = append(row, cells...)
		}
		means.Rows = append(means.Rows, row)
	}
	pairs := report.Table{Title: fmt.Sprintf("Paired IoU differences within each replicate, then across the %d replicates (mean [95%% t-interval across replicates]; each replicate's difference [95%% t-interval over its test splits, the paper's protocol])", R),
		Header: []string{"Comparison", "Group", "Mean difference", "Replicates up", "Per replicate", "Figure"}}
	for _, p := range st.Pairs {
		var per []string
		for _, e := range p.IoU.PerReplicate {
			per = append(per, ci(e, "%+.3f"))
		}
		pairs.Rows = append(pairs.Rows, []string{p.Label, p.Group, ci(p.IoU.Across, "%+.4f"), fmt.Sprintf("%d of %d", p.IoU.Positive, p.IoU.Replicates), strings.Join(per, "; "), p.Figure})
	}
	comps := report.Table{Title: "Variance of IoU between training seeds and between test splits (two-way random effects, ANOVA estimators; REFERENCE.md, Statistics across replicates): the share of each part, and the sd of one seed's mean as the paper's protocol takes it (splits only) and as it is (seed and splits)",
		Header: []string{"Score", "Group", "Seed share", "Split share", "Residual share", "sd, splits only", "sd, seed and splits"}}
	add := func(name, group string, c *eval.Components) {
		if c == nil {
			return
		}
		comps.Rows = append(comps.Rows, []string{name, group, fmt.Sprintf("%.2f", c.SeedShare), fmt.Sprintf("%.2f", c.SplitShare), fmt.Sprintf("%.2f", c.ResidualShare),
			fmt.Sprintf("%.4f", math.Sqrt(c.VarSplitOnly)), fmt.Sprintf("%.4f", math.Sqrt(c.VarSingleSeed))})
	}
	for _, m := range st.Methods {
		for _, g := range m.Groups {
			add(m.Label, g.Group, g.IoUComponents)
		}
	}
	for _, p := range st.Pairs {
		add(p.Label, p.Group, p.Components)
	}
	out := []report.Table{means}
	if len(pairs.Rows) > 0 {
		out = append(out, pairs)
	}
	if len(comps.Rows) > 0 {
		out = append(out, comps)
	}
	return out
}
