package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/figure"
	"github.com/uaxai/uaxai/host/paper"
	"github.com/uaxai/uaxai/host/report"
)

// This file turns the results of a replicated run (a plan with each
// posterior once a replicate, engine.Step.Replicate) into what results.json
// and the tables show: the rows of each replicate, and their aggregate.

// byReplicate files the rows and outputs of res by replicate: n
// Results, the notes with none of them (they are the run's).
func byReplicate(res *engine.Results, n int) []*engine.Results {
	out := make([]*engine.Results, n)
	for i := range out {
		out[i] = &engine.Results{Rows: []engine.Row{}, Outputs: []engine.Output{}, ClassNames: res.ClassNames}
	}
	for _, r := range res.Rows {
		out[r.Replicate].Rows = append(out[r.Replicate].Rows, r)
	}
	for _, o := range res.Outputs {
		out[o.Replicate].Outputs = append(out[o.Replicate].Outputs, o)
	}
	return out
}

// aggregateRows is the rows of a replicated run as the main tables show
// them: for each (posterior, explainer, summary) of the recipe, every
// statistic over the R replicates,
//
//	mean = (1/R) sum_r m_r,  sd = sd(m_1..m_R),  n = R,
//
// where m_r is replicate r's mean over the test splits (its row's Stat);
// a split's and a cell's values are their means over the replicates that
// score them, the counts are summed, the missing cells are any
// replicate's. The rows keep
// no records (each replicate's rows have theirs) and no fit metadata (it
// is each replicate's own).
func aggregateRows(reps []*engine.Results) ([]engine.Row, error) {
	if len(reps) == 0 {
		return nil, nil
	}
	out := make([]engine.Row, len(reps[0].Rows))
	for i, base := range reps[0].Rows {
		rows := make([]engine.Row, len(reps))
		for k, rep := range reps {
			if len(rep.Rows) != len(reps[0].Rows) {
				return nil, fmt.Errorf("replicate %d has %d rows, replicate 0 has %d", k, len(rep.Rows), len(reps[0].Rows))
			}
			rows[k] = rep.Rows[i]
			if r := rows[k]; r.Posterior != base.Posterior || r.Label != base.Label || r.Explainer != base.Explainer || r.Summary != base.Summary || r.SummaryLabel != base.SummaryLabel {
				return nil, fmt.Errorf("replicate %d's row %d is %s / %s / %s, replicate 0's %s / %s / %s", k, i, r.Label, r.ExplainerLabel, r.SummaryLabel, base.Label, base.ExplainerLabel, base.SummaryLabel)
			}
		}
		agg, err := meanAgg(rows)
		if err != nil {
			return nil, fmt.Errorf("%s / %s / %s: %w", base.Label, base.ExplainerLabel, base.SummaryLabel, err)
		}
		row := base
		row.Replicate, row.Records, row.Fit = 0, nil, map[string]string{}
		row.Agg = agg
		row.Accuracy = over(rows, func(r engine.Row) eval.Stat { return r.Accuracy })
		row.AccuracyBySplit = meanSplits(rows, func(r engine.Row) []float64 { return r.AccuracyBySplit })
		if row.Channels, err = meanChannels(rows); err != nil {
			return nil, fmt.Errorf("%s / %s / %s: %w", base.Label, base.ExplainerLabel, base.SummaryLabel, err)
		}
		out[i] = row
	}
	return out, nil
}

// over is the Stat over the replicates of each replicate's mean.
func over(rows []engine.Row, stat func(engine.Row) eval.Stat) eval.Stat {
	var ms []float64
	for _, r := range rows {
		if s := stat(r); s.N > 0 {
			ms = append(ms, s.Mean)
		}
	}
	return eval.StatOf(ms)
}

// meanSplits is the mean over the replicates of each split's value.
func meanSplits(rows []engine.Row, vals func(engine.Row) []float64) []float64 {
	out := make([]float64, len(vals(rows[0])))
	for _, r := range rows {
		for s, v := range vals(r) {
			out[s] += v / float64(len(rows))
		}
	}
	return out
}

// meanAgg is the aggregate of rows' Aggs over the replicates (see
// aggregateRows).
func meanAgg(rows []engine.Row) (eval.Agg, error) {
	base := rows[0].Agg
	out := eval.Agg{NSplits: base.NSplits, Classes: make([]eval.ClassAgg, len(base.Classes)), Groups: make([]eval.GroupAgg, len(base.Groups)), Missing: []eval.SplitClass{}}
	missing := map[eval.SplitClass]bool{}
	for _, r := range rows {
		a := r.Agg
		if a.NSplits != base.NSplits || len(a.Classes) != len(base.Classes) || len(a.Groups) != len(base.Groups) {
			return eval.Agg{}, fmt.Errorf("replicates with different splits, classes or groups")
		}
		addCounts(&out.Counts, a.Counts)
		for _, m := range a.Missing {
			missing[m] = true
		}
	}
	for s := range base.NSplits {
		for _, c := range base.Classes {
			if m := (eval.SplitClass{Split: s, Class: c.Class}); missing[m] {
				out.Missing = append(out.Missing, m)
			}
		}
	}
	for ci, c := range base.Classes {
		ca := eval.ClassAgg{Class: c.Class, Splits: make([]eval.Cell, len(c.Splits))}
		var stats, splits pairMeans
		for _, r := range rows {
			rc := r.Agg.Classes[ci]
			if rc.Class != c.Class || len(rc.Splits) != len(c.Splits) {
				return eval.Agg{}, fmt.Errorf("class %d: replicates differ in their classes or splits", c.Class)
			}
			if rc.RMA.N > 0 {
				stats.add(0, rc.RMA.Mean, rc.IoU.Mean)
			}
			addCounts(&ca.Counts, rc.Counts)
			for s, cell := range rc.Splits {
				if cell.Counts.Scored > 0 { // a missing cell is 0, not a score
					splits.add(s, cell.RMA, cell.IoU)
				}
				addCounts(&ca.Splits[s].Counts, cell.Counts)
			}
		}
		for s := range ca.Splits {
			ca.Splits[s].RMA, ca.Splits[s].IoU = splits.mean(s)
		}
		ca.RMA, ca.IoU = stats.stats()
		out.Classes[ci] = ca
	}
	for gi, g := range base.Groups {
		ga := eval.GroupAgg{Name: g.Name, Classes: g.Classes, Splits: make([]eval.GroupSplit, len(g.Splits))}
		var stats, splits pairMeans
		for _, r := range rows {
			rg := r.Agg.Groups[gi]
			if rg.Name != g.Name || len(rg.Splits) != len(g.Splits) {
				return eval.Agg{}, fmt.Errorf("group %s: replicates differ in their groups or splits", g.Name)
			}
			if rg.RMA.N > 0 {
				stats.add(0, rg.RMA.Mean, rg.IoU.Mean)
			}
			for s, gs := range rg.Splits {
				if gs.Classes > 0 { // a split without a scored class of the group is 0, not a score
					splits.add(s, gs.RMA, gs.IoU)
				}
				ga.Splits[s].Classes = max(ga.Splits[s].Classes, gs.Classes)
				ga.Splits[s].Missing = union(ga.Splits[s].Missing, gs.Missing)
			}
		}
		for s := range ga.Splits {
			ga.Splits[s].RMA, ga.Splits[s].IoU = splits.mean(s)
		}
		ga.RMA, ga.IoU = stats.stats()
		for s := range ga.Splits {
			if ga.Splits[s].Missing == nil {
				ga.Splits[s].Missing = []int{}
			}
		}
		out.Groups[gi] = ga
	}
	return out, nil
}

// pairMeans collects (RMA, IoU) pairs by slot (a split, or slot 0):
// the replicates' values that are scores.
type pairMeans struct{ rma, iou [][]float64 }

func (m *pairMeans) add(slot int, rma, iou float64) {
	for len(m.rma) <= slot {
		m.rma, m.iou = append(m.rma, nil), append(m.iou, nil)
	}
	m.rma[slot], m.iou[slot] = append(m.rma[slot], rma), append(m.iou[slot], iou)
}

// mean is the mean of a slot's pairs, (0, 0) for none.
func (m *pairMeans) mean(slot int) (rma, iou float64) {
	if slot >= len(m.rma) || len(m.rma[slot]) == 0 {
		return 0, 0
	}
	for k := range m.rma[slot] {
		rma += m.rma[slot][k]
		iou += m.iou[slot][k]
	}
	n := float64(len(m.rma[slot]))
	return rma / n, iou / n
}

// stats is the Stat of slot 0's values of each metric.
func (m *pairMeans) stats() (rma, iou eval.Stat) {
	if len(m.rma) == 0 {
		return eval.Stat{}, eval.Stat{}
	}
	return eval.StatOf(m.rma[0]), eval.StatOf(m.iou[0])
}

func addCounts(dst *eval.Counts, c eval.Counts) {
	dst.Scored += c.Scored
	dst.EmptyMask += c.EmptyMask
	dst.ZeroMass += c.ZeroMass
	dst.NonFinite += c.NonFinite
	dst.Unexplained += c.Unexplained
}

// union is a with the elements of b it lacks appended, in order.
func union(a, b []int) []int {
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	return a
}

// replicateJSON is one replicate of results.json's "replicates".
type replicateJSON struct {
	Replicate int              `json:"replicate"`
	Seed      uint64           `json:"seed"`
	Rows      []report.RowJSON `json:"rows"`
	Outputs   []engine.Output  `json:"outputs"`
}

// replicates returns what a run shows: without [replicates], res itself
// (the results and the records) and nothing more; with, the aggregate
// rows (aggregateRows) with the run's notes, every replicate's rows with
// the replicate in their label for records.csv, results.json's
// "replicates" (each replicate's seed, rows and outputs) and
// "replicate_stats" (computeReplicateStats), and the tables across
// replicates.
func (w *runWriter) replicates(res *engine.Results) (shown, records *engine.Results, secs []report.Section, tables []report.Table, err error) {
	if w.r.Replicates == nil {
		return res, res, nil, nil, nil
	}
	n := w.r.Replicates.N()
	reps := byReplicate(res, n)
	agg, err := aggregateRows(reps)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("replicates: %w", err)
	}
	st, err := computeReplicateStats(reps, agg)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("replicates: %w", err)
	}
	shown = &engine.Results{Rows: agg, Outputs: []engine.Output{}, Notes: res.Notes, ClassNames: res.ClassNames}
	records = &engine.Results{Notes: res.Notes, ClassNames: res.ClassNames}
	var list []replicateJSON
	for k, rep := range reps {
		rj := replicateJSON{Replicate: k, Seed: w.r.Replicates.Seed(w.r.Seed, k), Rows: report.RowsJSON(rep), Outputs: rep.Outputs}
		for _, r := range rep.Rows {
			r.Label = fmt.Sprintf("%s (replicate %d)", r.Label, k)
			records.Rows = append(records.Rows, r)
		}
		list = append(list, rj)
	}
	if err := w.replicateFigures(st); err != nil {
		return nil, nil, nil, nil, err
	}
	secs = []report.Section{{Key: "replicates", Value: list}, {Key: "replicate_stats", Value: st}}
	return shown, records, secs, st.tables(n), nil
}

// replicateFigures draws, for every pair of posteriors and group,
// figures/replicates-NN.png: each replicate's paired IoU difference with
// its interval over the test splits (the paper's protocol), the mean
// across replicates with its interval, and, for the deep ensemble against
// the deterministic network on disc-7, the paper's. It names each file in
// its pair (pairStats.Figure).
func (w *runWriter) replicateFigures(st *replicateStats) error {
	if err := os.MkdirAll(filepath.Join(w.dir, "figures"), 0o755); err != nil {
		return fmt.Errorf("run directory %s: %w", w.dir, err)
	}
	for i := range st.Pairs {
		p := &st.Pairs[i]
		f := figure.Intervals{Title: fmt.Sprintf("%s, %s IoU", p.Label, p.Group), XLabel: fmt.Sprintf("%s IoU: %s minus %s", p.Group, p.A, p.B), Zero: true}
		for r, e := range p.IoU.PerReplicate {
			f.Rows = append(f.Rows, figure.Interval{Label: fmt.Sprintf("replicate %d (%d splits)", r, e.N), Mean: e.Mean, Lo: e.Lo, Hi: e.Hi, Group: figure.IntervalReplicate})
		}
		a := p.IoU.Across
		f.Rows = append(f.Rows, figure.Interval{Label: fmt.Sprintf("across %d replicates", a.N), Mean: a.Mean, Lo: a.Lo, Hi: a.Hi, Group: figure.IntervalSummary})
		if p.Group == "disc-7" && paper.Method(p.PosteriorA) == "ensemble" && paper.Method(p.PosteriorB) == "deterministic" {
			g := paper.HeadlineGain
			f.Rows = append(f.Rows, figure.Interval{Label: "the paper (one seed)", Mean: g.Mean, Lo: g.Lo, Hi: g.Hi, Group: figure.IntervalPaper})
		}
		p.Figure = fmt.Sprintf("figures/replicates-%02d.png", i)
		if err := figure.IntervalsPlotFile(filepath.Join(w.dir, p.Figure), f); err != nil {
			return fmt.Errorf("%s: %w", p.Figure, err)
		}
	}
	return nil
}

// overReplicates retitles the tables of aggregate rows: their sd is over
// the replicates' means, not over the test splits.
func overReplicates(ts []report.Table, n int) []report.Table {
	for i := range ts {
		ts[i].Title = strings.ReplaceAll(ts[i].Title, "mean ± sd over test splits", fmt.Sprintf("mean ± sd over %d replicates' means over the test splits", n))
	}
	return ts
}

// meanChannels is the channel view of a replicated row: each statistic
// the mean ± sd over the replicates of each replicate's mean (Stat.N the
// replicates with data), the counts summed. nil when replicate 0's row
// has no channel view (one channel).
func meanChannels(rows []engine.Row) (*eval.ChannelAgg, error) {
	base := rows[0].Channels
	if base == nil {
		return nil, nil
	}
	for k, r := range rows {
		if c := r.Channels; c == nil || len(c.Classes) != len(base.Classes) || len(c.Groups) != len(base.Groups) || !slices.Equal(c.Names, base.Names) {
			return nil, fmt.Errorf("replicate %d's channel view differs in its classes, groups or channels from replicate 0's", k)
		}
	}
	mean := func(get func(*eval.ChannelAgg) eval.ChannelStats) eval.ChannelStats {
		st := get(base)
		out := eval.ChannelStats{RMA: make([]eval.Stat, len(st.RMA)), IoU: make([]eval.Stat, len(st.IoU)), ChannelScored: make([]int, len(st.ChannelScored))}
		of := func(stat func(eval.ChannelStats) eval.Stat) eval.Stat {
			return over(rows, func(r engine.Row) eval.Stat { return stat(get(r.Channels)) })
		}
		out.PL = of(func(s eval.ChannelStats) eval.Stat { return s.PL })
		out.TopAcc = of(func(s eval.ChannelStats) eval.Stat { return s.TopAcc })
		out.Chance = of(func(s eval.ChannelStats) eval.Stat { return s.Chance })
		for c := range out.RMA {
			out.RMA[c] = of(func(s eval.ChannelStats) eval.Stat { return s.RMA[c] })
			out.IoU[c] = of(func(s eval.ChannelStats) eval.Stat { return s.IoU[c] })
		}
		for _, r := range rows {
			s := get(r.Channels)
			out.Scored += s.Scored
			for c, n := range s.ChannelScored {
				out.ChannelScored[c] += n
			}
		}
		return out
	}
	agg := &eval.ChannelAgg{Names: slices.Clone(base.Names), Classes: make([]eval.ChannelClass, len(base.Classes)), Groups: make([]eval.ChannelGroup, len(base.Groups))}
	for i, cl := range base.Classes {
		agg.Classes[i] = eval.ChannelClass{Class: cl.Class, ChannelStats: mean(func(a *eval.ChannelAgg) eval.ChannelStats { return a.Classes[i].ChannelStats })}
	}
	for i, g := range base.Groups {
		agg.Groups[i] = eval.ChannelGroup{Name: g.Name, Classes: slices.Clone(g.Classes), ChannelStats: mean(func(a *eval.ChannelAgg) eval.ChannelStats { return a.Groups[i].ChannelStats })}
	}
	return agg, nil
}
