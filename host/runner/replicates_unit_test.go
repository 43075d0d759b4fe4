package runner

import (
	"math"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
)

// aggRow is a row of one class c and its group "g" over two splits whose
// IoU cells are iou (a NaN cell is missing: no scored record).
func aggRow(iou [2]float64) engine.Row {
	a := eval.Agg{NSplits: 2, Classes: []eval.ClassAgg{{Class: 3, Splits: make([]eval.Cell, 2)}}, Groups: []eval.GroupAgg{{Name: "g", Classes: []int{3}, Splits: make([]eval.GroupSplit, 2)}}}
	var ok []float64
	for s, v := range iou {
		if math.IsNaN(v) {
			a.Missing = append(a.Missing, eval.SplitClass{Split: s, Class: 3})
			a.Groups[0].Splits[s].Missing = []int{3}
			continue
		}
		a.Classes[0].Splits[s] = eval.Cell{IoU: v, RMA: v / 2, Counts: eval.Counts{Scored: 1}}
		a.Groups[0].Splits[s] = eval.GroupSplit{IoU: v, RMA: v / 2, Classes: 1, Missing: []int{}}
		ok = append(ok, v)
	}
	a.Classes[0].IoU, a.Groups[0].IoU = eval.StatOf(ok), eval.StatOf(ok)
	a.Classes[0].RMA, a.Groups[0].RMA = eval.StatOf(ok), eval.StatOf(ok)
	return engine.Row{Label: "m", Agg: a, Accuracy: eval.StatOf([]float64{0.5})}
}

// TestMeanAggLeavesMissingCellsOut: a split's value over the replicates is
// the mean of the replicates that score it (a missing cell is 0 in its
// row, not a score), the Stat is over the replicates' means, and a cell
// missing in any replicate is missing in the aggregate.
func TestMeanAggLeavesMissingCellsOut(t *testing.T) {
	rows := []engine.Row{aggRow([2]float64{0.2, 0.4}), aggRow([2]float64{0.6, math.NaN()}), aggRow([2]float64{0.1, 0.3})}
	a, err := meanAgg(rows)
	if err != nil {
		t.Fatal(err)
	}
	g := a.Groups[0]
	if want := (0.2 + 0.6 + 0.1) / 3; math.Abs(g.Splits[0].IoU-want) > 1e-15 {
		t.Errorf("split 0: %v, want %v", g.Splits[0].IoU, want)
	}
	if want := (0.4 + 0.3) / 2; math.Abs(g.Splits[1].IoU-want) > 1e-15 || math.Abs(a.Classes[0].Splits[1].IoU-want) > 1e-15 {
		t.Errorf("split 1 (missing in replicate 1): group %v, class %v; want %v over the two that score it", g.Splits[1].IoU, a.Classes[0].Splits[1].IoU, want)
	}
	if want := eval.StatOf([]float64{0.3, 0.6, 0.2}); math.Abs(g.IoU.Mean-want.Mean) > 1e-15 || math.Abs(g.IoU.SD-want.SD) > 1e-15 || g.IoU.N != 3 {
		t.Errorf("group IoU %+v, want %+v (over the replicates' means)", g.IoU, want)
	}
	if len(a.Missing) != 1 || a.Missing[0] != (eval.SplitClass{Split: 1, Class: 3}) || len(g.Splits[1].Missing) != 1 {
		t.Errorf("missing %v, group split 1 missing %v; want split 1 class 3", a.Missing, g.Splits[1].Missing)
	}
	if a.Classes[0].Counts.Scored != 0 || a.Classes[0].Splits[0].Counts.Scored != 3 {
		t.Errorf("counts %+v; want the replicates' summed", a.Classes[0].Splits[0].Counts)
	}
	if _, err := meanAgg([]engine.Row{aggRow([2]float64{0.1, 0.2}), {Label: "m", Agg: eval.Agg{NSplits: 3}}}); err == nil {
		t.Error("replicates with different splits were averaged")
	}
}
