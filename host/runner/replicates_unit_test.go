package runner

import (
	"math"
	"slices"
	"strings"
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

// TestMeanChannels: a replicated row's channel view is, statistic by
// statistic, the mean ± sd over the replicates of their means, with the
// counts summed; a one-channel row has none; replicates that disagree on
// the channels are an error.
func TestMeanChannels(t *testing.T) {
	stats := func(pl, rmaB float64, n int) eval.ChannelStats {
		s := eval.Stat{Mean: pl, N: 2}
		return eval.ChannelStats{PL: s, TopAcc: eval.Stat{Mean: 1 - pl, N: 2}, Chance: eval.Stat{Mean: 1.0 / 3, N: 2}, Scored: n,
			RMA: []eval.Stat{{Mean: 0.5, N: 2}, {Mean: rmaB, N: 2}, {}}, IoU: []eval.Stat{{}, {}, {}}, ChannelScored: []int{n, n, 0}}
	}
	row := func(pl, rmaB float64, n int) engine.Row {
		return engine.Row{Channels: &eval.ChannelAgg{Names: []string{"A", "B", "C"},
			Classes: []eval.ChannelClass{{Class: 1, ChannelStats: stats(pl, rmaB, n)}},
			Groups:  []eval.ChannelGroup{{Name: "all", Classes: []int{1}, ChannelStats: stats(pl/2, rmaB, n)}}}}
	}
	got, err := meanChannels([]engine.Row{row(0.4, 0.2, 10), row(0.6, 0.4, 12)})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Classes[0]
	want := eval.StatOf([]float64{0.4, 0.6})
	if c.PL != want || c.TopAcc != eval.StatOf([]float64{0.6, 0.4}) || c.RMA[1] != eval.StatOf([]float64{0.2, 0.4}) || c.RMA[2].N != 0 || c.Scored != 22 || c.ChannelScored[1] != 22 || c.Class != 1 {
		t.Errorf("class view %+v, want PL %+v, RMA_B over 0.2 and 0.4, channel C without data, 22 scored", c, want)
	}
	if g := got.Groups[0]; g.PL != eval.StatOf([]float64{0.2, 0.3}) || g.Name != "all" || !slices.Equal(g.Classes, []int{1}) || !slices.Equal(got.Names, []string{"A", "B", "C"}) {
		t.Errorf("group view %+v", g)
	}
	if v, err := meanChannels([]engine.Row{{}, {}}); v != nil || err != nil {
		t.Errorf("one channel: %v %v, want nil", v, err)
	}
	other := row(0.5, 0.5, 1)
	other.Channels.Names = []string{"ch0", "ch1", "ch2"}
	if _, err := meanChannels([]engine.Row{row(0.4, 0.2, 10), other}); err == nil || !strings.Contains(err.Error(), "replicate 1") {
		t.Errorf("channels that differ: %v, want an error naming replicate 1", err)
	}
}

// TestByReplicateKeepsClassNames: each replicate's results name the
// data's classes, so its records and tables do (the three-phase
// classes, not the one-phase PQD's).
func TestByReplicateKeepsClassNames(t *testing.T) {
	names := []string{"normal", "slg_sag"}
	res := &engine.Results{ClassNames: names, Rows: []engine.Row{{Replicate: 0}, {Replicate: 1}}}
	for r, rep := range byReplicate(res, 2) {
		if !slices.Equal(rep.ClassNames, names) || len(rep.Rows) != 1 || rep.Rows[0].Replicate != r {
			t.Errorf("replicate %d: class names %q, rows %+v", r, rep.ClassNames, rep.Rows)
		}
	}
}
