package runner

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/report"
)

// postCheck is what a posterior's check of itself gave the run
// (engine.Prediction): the feature-space out-of-distribution score of
// every record and how it was fitted, and its quality on the held-out
// records.
type postCheck struct {
	Posterior string               `json:"posterior"`
	Label     string               `json:"posterior_label"`
	Replicate int                  `json:"-"`
	Feature   *engine.FeatureCheck `json:"feature_check,omitempty"`
	Note      string               `json:"note,omitempty"` // why there is no feature check
	Quality   *heldOutQuality      `json:"held_out,omitempty"`
	name      string
	scores    [][]float64 // per split and record (nil: no feature check)
}

// heldOutQuality is a posterior's predictive quality on the held-out
// records (Datasets.HeldOut) and its confusion, Confusion[true][predicted].
type heldOutQuality struct {
	From string `json:"from"`
	eval.PredictiveQuality
	Confusion [][]int `json:"confusion"`
}

// Precision is the share of the held-out records predicted c that are of
// class c, and how many were predicted c (0, 0: none was).
func (q *heldOutQuality) Precision(c int) (float64, int) {
	n := 0
	for _, row := range q.Confusion {
		n += row[c]
	}
	if n == 0 {
		return 0, 0
	}
	return float64(q.Confusion[c][c]) / float64(n), n
}

// checks gathers every posterior's check, in plan order.
type checks struct {
	mu   sync.Mutex
	rows []*postCheck
}

// add takes a posterior's check from its predictions.
func (t *checks) add(ds Datasets, classes int, ps engine.Step, pred engine.Prediction) error {
	c := &postCheck{Posterior: ps.ID, Label: ps.Label, Replicate: ps.Replicate, name: ps.Name(), Feature: pred.FeatureCheck, Note: pred.FeatureNote}
	if pred.FeatureCheck != nil {
		c.scores = pred.FeatureOOD
	}
	if pred.HeldOut != nil && ds.HeldOut.N > 0 {
		q, err := eval.Predictive(pred.HeldOut, classes, ds.HeldOut.Y)
		if err != nil {
			return fmt.Errorf("%s: the held-out records: %w", ps.Name(), err)
		}
		conf := make([][]int, classes)
		for i := range conf {
			conf[i] = make([]int, classes)
		}
		for i, y := range ds.HeldOut.Y {
			row := pred.HeldOut[i*classes : (i+1)*classes]
			best := 0
			for j, v := range row {
				if v > row[best] {
					best = j
				}
			}
			conf[y][best]++
		}
		c.Quality = &heldOutQuality{From: ds.HeldOutFrom, PredictiveQuality: q, Confusion: conf}
	}
	t.mu.Lock()
	t.rows = append(t.rows, c)
	t.mu.Unlock()
	return nil
}

// of is the check of the posterior step with label and replicate (nil:
// none).
func (t *checks) of(label string, replicate int) *postCheck {
	for _, c := range t.rows {
		if c.Label == label && c.Replicate == replicate {
			return c
		}
	}
	return nil
}

// score is record (split, i)'s feature score under c and whether it is
// above the threshold, with the reason; ok false without one.
func (c *postCheck) score(split, i int) (s float64, flagged bool, why string, ok bool) {
	if c == nil || c.Feature == nil || split < 0 || split >= len(c.scores) || i < 0 || i >= len(c.scores[split]) {
		return 0, false, "", false
	}
	s = c.scores[split][i]
	if s > c.Feature.Threshold {
		why = fmt.Sprintf("outside what the model was trained on: its penultimate features lie %.3g from the nearest class's training records (squared Mahalanobis distance, mean over the draws; %.0f%% of validation records lie within %.3g)",
			s, 100*(1-c.Feature.Alpha), c.Feature.Threshold)
		return s, true, why, true
	}
	return s, false, "", true
}

// confusedWith says what the held-out records predicted c were: "12 of
// 18 flicker, 4 flicker_harmonics, 2 sag" (the largest first, at most
// three classes and "..." after).
func (q *heldOutQuality) confusedWith(c int, names []string) string {
	type tc struct{ class, n int }
	var got []tc
	total := 0
	for y, row := range q.Confusion {
		if row[c] > 0 {
			got = append(got, tc{y, row[c]})
			total += row[c]
		}
	}
	sort.SliceStable(got, func(i, j int) bool { return got[i].n > got[j].n })
	var parts []string
	for i, g := range got {
		if i == 3 {
			parts = append(parts, "...")
			break
		}
		name := strconv.Itoa(g.class)
		if g.class < len(names) {
			name = names[g.class]
		}
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%d of %d %s", g.n, total, name))
			continue
		}
		parts = append(parts, fmt.Sprintf("%d %s", g.n, name))
	}
	return strings.Join(parts, ", ")
}

// classTable says, for each class a posterior gave a recording's windows,
// what the held-out records it gave that class were.
func (t *checks) classTable(rows []windowRow, names []string) (report.Table, bool) {
	tb := report.Table{Title: "The classes given to the recording's windows, as the held-out records bear them out",
		Header: []string{"Posterior", "Class", "Windows", "Held-out records given it", "Of them truly it", "Held-out records given it were"}}
	seen := map[[2]string]int{}
	var keys [][2]string
	for _, r := range rows {
		k := [2]string{r.Label, r.Class}
		if _, ok := seen[k]; !ok {
			keys = append(keys, k)
		}
		seen[k]++
	}
	for _, k := range keys {
		c := t.of(k[0], 0)
		if c == nil || c.Quality == nil {
			continue
		}
		cls := slices.Index(names, k[1])
		if cls < 0 {
			continue
		}
		p, n := c.Quality.Precision(cls)
		share, with := "n/a", "none"
		if n > 0 {
			share, with = fmt.Sprintf("%.1f%%", 100*p), c.Quality.confusedWith(cls, names)
		}
		tb.Rows = append(tb.Rows, []string{c.name, k[1], strconv.Itoa(seen[k]), strconv.Itoa(n), share, with})
	}
	return tb, len(tb.Rows) > 0
}

// table is the held-out quality of every posterior that has one.
func (t *checks) table() (report.Table, bool) {
	tb := report.Table{Title: "Model quality on held-out labelled records, beside the recording's answers",
		Header: []string{"Posterior", "Records", "Accuracy", "NLL", "ECE (15 bins)", "Held out"}}
	for _, c := range t.rows {
		if q := c.Quality; q != nil {
			tb.Rows = append(tb.Rows, []string{c.name, strconv.Itoa(q.N), fmt.Sprintf("%.4f", q.Accuracy), fmt.Sprintf("%.4f", q.NLL), fmt.Sprintf("%.4f", q.ECE), q.From})
		}
	}
	return tb, len(tb.Rows) > 0
}

func (t *checks) section() report.Section {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.rows) == 0 {
		return report.Section{Key: "checks"}
	}
	return report.Section{Key: "checks", Value: t.rows}
}
