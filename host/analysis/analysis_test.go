package analysis

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/host/engine"
	"github.com/uaxai/uaxai/host/eval"
	"github.com/uaxai/uaxai/host/recipe"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/stat"
)

const N = 64

// world is a run of two splits of n records each, with labels cycling
// over classes 1..3, and S nonnegative random maps a record.
type world struct {
	setup   Setup
	batches []*engine.Batch
}

func newWorld(t *testing.T, an recipe.Analysis, n, S int, distort func(m []float64, rnd *rand.Rand) []float64) world {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	w := world{setup: Setup{Analysis: an, Seed: 9, Abs: true, Groups: map[string][]int{"all": {1, 2, 3}, "disc-7": {1, 2}},
		Posteriors: []string{"P"}, Explainers: []string{"E"}, Summaries: []string{"Mean"}}}
	for si := range 2 {
		name := []string{"test-0", "test-1"}[si]
		w.setup.Tests = append(w.setup.Tests, engine.TestSplit{Name: name, Data: sdk.Dataset{N: n, Len: N}})
		for r := range n {
			b := &engine.Batch{Posterior: engine.Step{Label: "P"}, Explainer: engine.Step{Label: "E"}, Split: si, SplitName: name,
				Records: []int{r}, Labels: []int{1 + r%3}, Targets: []int{1 + r%3}, Preds: []int{1 + r%3}, Probs: [][]float64{{0, 1, 0, 0}},
				X: [][]float32{make([]float32, N)}, Masks: [][]bool{make([]bool, N)}}
			for i := 10; i < 10+5+r%7; i++ {
				b.Masks[0][i] = true
			}
			maps := make([][]float64, S)
			for s := range maps {
				maps[s] = make([]float64, N)
				for i := range maps[s] {
					maps[s][i] = rnd.Float64()
					if b.Masks[0][i] {
						maps[s][i] += 0.5
					}
				}
			}
			b.Maps = [][][]float64{maps}
			if distort != nil {
				d := make([][]float64, S)
				for s := range d {
					d[s] = distort(maps[s], rnd)
				}
				b.Distorted = [][][][]float64{{d}}
			}
			w.batches = append(w.batches, b)
		}
	}
	return w
}

func (w world) run(t *testing.T, order []int) *Report {
	t.Helper()
	a := New(w.setup)
	for _, i := range order {
		if err := a.Batch(w.batches[i]); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := a.Finish(&engine.Results{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func identity(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = i
	}
	return o
}

func sens(d ...string) *recipe.Sensitivity {
	s := &recipe.Sensitivity{Records: "correct"}
	for _, x := range d {
		dd, err := recipe.ParseDistortion(x)
		if err != nil {
			panic(err)
		}
		s.Distortions = append(s.Distortions, dd)
	}
	return s
}

// An unchanged explanation has correlation 1, stability 1, W1 0 and no
// change in IoU; one shifted by c everywhere has W1 = c and correlation 1.
func TestSensitivityMetamorphic(t *testing.T) {
	for _, c := range []float64{0, 0.25} {
		w := newWorld(t, recipe.Analysis{Sensitivity: sens("amplitude 1.05")}, 12, 5, func(m []float64, _ *rand.Rand) []float64 {
			o := make([]float64, len(m))
			for i, v := range m {
				o[i] = v + c
			}
			return o
		})
		rep := w.run(t, identity(len(w.batches)))
		rows := rep.JSON["sensitivity"].(map[string]any)["rows"].([]sensJSON)
		if len(rows) != 2 {
			t.Fatalf("%d rows, want all-15 and disc-7", len(rows))
		}
		for _, r := range rows {
			if math.Abs(r.Corr.Mean-1) > 1e-12 || math.Abs(r.W1.Mean-c) > 1e-12 || r.Corr.N != 2 {
				t.Errorf("shift %g, %s: corr %v W1 %v", c, r.Scope, r.Corr, r.W1)
			}
			if c == 0 && (r.Stability.Mean != 1 || r.DeltaIoU.Mean != 0) {
				t.Errorf("%s: stability %v, dIoU %v", r.Scope, r.Stability, r.DeltaIoU)
			}
		}
		if rows[0].Scope != "all-15" || rows[0].W1.Records != 24 || rows[1].W1.Records != 16 {
			t.Errorf("scopes %s %d, %s %d", rows[0].Scope, rows[0].W1.Records, rows[1].Scope, rows[1].W1.Records)
		}
	}
}

// The aggregate is the macro over classes of the class means, split by
// split: computed here from the per-record values.
func TestGroupStatIsTheMacro(t *testing.T) {
	w := newWorld(t, recipe.Analysis{Sensitivity: sens("noise 20")}, 9, 4, func(m []float64, rnd *rand.Rand) []float64 {
		o := make([]float64, len(m))
		for i, v := range m {
			o[i] = v + 0.3*rnd.Float64()
		}
		return o
	})
	rep := w.run(t, identity(len(w.batches)))
	rows := rep.JSON["sensitivity"].(map[string]any)["rows"].([]sensJSON)
	var macros []float64
	for si := range 2 {
		sum := map[int]float64{}
		cnt := map[int]int{}
		for _, b := range w.batches {
			if b.Split != si {
				continue
			}
			clean, dist := absAll(b.Maps[0]), absAll(b.Distorted[0][0])
			sum[b.Labels[0]] += eval.CoordW1(clean, dist, nil)
			cnt[b.Labels[0]]++
		}
		m := 0.0
		for c := 1; c <= 3; c++ {
			m += sum[c] / float64(cnt[c])
		}
		macros = append(macros, m/3)
	}
	want := eval.StatOf(macros)
	if got := rows[0].W1.Stat; math.Abs(got.Mean-want.Mean) > 1e-15 || math.Abs(got.SD-want.SD) > 1e-15 {
		t.Errorf("W1 all-15 %+v, want %+v", got, want)
	}
}

func absAll(m [][]float64) [][]float64 {
	o := make([][]float64, len(m))
	for i, r := range m {
		o[i] = eval.Abs(nil, r)
	}
	return o
}

// Batches in any order give the same report bytes.
func TestOrderDoesNotMatter(t *testing.T) {
	an := recipe.Analysis{Sensitivity: sens("noise 30", "shift 4"), Calibration: &recipe.Calibration{Levels: []float64{0.5, 0.9}, Build: 3, Partitions: 4},
		Agreement: &recipe.Agreement{Etas: []float64{0.5, 1}, Deltas: []float64{0.2}}, Bound: &recipe.Bound{Delta: 0.05}}
	w := newWorld(t, an, 10, 6, func(m []float64, rnd *rand.Rand) []float64 {
		o := make([]float64, len(m))
		for i, v := range m {
			o[i] = v * (1 + 0.1*rnd.NormFloat64())
		}
		return o
	})
	w.batches = append(w.batches, w.batches...) // a batch seen twice keeps its last result
	w.batches = w.batches[:len(w.batches)/2]
	a := w.run(t, identity(len(w.batches)))
	order := identity(len(w.batches))
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	b := w.run(t, order)
	ja, _ := json.Marshal(a.JSON)
	jb, _ := json.Marshal(b.JSON)
	if string(ja) != string(jb) {
		t.Errorf("the order of batches changed the report:\n%s\n%s", ja, jb)
	}
	for _, k := range []string{"sensitivity", "calibration", "agreement", "bound"} {
		if a.JSON[k] == nil {
			t.Errorf("no %s section", k)
		}
	}
}

// Split coverage pools the records' covered coordinates; recomputed here
// with the band plugin. A posterior with another number of draws gets
// the leave-one-out min-max band, against (S-2)/S.
func TestCalibration(t *testing.T) {
	c := &recipe.Calibration{Levels: []float64{0.5, 0.8}, Build: 4, Partitions: 3}
	w := newWorld(t, recipe.Analysis{Calibration: c}, 6, 8, nil)
	rep := w.run(t, identity(len(w.batches)))
	rows := rep.JSON["calibration"].([]calJSON)
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for li, beta := range c.Levels {
		cov, tot := 0, 0
		for _, b := range w.batches {
			m := b.Maps[0]
			lo, up := stat.InterpolatedBand(make([]float64, N), make([]float64, N), m[:4], beta)
			for _, h := range m[4:] {
				for n, v := range h {
					if lo[n] <= v && v <= up[n] {
						cov++
					}
					tot++
				}
			}
		}
		if got, want := rows[li].Empirical, float64(cov)/float64(tot); got != want || rows[li].Records != 12 || rows[li].Band != "interpolated" {
			t.Errorf("level %g: %+v, want empirical %v", beta, rows[li], want)
		}
		// The reference: each record's partitions keyed by (split, record).
		ref := 0.0
		for _, b := range w.batches {
			ref += eval.PartitionReference(nil, nil, b.Maps[0], 4, beta, 3, w.setup.Seed, b.Split*100_000_000+b.Records[0])
		}
		ref /= float64(len(w.batches))
		if math.Abs(rows[li].Reference-ref) > 1e-15 || rows[li].Difference != rows[li].Empirical-rows[li].Reference {
			t.Errorf("level %g: reference %v (want %v), difference %v", beta, rows[li].Reference, ref, rows[li].Difference)
		}
	}
	w = newWorld(t, recipe.Analysis{Calibration: c}, 6, 3, nil)
	rows = w.run(t, identity(len(w.batches))).JSON["calibration"].([]calJSON)
	if len(rows) != 1 || rows[0].Level != 1.0/3 || rows[0].Empirical != 1.0/3 {
		t.Errorf("LOO rows of three draws %+v", rows)
	}
	w = newWorld(t, recipe.Analysis{Calibration: c}, 6, 5, nil)
	rep = w.run(t, identity(len(w.batches)))
	rows = rep.JSON["calibration"].([]calJSON)
	// A LOO row of a posterior that is not the ensemble gets no paper values.
	if tb := rep.Tables[0]; tb.Rows[0][5] != "n/a" {
		t.Errorf("a posterior P is not the paper's ensemble: %v", tb.Rows[0])
	}
	// Continuous draws: each coordinate has one strict minimum and one
	// strict maximum, so exactly S-2 of the S members are covered.
	if len(rows) != 1 || rows[0].Band != "loo-min-max" || rows[0].Level != 0.6 || rows[0].Reference != 0.6 || rows[0].Empirical != 0.6 {
		t.Errorf("LOO rows %+v", rows)
	}
}

func TestNoiseAtSNR(t *testing.T) {
	x := make([]float32, 64000)
	for i := range x {
		x[i] = float32(math.Sin(2 * math.Pi * float64(i) / 64))
	}
	for _, snr := range []float64{20, 30} {
		d := make([]float32, len(x))
		NoiseAtSNR(d, x, snr, 42)
		var ps, pn float64
		for i := range x {
			ps += float64(x[i]) * float64(x[i])
			e := float64(d[i]) - float64(x[i])
			pn += e * e
		}
		if got := 10 * math.Log10(ps/pn); math.Abs(got-snr) > 0.1 {
			t.Errorf("SNR %g dB: measured %.3f dB", snr, got)
		}
		d2 := make([]float32, len(x))
		NoiseAtSNR(d2, x, snr, 42)
		d3 := make([]float32, len(x))
		NoiseAtSNR(d3, x, snr, 43)
		if d2[100] != d[100] || d3[100] == d[100] {
			t.Error("the noise is not a function of its key")
		}
	}
}

func TestShiftAndAlign(t *testing.T) {
	x := make([]float32, 10)
	for i := range x {
		x[i] = float32(i)
	}
	for _, k := range []int{4, -4, 13} {
		d := make([]float32, 10)
		Shift(d, x, k)
		// The map of the shifted input, aligned back, is in the input's coordinates.
		m := make([]float64, 10)
		for i, v := range d {
			m[i] = float64(v)
		}
		back := eval.AlignShift(make([]float64, 10), m, k)
		for i := range back {
			if back[i] != float64(i) {
				t.Fatalf("shift %d: aligned back %v", k, back)
			}
		}
	}
	if d := (DistortionName(recipe.Distortion{Kind: "shift", Value: 4})); d != "Shift +4 samples" {
		t.Error(d)
	}
	dist := New(Setup{Analysis: recipe.Analysis{Sensitivity: sens("noise 30", "amplitude 0.95", "shift -4")}}).Distortions()
	if len(dist) != 3 || dist[0].Align != nil || dist[2].Align == nil || !strings.HasPrefix(dist[1].Name, "amplitude") {
		t.Errorf("distortions %+v", dist)
	}
	d := make([]float32, 3)
	dist[1].Apply(d, []float32{1, 2, 4}, "s", 0)
	if d[0] != 0.95 || d[2] != float32(0.95)*4 {
		t.Errorf("amplitude %v", d)
	}
}
