package analysis

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/sdk/metric"
)

// A replicated run ([replicates]) trains every posterior again with other
// seeds; each replicate's (posterior, explainer) pair has its own row in
// a metric's table (metricsReport). The table here puts the replicates
// together: for each posterior, explainer and scope, with x_r replicate
// r's value of a column (the draws' mean d, a summary's score, or the
// summary's gain over the draws, each as replicate r's row gives it),
//
//	mean = (1/R') sum_r x_r,  [mean -+ t_{0.975, R'-1} sd(x) / sqrt(R')]
//
// over the R' replicates where the value is defined (eval.AcrossReplicates
// on one column), and for a gain the replicates whose gain is above 0 and
// below. A gain's interval across replicates is for the question "is the
// summary better than a single draw whatever the training seeds?", which
// the interval over records of one replicate cannot answer (it holds the
// networks fixed).

// acrossRow is one (posterior, explainer, scope) of results.json's
// "metrics_across_replicates".
type acrossRow struct {
	Posterior string          `json:"posterior"`
	Explainer string          `json:"explainer"`
	Scope     string          `json:"scope"`
	Draws     *eval.Estimate  `json:"draws"` // nil: no replicate has a value
	Summaries []acrossSummary `json:"summaries"`
}

type acrossSummary struct {
	Summary string         `json:"summary"`
	Score   *eval.Estimate `json:"score"`
	Gain    *eval.Estimate `json:"gain_over_draws"`
	// Up and Down count the replicates whose gain is > 0 and < 0.
	Up   int `json:"up"`
	Down int `json:"down"`
}

// replicates are the replicates of the analysed pairs, in order.
func (a *Analyser) replicates() []int {
	var reps []int
	for k := range a.pairs {
		if !slices.Contains(reps, k.rep) {
			reps = append(reps, k.rep)
		}
	}
	slices.Sort(reps)
	return reps
}

// acrossEstimate is the mean of xs with its 95% t interval across the
// replicates (nil for no value; Defined false for one).
func acrossEstimate(xs []float64) (*eval.Estimate, error) {
	if len(xs) == 0 {
		return nil, nil
	}
	y := make([][]float64, len(xs))
	for r, x := range xs {
		y[r] = []float64{x}
	}
	s, err := eval.AcrossReplicates(y, 0.95)
	if err != nil {
		return nil, err
	}
	return &s.Across, nil
}

// acrossCell formats an estimate: "mean (lo, hi)", "mean (1 replicate)",
// or "n/a".
func acrossCell(e *eval.Estimate, format string) string {
	if e == nil {
		return "n/a"
	}
	if !e.Defined {
		return fmt.Sprintf(format+" (%d replicate)", e.Mean, e.N)
	}
	return fmt.Sprintf(format+" ("+format+", "+format+")", e.Mean, e.Lo, e.Hi)
}

// metricAcrossReplicates is the table of metric info over the replicates
// of rows (metricsReport's rows of one metric, every replicate's), and
// its JSON rows. ok is false for a run of one replicate.
func (a *Analyser) metricAcrossReplicates(info metric.Info, rows []metricRowJSON) (report.Table, []acrossRow, bool, error) {
	reps := a.replicates()
	if len(reps) < 2 {
		return report.Table{}, nil, false, nil
	}
	t := report.Table{Title: fmt.Sprintf("%s across %d training-seed replicates: each replicate's value as in the table above, averaged over the replicates [95%% t interval across the replicates' values]; up: the replicates whose gain is above 0", info.ID, len(reps)),
		Header: []string{"Method", "Scope", "Draws"}}
	for _, s := range a.s.Summaries {
		t.Header = append(t.Header, s, s+" gain", s+" up")
	}
	type key struct{ post, exp, scope string }
	var order []key
	byKey := map[key][]metricRowJSON{}
	for _, r := range rows {
		k := key{r.Posterior, r.Explainer, r.Scope}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	var out []acrossRow
	for _, k := range order {
		rs := byKey[k]
		ar := acrossRow{Posterior: k.post, Explainer: k.exp, Scope: k.scope}
		var draws []float64
		for _, r := range rs {
			if r.Draws.N > 0 {
				draws = append(draws, r.Draws.Mean)
			}
		}
		var err error
		if ar.Draws, err = acrossEstimate(draws); err != nil {
			return report.Table{}, nil, false, fmt.Errorf("%s, %s / %s, %s, the draws: %w", info.ID, k.post, k.exp, k.scope, err)
		}
		cells := []string{a.methodLabel(k.post, k.exp), k.scope, acrossCell(ar.Draws, "%.3f")}
		for i, name := range a.s.Summaries {
			as := acrossSummary{Summary: name}
			var score, gain []float64
			for _, r := range rs {
				s := r.Summaries[i] // metricsReport gives every row every summary
				if s.Score.N > 0 {
					score = append(score, s.Score.Mean)
				}
				if s.Gain != nil {
					gain = append(gain, s.Gain.Mean)
					if s.Gain.Mean > 0 {
						as.Up++
					} else if s.Gain.Mean < 0 {
						as.Down++
					}
				}
			}
			if as.Score, err = acrossEstimate(score); err != nil {
				return report.Table{}, nil, false, fmt.Errorf("%s, %s / %s, %s, %s: %w", info.ID, k.post, k.exp, k.scope, name, err)
			}
			if as.Gain, err = acrossEstimate(gain); err != nil {
				return report.Table{}, nil, false, fmt.Errorf("%s, %s / %s, %s, %s gain: %w", info.ID, k.post, k.exp, k.scope, name, err)
			}
			up := "n/a"
			if len(gain) > 0 {
				up = strconv.Itoa(as.Up) + " of " + strconv.Itoa(len(gain))
			}
			cells = append(cells, acrossCell(as.Score, "%.3f"), acrossCell(as.Gain, "%+.3f"), up)
			ar.Summaries = append(ar.Summaries, as)
		}
		t.Rows = append(t.Rows, cells)
		out = append(out, ar)
	}
	return t, out, true, nil
}
