package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/sdk/metric"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestMetricAcrossReplicates: a metric's values of three replicates put
// together as the closed form says (mean, sd with divisor R-1, Student t
// quantile with R-1 degrees of freedom), each column over the replicates
// where it is defined, the gains' signs counted, and the rows of other
// explainers and scopes kept apart.
func TestMetricAcrossReplicates(t *testing.T) {
	a := New(Setup{Explainers: []string{"E", "F"}, Summaries: []string{"Mean", "Set"}})
	for r := range 3 {
		a.pairs[pairKey{"P", r, "E"}] = &pair{}
	}
	stat := func(m float64) Stat { return Stat{Stat: eval.Stat{Mean: m, SD: 1, N: 5}} }
	gain := func(m float64) *eval.Interval { return &eval.Interval{Mean: m, Lo: m - 1, Hi: m + 1, N: 30} }
	var rows []metricRowJSON
	draws := []float64{0.2, 0.5, 0.8}
	gains := []float64{0.1, 0.3, -0.1}
	for r := range 3 {
		row := metricRowJSON{Posterior: "P", Replicate: r, Explainer: "E", Scope: "all-15", Draws: stat(draws[r]),
			Summaries: []metricSumRow{{Summary: "Mean", Score: stat(draws[r] + gains[r]), Gain: gain(gains[r])}, {Summary: "Set", Why: "no map"}}}
		if r == 1 {
			row.Summaries[0].Score = Stat{} // no split with data: left out of the score's column only
		}
		rows = append(rows, row)
		// another scope and explainer of the same replicate: rows of their own
		rows = append(rows, metricRowJSON{Posterior: "P", Replicate: r, Explainer: "F", Scope: "disc-7", Draws: stat(10),
			Summaries: []metricSumRow{{Summary: "Mean", Score: stat(10), Gain: gain(0)}, {Summary: "Set"}}})
	}
	tab, js, ok, err := a.metricAcrossReplicates(metric.Info{ID: "metric.x"}, rows)
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	if len(js) != 2 || len(tab.Rows) != 2 {
		t.Fatalf("%d JSON rows, %d table rows; want 2 (one per explainer and scope)", len(js), len(tab.Rows))
	}
	want := func(xs []float64) (mean, lo, hi float64) {
		n := float64(len(xs))
		for _, x := range xs {
			mean += x
		}
		mean /= n
		var ss float64
		for _, x := range xs {
			ss += (x - mean) * (x - mean)
		}
		h := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975) * math.Sqrt(ss/(n-1)/n)
		return mean, mean - h, mean + h
	}
	check := func(name string, e *eval.Estimate, xs []float64) {
		t.Helper()
		m, lo, hi := want(xs)
		if e == nil || !e.Defined || e.N != len(xs) || math.Abs(e.Mean-m) > 1e-12 || math.Abs(e.Lo-lo) > 1e-12 || math.Abs(e.Hi-hi) > 1e-12 {
			t.Errorf("%s: %+v, want mean %v (%v, %v) over %d replicates", name, e, m, lo, hi, len(xs))
		}
	}
	p := js[0]
	if p.Explainer != "E" || p.Scope != "all-15" {
		t.Fatalf("first row %s %s, want E all-15 (the rows' order)", p.Explainer, p.Scope)
	}
	check("draws", p.Draws, draws)
	check("score", p.Summaries[0].Score, []float64{draws[0] + gains[0], draws[2] + gains[2]})
	check("gain", p.Summaries[0].Gain, gains)
	if p.Summaries[0].Up != 2 || p.Summaries[0].Down != 1 {
		t.Errorf("up %d down %d, want 2 and 1", p.Summaries[0].Up, p.Summaries[0].Down)
	}
	if s := p.Summaries[1]; s.Score != nil || s.Gain != nil || s.Up+s.Down != 0 {
		t.Errorf("a summary with no map: %+v, want no estimate", s)
	}
	cells := strings.Join(tab.Rows[0], "|")
	for _, w := range []string{"P / E|all-15|", "2 of 3", "|n/a|n/a|n/a"} {
		if !strings.Contains(cells, w) {
			t.Errorf("row %q lacks %q", cells, w)
		}
	}
	if q := js[1].Summaries[0]; q.Gain.Mean != 0 || q.Gain.Lo != 0 || q.Gain.Hi != 0 || q.Up+q.Down != 0 {
		t.Errorf("gains all 0: %+v, want 0 (0, 0), none up or down", q)
	}
	// One replicate: nothing to put together.
	one := New(Setup{Explainers: []string{"E"}, Summaries: []string{"Mean", "Set"}})
	one.pairs[pairKey{"P", 0, "E"}] = &pair{}
	if _, _, ok, _ := one.metricAcrossReplicates(metric.Info{ID: "metric.x"}, rows[:1]); ok {
		t.Error("a run of one replicate has a table across replicates")
	}
	// Two replicates, one explainer (the rows name the posterior alone),
	// the draws' column undefined in one of them.
	one.pairs[pairKey{"P", 1, "E"}] = &pair{}
	two := []metricRowJSON{rows[0], rows[2]}
	two[1].Draws = Stat{}
	tab, js, ok, err = one.metricAcrossReplicates(metric.Info{ID: "metric.x"}, two)
	if err != nil || !ok || len(js) != 1 {
		t.Fatalf("two replicates: ok %v, err %v, %d rows", ok, err, len(js))
	}
	if d := js[0].Draws; d == nil || d.Defined || d.N != 1 || d.Mean != draws[0] {
		t.Errorf("the draws defined in one replicate of two: %+v, want its value alone", d)
	}
	check("gain of two", js[0].Summaries[0].Gain, gains[:2])
	if tab.Rows[0][0] != "P" {
		t.Errorf("one explainer: the row is named %q, want the posterior alone", tab.Rows[0][0])
	}
	// A column defined in one replicate only: its value, marked as such.
	e, err := acrossEstimate([]float64{0.25})
	if err != nil || e.Defined || e.Mean != 0.25 || acrossCell(e, "%.3f") != "0.250 (1 replicate)" {
		t.Errorf("one value: %+v %v, cell %q", e, err, acrossCell(e, "%.3f"))
	}
}
