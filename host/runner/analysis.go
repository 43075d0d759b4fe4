package runner

import (
	"fmt"
	"sync"

	"github.com/uaxai/uaxai/host/analysis"
	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/host/report"
	"github.com/uaxai/uaxai/sdk/metric"
)

// predictive is the predictive quality of each posterior (NLL, ECE with 15
// bins, Brier score, mean entropy, accuracy of the predictive mean), mean
// ± sd over the test splits: results.json "predictive" and a table.
type predictive struct {
	mu   sync.Mutex
	rows []predictiveRow
}

type predictiveRow struct {
	Posterior string                   `json:"posterior"`
	Label     string                   `json:"posterior_label"`
	Replicate *int                     `json:"replicate,omitempty"` // a replicated run's
	name      string                   // the table's: the label, with the replicate
	Splits    []eval.PredictiveQuality `json:"splits"`
	NLL       eval.Stat                `json:"nll"`
	ECE       eval.Stat                `json:"ece"`
	Brier     eval.Stat                `json:"brier"`
	Entropy   eval.Stat                `json:"entropy"`
}

// add scores one posterior's predictive probabilities on every split.
func (p *predictive) add(tests []engine.TestSplit, classes int, ps engine.Step, probs [][]float64) error {
	row := predictiveRow{Posterior: ps.ID, Label: ps.Label, name: ps.Name()}
	if ps.Replicated {
		row.Replicate = &ps.Replicate
	}
	var nll, ece, brier, ent []float64
	for si, pr := range probs {
		if tests[si].Unlabelled {
			continue // no class to score against
		}
		q, err := eval.Predictive(pr, classes, tests[si].Data.Y)
		if err != nil {
			return fmt.Errorf("split %s: %w", tests[si].Name, err)
		}
		row.Splits = append(row.Splits, q)
		nll, ece, brier, ent = append(nll, q.NLL), append(ece, q.ECE), append(brier, q.Brier), append(ent, q.Entropy)
	}
	if len(row.Splits) == 0 {
		return nil
	}
	row.NLL, row.ECE, row.Brier, row.Entropy = eval.StatOf(nll), eval.StatOf(ece), eval.StatOf(brier), eval.StatOf(ent)
	p.mu.Lock()
	p.rows = append(p.rows, row)
	p.mu.Unlock()
	return nil
}

func (p *predictive) table() report.Table {
	t := report.Table{Title: "Predictive quality of each posterior on the test splits (mean ± sd; beyond the paper)",
		Header: []string{"Posterior", "NLL", "ECE (15 bins)", "Brier", "Mean entropy"}}
	for _, r := range p.rows {
		t.Rows = append(t.Rows, []string{r.name, report.PM(r.NLL), report.PM(r.ECE), report.PM(r.Brier), report.PM(r.Entropy)})
	}
	return t
}

func (p *predictive) section() report.Section {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.rows) == 0 {
		return report.Section{Key: "predictive"}
	}
	return report.Section{Key: "predictive", Value: p.rows}
}

// paperTables are the paper's row tables the recipe asks for, in its order.
func (w *runWriter) paperTables(res *engine.Results) ([]report.Table, error) {
	var ts []report.Table
	for _, id := range w.r.Analysis.Paper {
		if !report.IsRowTable(id) {
			continue
		}
		t, err := report.PaperTable(res, id)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// newAnalyser is the analyser of the recipe's analysis tables and of the
// records report.html shows (every run has one).
func newAnalyser(w *runWriter, ds Datasets, groups map[string][]int, abs bool) *analysis.Analyser {
	r := w.r
	s := analysis.Setup{Analysis: r.Analysis, Seed: r.Seed, Tests: ds.Tests, Groups: groups, Abs: abs, Fs: ds.Rate, F0: ds.F0}
	for _, p := range r.Posteriors {
		s.Posteriors = append(s.Posteriors, p.Label)
	}
	for _, p := range r.Explainers {
		s.Explainers = append(s.Explainers, p.Label)
	}
	for _, p := range r.Summaries {
		s.Summaries = append(s.Summaries, p.Label)
	}
	for _, m := range r.Evaluate.Metrics {
		e, _ := metric.Builtin().Lookup(m.ID) // checked by the recipe
		s.Metrics = append(s.Metrics, e.Info)
	}
	return analysis.New(s)
}

// recipeMetrics builds [evaluate] metrics (checked when the recipe was
// read; an error here names the recipe's line all the same).
func recipeMetrics(r *recipe.Recipe) ([]metric.Metric, error) {
	reg := metric.Builtin()
	var out []metric.Metric
	for _, m := range r.Evaluate.Metrics {
		mm, err := reg.New(m.ID, m.Config)
		if err != nil {
			return nil, fmt.Errorf("recipe %s line %d: [evaluate] metrics: %w", r.Path, m.Line, err)
		}
		out = append(out, mm)
	}
	return out, nil
}
