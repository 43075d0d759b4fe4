package eval

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"
)

func TestMeanSDAgainstGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 300 {
		n := 2 + rng.IntN(40)
		xs := make([]float64, n)
		off := []float64{0, 1e6, -3e8}[trial%3]
		for i := range xs {
			xs[i] = off + rng.NormFloat64()*math.Pow(10, float64(rng.IntN(5)-2))
		}
		m, sd := MeanSD(xs)
		if wm := stat.Mean(xs, nil); !near(m, wm, 1e-14) {
			t.Errorf("trial %d: mean %v, gonum %v", trial, m, wm)
		}
		if wsd := stat.StdDev(xs, nil); !near(sd, wsd, 1e-9) {
			t.Errorf("trial %d: sd %v, gonum %v", trial, sd, wsd)
		}
	}
	// Closed form: {1, 2, 3, 4}: mean 2.5, sd sqrt(5/3).
	if m, sd := MeanSD([]float64{1, 2, 3, 4}); m != 2.5 || !near(sd, math.Sqrt(5.0/3), 1e-15) {
		t.Errorf("MeanSD(1..4) = %v, %v", m, sd)
	}
	// One value: sd 0 by convention (not NaN).
	if m, sd := MeanSD([]float64{0.42}); m != 0.42 || sd != 0 {
		t.Errorf("MeanSD(one) = %v, %v; want 0.42, 0", m, sd)
	}
	// Constant: exactly 0.
	if _, sd := MeanSD([]float64{0.1, 0.1, 0.1, 0.1, 0.1}); sd != 0 {
		t.Errorf("sd of a constant = %v", sd)
	}
	if s := StatOf(nil); s != (Stat{}) {
		t.Errorf("StatOf(nil) = %+v", s)
	}
}

func TestAccuracy(t *testing.T) {
	if a, ok := Accuracy([]int{1, 2, 3, 4}, []int{1, 0, 3, 4}); !ok || a != 0.75 {
		t.Errorf("Accuracy = %v, %v", a, ok)
	}
	if _, ok := Accuracy(nil, nil); ok {
		t.Error("Accuracy of nothing: ok")
	}
}

// synth draws records for nsplits splits and classes 0..15: class 0 has
// only empty masks (the normal class), the others 1..12 records per split
// of which some are skipped (zero mass or non-finite).
func synth(rng *rand.Rand, nsplits int) []Score {
	var out []Score
	for s := range nsplits {
		for c := range 16 {
			n := 1 + rng.IntN(12)
			for range n {
				sc := Score{Split: s, Class: c, RMA: rng.Float64(), IoU: rng.Float64(), OK: true}
				switch {
				case c == 0:
					sc = Score{Split: s, Class: c, Why: EmptyMask}
				case rng.IntN(10) == 0:
					sc = Score{Split: s, Class: c, Why: ZeroMass}
				case rng.IntN(20) == 0:
					sc = Score{Split: s, Class: c, Why: NonFinite}
				case rng.IntN(30) == 0:
					sc = Score{Split: s, Class: c} // OK false, no reason
				}
				out = append(out, sc)
			}
			// Make sure classes 1..15 have a scored record.
			if c > 0 {
				out = append(out, Score{Split: s, Class: c, RMA: rng.Float64(), IoU: rng.Float64(), OK: true})
			}
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// macroByWeights computes the macro of a group in a split a second way:
// one weighted sum over the records, each scored record of class c
// weighted by 1 / (|G| n_{s,c}).
func macroByWeights(scores []Score, split int, group []int, metric func(Score) float64) float64 {
	n := map[int]int{}
	for _, s := range scores {
		if s.OK && s.Split == split {
			n[s.Class]++
		}
	}
	in := map[int]bool{}
	for _, c := range group {
		in[c] = true
	}
	var sum float64
	for _, s := range scores {
		if s.OK && s.Split == split && in[s.Class] {
			sum += metric(s) / float64(len(group)*n[s.Class])
		}
	}
	return sum
}

func TestAggregateMacro(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	const nsplits = 5
	scores := synth(rng, nsplits)
	classes := seq(0, 16)
	groups := PaperGroups()
	a, err := Aggregate(scores, classes, groups, nsplits)
	if err != nil {
		t.Fatal(err)
	}
	rmaOf := func(s Score) float64 { return s.RMA }
	iouOf := func(s Score) float64 { return s.IoU }

	// Groups: per-split macros and their mean ± sd, against the weighted
	// sums and gonum.
	if got := []string{a.Groups[0].Name, a.Groups[1].Name}; !slices.Equal(got, []string{"all", "disc-7"}) {
		t.Fatalf("groups %v", got)
	}
	for _, g := range a.Groups {
		var wr, wi []float64
		for s := range nsplits {
			wr = append(wr, macroByWeights(scores, s, groups[g.Name], rmaOf))
			wi = append(wi, macroByWeights(scores, s, groups[g.Name], iouOf))
			if gs := g.Splits[s]; !near(gs.RMA, wr[s], 1e-13) || !near(gs.IoU, wi[s], 1e-13) || gs.Classes != len(groups[g.Name]) || len(gs.Missing) != 0 {
				t.Errorf("%s split %d: %+v, want RMA %v IoU %v", g.Name, s, gs, wr[s], wi[s])
			}
		}
		if g.RMA.N != nsplits || !near(g.RMA.Mean, stat.Mean(wr, nil), 1e-13) || !near(g.RMA.SD, stat.StdDev(wr, nil), 1e-10) {
			t.Errorf("%s RMA %+v, want %v ± %v", g.Name, g.RMA, stat.Mean(wr, nil), stat.StdDev(wr, nil))
		}
		if g.IoU.N != nsplits || !near(g.IoU.Mean, stat.Mean(wi, nil), 1e-13) || !near(g.IoU.SD, stat.StdDev(wi, nil), 1e-10) {
			t.Errorf("%s IoU %+v, want %v ± %v", g.Name, g.IoU, stat.Mean(wi, nil), stat.StdDev(wi, nil))
		}
	}

	// Classes: per-split means (a one-class group) and counts.
	var total Counts
	for ci, c := range classes {
		ca := a.Classes[ci]
		if ca.Class != c {
			t.Fatalf("class %d at %d", ca.Class, ci)
		}
		var want Counts
		for _, s := range scores {
			if s.Class == c {
				want.add(s)
			}
		}
		if ca.Counts != want {
			t.Errorf("class %d counts %+v, want %+v", c, ca.Counts, want)
		}
		total.plus(want)
		if c == 0 {
			if ca.RMA.N != 0 || ca.IoU.N != 0 || ca.Counts.Scored != 0 || ca.Counts.EmptyMask == 0 {
				t.Errorf("normal class: %+v", ca)
			}
			continue
		}
		var wr []float64
		for s := range nsplits {
			wr = append(wr, macroByWeights(scores, s, []int{c}, rmaOf))
			if !near(ca.Splits[s].RMA, wr[s], 1e-13) {
				t.Errorf("class %d split %d RMA %v, want %v", c, s, ca.Splits[s].RMA, wr[s])
			}
		}
		if !near(ca.RMA.Mean, stat.Mean(wr, nil), 1e-13) || !near(ca.RMA.SD, stat.StdDev(wr, nil), 1e-10) || ca.RMA.N != nsplits {
			t.Errorf("class %d RMA %+v", c, ca.RMA)
		}
	}
	if a.Counts != total || a.Counts.Scored+a.Counts.Skipped() != len(scores) {
		t.Errorf("counts %+v, want %+v (%d records)", a.Counts, total, len(scores))
	}
	if a.Counts.ZeroMass == 0 || a.Counts.NonFinite == 0 || a.Counts.Unexplained == 0 {
		t.Errorf("synthetic data lacks a skip reason: %+v", a.Counts)
	}
	// Only the normal class is missing, in every split.
	var wantMissing []SplitClass
	for s := range nsplits {
		wantMissing = append(wantMissing, SplitClass{s, 0})
	}
	if !slices.Equal(a.Missing, wantMissing) {
		t.Errorf("missing %v, want %v", a.Missing, wantMissing)
	}
	if ca, ok := a.Class(9); !ok || ca.Class != 9 {
		t.Error("Class(9) not found")
	}
	if _, ok := a.Group("disc-7"); !ok {
		t.Error(`Group("disc-7") not found`)
	}
	noNaN(t, reflect.ValueOf(a), "Agg")

	// The result does not depend on the record order.
	rng.Shuffle(len(scores), func(i, j int) { scores[i], scores[j] = scores[j], scores[i] })
	b, err := Aggregate(scores, classes, groups, nsplits)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Groups {
		if !near(a.Groups[i].IoU.Mean, b.Groups[i].IoU.Mean, 1e-13) {
			t.Errorf("record order changes %s", a.Groups[i].Name)
		}
	}
}

// noNaN walks v and fails on any NaN or Inf float.
func noNaN(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			t.Errorf("%s = %v", path, f)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			noNaN(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			noNaN(t, v.Index(i), path+"["+strconv.Itoa(i)+"]")
		}
	}
}

// TestAggregateMissing: a class without any scored record in one split is
// left out of that split's macros, reported, and never NaN.
func TestAggregateMissing(t *testing.T) {
	const nsplits = 3
	var scores []Score
	val := func(s, c int) float64 { return float64(10*s+c) / 100 }
	for s := range nsplits {
		for _, c := range []int{1, 2, 4} {
			if s == 1 && c == 4 {
				// Only skipped records for class 4 in split 1.
				scores = append(scores, Score{Split: s, Class: c, Why: ZeroMass}, Score{Split: s, Class: c, Why: EmptyMask})
				continue
			}
			scores = append(scores, Score{Split: s, Class: c, RMA: val(s, c), IoU: val(s, c) / 2, OK: true})
		}
	}
	// Class 3 has no record at all in split 2 and one elsewhere.
	scores = append(scores, Score{Split: 0, Class: 3, RMA: 0.5, IoU: 0.5, OK: true}, Score{Split: 1, Class: 3, RMA: 0.7, IoU: 0.7, OK: true})
	groups := map[string][]int{"g": {1, 2, 3, 4}, "only4": {4}}
	a, err := Aggregate(scores, []int{1, 2, 3, 4}, groups, nsplits)
	if err != nil {
		t.Fatal(err)
	}
	noNaN(t, reflect.ValueOf(a), "Agg")
	if want := []SplitClass{{1, 4}, {2, 3}}; !slices.Equal(a.Missing, want) {
		t.Errorf("missing %v, want %v", a.Missing, want)
	}
	g, _ := a.Group("g")
	// Split 1: classes 1, 2, 3 (4 missing).
	if gs := g.Splits[1]; gs.Classes != 3 || !slices.Equal(gs.Missing, []int{4}) || !near(gs.RMA, (val(1, 1)+val(1, 2)+0.7)/3, 1e-15) {
		t.Errorf("split 1: %+v", gs)
	}
	if gs := g.Splits[2]; gs.Classes != 3 || !slices.Equal(gs.Missing, []int{3}) {
		t.Errorf("split 2: %+v", gs)
	}
	if g.RMA.N != 3 {
		t.Errorf("g over %d splits, want 3", g.RMA.N)
	}
	o, _ := a.Group("only4")
	if o.RMA.N != 2 || o.Splits[1].Classes != 0 || o.Splits[1].RMA != 0 {
		t.Errorf("only4: %+v", o)
	}
	want := []float64{val(0, 4), val(2, 4)}
	if !near(o.RMA.Mean, stat.Mean(want, nil), 1e-15) || !near(o.RMA.SD, stat.StdDev(want, nil), 1e-12) {
		t.Errorf("only4 RMA %+v, want %v ± %v", o.RMA, stat.Mean(want, nil), stat.StdDev(want, nil))
	}
	c4, _ := a.Class(4)
	if c4.RMA.N != 2 || c4.Splits[1].Counts != (Counts{ZeroMass: 1, EmptyMask: 1}) || c4.Splits[1].RMA != 0 {
		t.Errorf("class 4: %+v", c4)
	}
	c3, _ := a.Class(3)
	if c3.RMA.N != 2 || c3.Splits[2].Counts != (Counts{}) {
		t.Errorf("class 3: %+v", c3)
	}
	// One split: sd 0, N 1.
	a1, err := Aggregate(scores[:3], []int{1, 2, 4}, map[string][]int{"x": {1, 2, 4}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a1.Groups[0].RMA.N != 1 || a1.Groups[0].RMA.SD != 0 {
		t.Errorf("one split: %+v", a1.Groups[0].RMA)
	}
}

func TestAggregateErrors(t *testing.T) {
	ok := []Score{{Split: 0, Class: 1, RMA: 0.5, IoU: 0.5, OK: true}}
	cases := []struct {
		name    string
		scores  []Score
		classes []int
		groups  map[string][]int
		nsplits int
		want    []string
	}{
		{"nsplits", ok, []int{1}, nil, 0, []string{"nsplits"}},
		{"no classes", ok, nil, nil, 1, []string{"no classes"}},
		{"dup class", ok, []int{1, 1}, nil, 1, []string{"class 1", "twice"}},
		{"empty group", ok, []int{1}, map[string][]int{"g": {}}, 1, []string{`"g"`, "no class"}},
		{"unknown group class", ok, []int{1}, map[string][]int{"g": {1, 7}}, 1, []string{`"g"`, "class 7"}},
		{"dup group class", ok, []int{1}, map[string][]int{"g": {1, 1}}, 1, []string{`"g"`, "twice"}},
		{"split", []Score{ok[0], {Split: 3, Class: 1}}, []int{1}, nil, 2, []string{"record 1", "split 3"}},
		{"negative split", []Score{{Split: -1, Class: 1}}, []int{1}, nil, 2, []string{"record 0", "split -1"}},
		{"class", []Score{ok[0], {Split: 0, Class: 0, Why: EmptyMask}}, []int{1}, nil, 1, []string{"record 1", "class 0"}},
		{"NaN", []Score{{Split: 0, Class: 1, RMA: math.NaN(), IoU: 0.5, OK: true}}, []int{1}, nil, 1, []string{"record 0", "NaN"}},
		{"range", []Score{{Split: 0, Class: 1, RMA: 0.5, IoU: 1.5, OK: true}}, []int{1}, nil, 1, []string{"record 0", "1.5"}},
		{"OK with reason", []Score{{Split: 0, Class: 1, OK: true, Why: ZeroMass}}, []int{1}, nil, 1, []string{"record 0", "zero relevance mass"}},
	}
	for _, c := range cases {
		_, err := Aggregate(c.scores, c.classes, c.groups, c.nsplits)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", c.name, err, w)
			}
		}
	}
}

// TestPaperTables checks the aggregation rule on the paper's own numbers:
// the "all" and "disc-7" IoU of tab:bnn_results and tab:xai_results are the
// unweighted means of the per-class IoU of tab:perclass_bnn and
// tab:perclass_xai over the 15 and the 7 classes (the mean over splits of
// per-split macros equals the macro of per-class means when no cell is
// missing). The per-class values are rounded to 3 decimals, so the macros
// agree to 5e-4 plus the 5e-5 rounding of the aggregate tables.
func TestPaperTables(t *testing.T) {
	// Class numbers of docs/spec/pqd-signals.md -> per-class IoU by method.
	perClass := map[string]map[int]float64{
		"Det.":      {7: .997, 13: .997, 14: .997, 15: .997, 6: .997, 4: .005, 3: .112, 12: .997, 8: .010, 5: .654, 1: .291, 10: .997, 9: .106, 2: .618, 11: .997},
		"Deep ens.": {7: .997, 13: .998, 14: .997, 15: .997, 6: .997, 4: .104, 3: .105, 12: .997, 8: .020, 5: .601, 1: .364, 10: .998, 9: .123, 2: .773, 11: .997},
		"Laplace":   {7: .997, 13: .997, 14: .997, 15: .997, 6: .997, 4: .006, 3: .141, 12: .997, 8: .011, 5: .665, 1: .281, 10: .998, 9: .078, 2: .619, 11: .997},
		"MC Drop.":  {7: .997, 13: .997, 14: .998, 15: .997, 6: .997, 4: .004, 3: .163, 12: .998, 8: .007, 5: .635, 1: .259, 10: .998, 9: .034, 2: .659, 11: .997},
		"Grad-CAM":  {7: .997, 13: .997, 14: .997, 15: .997, 6: .997, 4: .101, 3: .246, 12: .997, 8: .060, 5: .329, 1: .273, 10: .997, 9: .055, 2: .308, 11: .997},
		"LIME":      {7: .997, 13: .997, 14: .997, 15: .997, 6: .997, 4: .003, 3: .129, 12: .997, 8: .019, 5: .591, 1: .318, 10: .997, 9: .026, 2: .486, 11: .997},
		"Occlusion": {7: .997, 13: .998, 14: .997, 15: .997, 6: .997, 4: .108, 3: .105, 12: .997, 8: .020, 5: .601, 1: .364, 10: .998, 9: .126, 2: .773, 11: .997},
	}
	// IoU and IoU (disc-7) of tab:bnn_results and tab:xai_results.
	aggregate := map[string][2]float64{
		"Det.": {0.6514, 0.2565}, "Deep ens.": {0.6711, 0.2985}, "Laplace": {0.6518, 0.2573}, "MC Drop.": {0.6493, 0.2517},
		"Grad-CAM": {0.6232, 0.1961}, "LIME": {0.6365, 0.2247}, "Occlusion": {0.6716, 0.2995},
	}
	for method, pc := range perClass {
		var scores []Score
		for c, v := range pc {
			scores = append(scores, Score{Split: 0, Class: c, IoU: v, RMA: v, OK: true})
		}
		groups := PaperGroups()
		a, err := Aggregate(scores, groups["all"], groups, 1)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := a.Group("all")
		d7, _ := a.Group("disc-7")
		want := aggregate[method]
		if math.Abs(all.IoU.Mean-want[0]) > 5.5e-4 || math.Abs(d7.IoU.Mean-want[1]) > 5.5e-4 {
			t.Errorf("%s: macro IoU all %.4f disc-7 %.4f, paper %.4f %.4f", method, all.IoU.Mean, d7.IoU.Mean, want[0], want[1])
		}
	}
}
