package metric

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// linearModel is a two-class model with logits (0, w . x): p_1(x) =
// sigmoid(w . x). It counts its calls and the inputs they carried.
type linearModel struct {
	nn.Model // Arch, InputGrad, LayerShape, LayerGrad: not called
	w        []float64
	calls    int
	inputs   int
}

func (m *linearModel) InputLen() int { return len(m.w) }
func (m *linearModel) Classes() int  { return 2 }
func (m *linearModel) Logits(_ context.Context, dst, x []float32) error {
	n := len(m.w)
	for b := range len(x) / n {
		var z float64
		for j, v := range x[b*n : (b+1)*n] {
			z += m.w[j] * float64(v)
		}
		dst[2*b], dst[2*b+1] = 0, float32(z)
	}
	return nil
}

func (m *linearModel) Probs(_ context.Context, dst, x []float32) error {
	m.calls++
	n := len(m.w)
	for b := range len(x) / n {
		m.inputs++
		var z float64
		for j, v := range x[b*n : (b+1)*n] {
			z += m.w[j] * float64(v)
		}
		p := 1 / (1 + math.Exp(-z))
		dst[2*b], dst[2*b+1] = float32(1-p), float32(p)
	}
	return nil
}

// linearInput is N records of C x T on a linear model with random
// weights and inputs; each record's map is its exact contribution
// w_j x_j to the logit of class 1, its target.
func linearInput(N, C, T int, seed uint64) *Input {
	r := rand.New(rand.NewPCG(seed, 1))
	n := C * T
	m := &linearModel{w: make([]float64, n)}
	for j := range m.w {
		m.w[j] = r.NormFloat64() / math.Sqrt(float64(n))
	}
	in := &Input{Model: m, N: N, C: C, T: T, X: make([]float32, N*n), Maps: make([]float64, N*n), Targets: make([]int, N)}
	for i := range N {
		in.Targets[i] = 1
		for j := range n {
			x := float32(r.NormFloat64())
			in.X[i*n+j] = x
			in.Maps[i*n+j] = m.w[j] * float64(x)
		}
	}
	return in
}

func newMetric(t *testing.T, id string, cfg sdk.Config) Metric {
	t.Helper()
	m, err := Builtin().New(id, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func scores(t *testing.T, m Metric, in *Input) []Score {
	t.Helper()
	dst := make([]Score, in.N)
	if err := m.Score(context.Background(), in, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestExactContributionsAreFaithful: on a linear model, the map of exact
// contributions w_j x_j, removed to the zero baseline, is more faithful
// than its reverse and than a random map: removing the most relevant
// regions first drops p_y the most (RegionPerturbation's MoRF area is
// larger than for the negated map, and than LeRF's), and PixelFlipping's
// and Selectivity's areas are smaller. And the curves meet their closed
// forms' relations: Selectivity's curve is p_y(x) minus
// RegionPerturbation's over all regions; PixelFlipping's one step of
// all samples is p_y of the baseline, 1/2.
func TestExactContributionsAreFaithful(t *testing.T) {
	in := linearInput(6, 2, 100, 3)
	neg := *in
	neg.Maps = slices.Clone(in.Maps)
	for j := range neg.Maps {
		neg.Maps[j] = -neg.Maps[j]
	}
	zero := sdk.Config{"perturb_baseline": BaselineZero}
	morf := newMetric(t, "metric.region_perturbation", with(zero, "patch_size", int64(10)))
	lerf := newMetric(t, "metric.region_perturbation", with(zero, "patch_size", int64(10), "order", "lerf"))
	sel := newMetric(t, "metric.selectivity", with(zero, "patch_size", int64(10)))
	pf := newMetric(t, "metric.pixel_flipping", with(zero, "features_in_step", int64(10)))
	pfAll := newMetric(t, "metric.pixel_flipping", with(zero, "features_in_step", int64(200)))
	good, bad, ler := scores(t, morf, in), scores(t, morf, &neg), scores(t, lerf, in)
	sg, sb := scores(t, sel, in), scores(t, sel, &neg)
	pg, pb := scores(t, pf, in), scores(t, pf, &neg)
	all := scores(t, pfAll, in)
	m := in.Model.(*linearModel)
	for i := range in.N {
		if !(good[i].Value > bad[i].Value && good[i].Value > ler[i].Value) {
			t.Errorf("record %d: MoRF area %v, of the negated map %v, LeRF %v: want the first the largest", i, good[i].Value, bad[i].Value, ler[i].Value)
		}
		if !(sg[i].Value < sb[i].Value && pg[i].Value < pb[i].Value) {
			t.Errorf("record %d: Selectivity %v vs %v, PixelFlipping %v vs %v: want the exact map's smaller", i, sg[i].Value, sb[i].Value, pg[i].Value, pb[i].Value)
		}
		if len(good[i].Curve) != 10 || len(sg[i].Curve) != 10 || len(pg[i].Curve) != 20 {
			t.Fatalf("curve lengths %d, %d, %d: want 10 regions of 10 steps, 20 steps of 10 samples", len(good[i].Curve), len(sg[i].Curve), len(pg[i].Curve))
		}
		var z float64
		for j, v := range in.X[i*200 : (i+1)*200] {
			z += m.w[j] * float64(v)
		}
		p0 := float32(1 / (1 + math.Exp(-z)))
		for k, d := range good[i].Curve {
			if want := float64(p0 - float32(sg[i].Curve[k])); d != want {
				t.Errorf("record %d step %d: RegionPerturbation %v, p_y(x) - Selectivity = %v", i, k, d, want)
			}
		}
		if len(all[i].Curve) != 1 || all[i].Curve[0] != 0.5 || all[i].Value != 0 {
			t.Errorf("record %d: PixelFlipping of all samples at once: %+v, want the curve [0.5] of area 0", i, all[i])
		}
	}
	if m.calls > 4*11+4*20+2 {
		t.Errorf("%d model calls for 6 records: the copies are not batched", m.calls)
	}
}

// TestRecordsDoNotDependOnTheBatch: a record's score is the same bytes
// alone and in a batch, whatever the metric, with normalise by record;
// with normalise = "batch" (Quantus) a map's scale depends on the others.
func TestRecordsDoNotDependOnTheBatch(t *testing.T) {
	in := linearInput(5, 1, 60, 7)
	in.Keys = []uint64{11, 12, 13, 14, 15}
	in.Explain = func(_ context.Context, _ nn.Model, x []float32, _ []int, dst []float64) error {
		for j, v := range x {
			dst[j] = float64(v * v)
		}
		return nil
	}
	in.Masks = make([]bool, len(in.X))
	for j := range in.Masks {
		in.Masks[j] = j%60 >= 20 && j%60 < 40
	}
	reg := Builtin()
	for _, id := range reg.IDs() {
		if id == "metric.mprt" {
			continue // a network uaxai computes: TestMPRTClosedForms
		}
		cfg := sdk.Config{}
		switch id {
		case "metric.region_perturbation", "metric.selectivity":
			cfg["patch_size"] = int64(6)
		case "metric.top_k_intersection":
			cfg["k"] = int64(10)
		case "metric.faithfulness_correlation":
			cfg["subset_size"], cfg["nr_runs"] = int64(10), int64(20)
		case "metric.monotonicity_correlation":
			cfg["nr_samples"], cfg["features_in_step"] = int64(3), int64(6)
		case "metric.sensitivity_n":
			cfg["nr_samples"], cfg["features_in_step"] = int64(4), int64(12)
		case "metric.max_sensitivity", "metric.avg_sensitivity", "metric.local_lipschitz_estimate":
			cfg["nr_samples"] = int64(4)
		}
		all := scores(t, newMetric(t, id, cfg), in)
		for i := range in.N {
			one := *in
			one.N, one.X, one.Maps, one.Targets, one.Masks, one.Keys = 1, in.X[i*60:(i+1)*60], in.Maps[i*60:(i+1)*60], in.Targets[i:i+1], in.Masks[i*60:(i+1)*60], in.Keys[i:i+1]
			got := scores(t, newMetric(t, id, cfg), &one)[0]
			if math.Float64bits(got.Value) != math.Float64bits(all[i].Value) || !slices.Equal(got.Curve, all[i].Curve) {
				t.Errorf("%s record %d: alone %+v, in the batch %+v", id, i, got, all[i])
			}
		}
	}
	// Sparseness adds 1e-7 after normalising: the batch's scale shows.
	b := scores(t, newMetric(t, "metric.sparseness", sdk.Config{"normalise": "batch"}), in)
	r := scores(t, newMetric(t, "metric.sparseness", nil), in)
	same := 0
	for i := range in.N {
		if b[i].Value == r[i].Value {
			same++
		}
	}
	if same == in.N {
		t.Error("normalise = batch gives the per-record scores: the batch's max is not used")
	}
}

// TestMapMetricsClosedForms: the complexity and localisation metrics on
// maps whose scores are known exactly.
func TestMapMetricsClosedForms(t *testing.T) {
	const n = 50
	mask := make([]bool, n)
	for j := 10; j < 20; j++ {
		mask[j] = true
	}
	flat, hot, inMask, outMask, ramp := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for j := range n {
		flat[j] = 0.3
		ramp[j] = float64(j)
		if mask[j] {
			inMask[j] = 1 + float64(j)
		} else {
			outMask[j] = 1 + float64(j)
		}
	}
	hot[15] = 2
	score := func(id string, a []float64) Score {
		t.Helper()
		in := &Input{N: 1, C: 1, T: n, X: make([]float32, n), Maps: a, Targets: []int{0}, Masks: mask}
		return scores(t, newMetric(t, id, nil), in)[0]
	}
	for _, c := range []struct {
		id   string
		a    []float64
		want float64
		tol  float64
	}{
		{"metric.sparseness", flat, 0, 1e-15},
		{"metric.sparseness", hot, float64(n-1) / (n * (1 + n*1e-7)), 1e-12}, // v = 1e-7 but one 1+1e-7
		{"metric.complexity", flat, math.Log(n), 1e-9},
		{"metric.complexity", hot, 0, 1e-9},
		{"metric.effective_complexity", hot, 1, 0},
		{"metric.effective_complexity", inMask, 10, 0},
		{"metric.relevance_mass_accuracy", inMask, 1, 0},
		{"metric.relevance_mass_accuracy", outMask, 0, 0},
		{"metric.relevance_mass_accuracy", flat, 10.0 / n, 1e-15},
		{"metric.relevance_rank_accuracy", inMask, 1, 0},
		{"metric.relevance_rank_accuracy", ramp, 0, 0}, // the top 10 are 40..49
		{"metric.pointing_game", hot, 1, 0},
		{"metric.pointing_game", ramp, 0, 0},
		{"metric.auc", inMask, 1, 0},
		{"metric.auc", outMask, 0, 0},
		{"metric.auc", flat, 0.5, 0},
		{"metric.auc", ramp, 10 * 10.0 / (10 * 40), 0}, // each of 10..19 beats the 10 outside samples 0..9 of 40
		{"metric.attribution_localisation", inMask, 1, 1e-9},
	} {
		got := score(c.id, c.a)
		if got.Undefined != "" || !(math.Abs(got.Value-c.want) <= c.tol) {
			t.Errorf("%s: %+v, want %v", c.id, got, c.want)
		}
	}
	for _, id := range []string{"metric.relevance_mass_accuracy", "metric.relevance_rank_accuracy", "metric.pointing_game", "metric.auc", "metric.attribution_localisation"} {
		in := &Input{N: 1, C: 1, T: n, X: make([]float32, n), Maps: ramp, Targets: []int{0}, Masks: make([]bool, n)}
		if got := scores(t, newMetric(t, id, nil), in)[0]; got.Undefined == "" || !math.IsNaN(got.Value) {
			t.Errorf("%s on an empty mask: %+v, want undefined", id, got)
		}
	}
	if got := score("metric.complexity", make([]float64, n)); got.Undefined == "" {
		t.Errorf("complexity of a zero map: %+v, want undefined", got)
	}
}

// TestBadInput: every fault of a configuration or a batch is an error
// naming the key or the record and what would be accepted.
func TestBadInput(t *testing.T) {
	reg := Builtin()
	for _, c := range []struct {
		id   string
		cfg  sdk.Config
		want string
	}{
		{"metric.nope", nil, "unknown metric"},
		{"metric.sparseness", sdk.Config{"patch_size": int64(3)}, `unknown key "patch_size" (accepted: abs, normalise)`},
		{"metric.sparseness", sdk.Config{"normalise": "max"}, `normalise = "max": want true`},
		{"metric.region_perturbation", sdk.Config{"perturb_baseline": "grey"}, `perturb_baseline = "grey": want one of`},
		{"metric.region_perturbation", sdk.Config{"order": "random"}, `order = "random": want "morf"`},
		{"metric.region_perturbation", sdk.Config{"patch_size": int64(0)}, "patch_size"},
		{"metric.effective_complexity", sdk.Config{"eps": -1.0}, "eps = -1: want a finite threshold >= 0"},
	} {
		if _, err := reg.New(c.id, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: error %v, want one containing %q", c.id, c.cfg, err, c.want)
		}
	}
	good := linearInput(2, 1, 40, 1)
	for _, c := range []struct {
		id   string
		cfg  sdk.Config
		edit func(in *Input)
		want string
	}{
		{"metric.sparseness", nil, func(in *Input) { in.Maps[45] = math.NaN() }, "record 1: map value 5 (channel 0, step 5) is NaN"},
		{"metric.sparseness", nil, func(in *Input) { in.X[3] = float32(math.Inf(1)) }, "record 0: input sample 3"},
		{"metric.sparseness", nil, func(in *Input) { in.Maps = in.Maps[:10] }, "need 80 input values, 80 map values and 2 targets; have 80, 10 and 2"},
		{"metric.auc", nil, func(in *Input) {}, "scores against a ground-truth mask: the records have none"},
		{"metric.pixel_flipping", nil, func(in *Input) { in.Model = nil }, "calls the model: no model given"},
		{"metric.pixel_flipping", nil, func(in *Input) { in.Targets[1] = 2 }, "record 1: target 2 is not a class of the model (0..1)"},
		{"metric.pixel_flipping", sdk.Config{"features_in_step": int64(7)}, func(in *Input) {}, "features_in_step = 7 does not divide a record's 1 x 40 = 40 samples"},
		{"metric.region_perturbation", sdk.Config{"patch_size": int64(50)}, func(in *Input) {}, "patch_size = 50 is longer than the records (40 steps)"},
		{"metric.region_perturbation", sdk.Config{"patch_size": int64(10), "regions_evaluation": int64(5)}, func(in *Input) {}, "regions_evaluation = 5, but a record of 40 steps has 4 regions"},
		{"metric.region_perturbation", sdk.Config{"perturb_baseline": "fundamental"}, func(in *Input) {}, "no fitted fundamental"},
		{"metric.top_k_intersection", sdk.Config{"k": int64(41)}, func(in *Input) { in.Masks = make([]bool, 80) }, "k = 41 is more than a record's 1 x 40 = 40 samples"},
	} {
		in := *good
		in.X, in.Maps, in.Targets = slices.Clone(good.X), slices.Clone(good.Maps), slices.Clone(good.Targets)
		c.edit(&in)
		err := newMetric(t, c.id, c.cfg).Score(context.Background(), &in, make([]Score, in.N))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.id, err, c.want)
		}
	}
}

// TestRegistry: IDs are checked and unique, and the built-ins each name a
// Quantus class and list their keys.
func TestRegistry(t *testing.T) {
	r := Builtin()
	e, _ := r.Lookup("metric.sparseness")
	for _, c := range []struct {
		id, want string
	}{
		{"sparseness", `want "metric." and a snake-case name`},
		{"metric.Sparse", "snake-case"},
		{"metric.sparseness", "registered twice"},
	} {
		e2 := e
		e2.Info.ID = c.id
		if err := r.Add(e2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add %q: %v, want %q", c.id, err, c.want)
		}
	}
	e.Info.ID, e.Info.Category = "metric.other", "beauty"
	if err := r.Add(e); err == nil || !strings.Contains(err.Error(), "category") {
		t.Errorf("a bad category: %v", err)
	}
	for _, id := range r.IDs() {
		e, _ := r.Lookup(id)
		if e.Info.Quantus == "" || len(e.Info.Params) == 0 || e.Info.Summary == "" {
			t.Errorf("%s: Info %+v lacks a Quantus class, keys or a summary", id, e.Info)
		}
		m, err := r.New(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m.Info().ID != id {
			t.Errorf("metric %s says it is %s", id, m.Info().ID)
		}
	}
}

// TestExactContributionsCorrelate: on a linear model, the map of exact
// contributions w_j x_j predicts every change of the logit when samples
// go to zero: FaithfulnessCorrelation, FaithfulnessEstimate and
// SensitivityN (on the logit, at every subset size) are 1 (up
// to the float32 logits' rounding), and the negated map scores -1.
// Monotonicity is 1 when every contribution is positive (restoring a
// sample only raises p_y) and 0 when one is negative. MonotonicityCorrelation
// ranks the exact map above its reverse.
func TestExactContributionsCorrelate(t *testing.T) {
	in := linearInput(4, 2, 50, 9)
	in.Keys = []uint64{1, 2, 3, 4}
	neg := *in
	neg.Maps = slices.Clone(in.Maps)
	for j := range neg.Maps {
		neg.Maps[j] = -neg.Maps[j]
	}
	zero := sdk.Config{"perturb_baseline": BaselineZero}
	fc := newMetric(t, "metric.faithfulness_correlation", sdk.Config{"perturb_baseline": BaselineZero, "subset_size": int64(20), "nr_runs": int64(30)})
	fe := newMetric(t, "metric.faithfulness_estimate", sdk.Config{"perturb_baseline": BaselineZero, "features_in_step": int64(5)})
	sn := newMetric(t, "metric.sensitivity_n", sdk.Config{"perturb_baseline": BaselineZero, "features_in_step": int64(10), "nr_samples": int64(8), "softmax": false})
	for _, m := range []Metric{fc, fe, sn} {
		for i, s := range scores(t, m, in) {
			if m == sn && (len(s.Curve) != 8 || slices.ContainsFunc(s.Curve, func(c float64) bool { return math.Abs(c-1) > 1e-5 })) {
				t.Errorf("SensitivityN record %d: curve %v, want 1 at each of the 8 sizes 10..80", i, s.Curve)
			}
			if !(math.Abs(s.Value-1) < 1e-5) {
				t.Errorf("%s record %d: %+v, want 1", m.Info().ID, i, s)
			}
		}
		for i, s := range scores(t, m, &neg) {
			if !(math.Abs(s.Value+1) < 1e-5) {
				t.Errorf("%s record %d, negated map: %+v, want -1", m.Info().ID, i, s)
			}
		}
	}
	// p_y of the probabilities instead of the logit: no longer exact.
	if s := scores(t, newMetric(t, "metric.faithfulness_estimate", sdk.Config{"perturb_baseline": BaselineZero, "features_in_step": int64(5), "softmax": true}), in)[0]; s.Value == 1 || s.Value < 0.9 {
		t.Errorf("FaithfulnessEstimate on p_y: %v, want close to 1 but not 1", s.Value)
	}

	pos := *in
	pos.X = slices.Clone(in.X)
	m := in.Model.(*linearModel)
	for i := range pos.N {
		for j := range 100 {
			x := float32(math.Abs(float64(pos.X[i*100+j])))
			if m.w[j] < 0 {
				x = -x
			}
			pos.X[i*100+j] = x // w_j x_j > 0: every contribution positive
			pos.Maps[i*100+j] = m.w[j] * float64(x)
		}
	}
	pos.Maps = slices.Clone(pos.Maps)
	mono := newMetric(t, "metric.monotonicity", with(zero, "features_in_step", int64(10)))
	for i, s := range scores(t, mono, &pos) {
		if s.Value != 1 || len(s.Curve) != 10 {
			t.Errorf("Monotonicity, positive contributions, record %d: %+v, want 1 over 10 steps", i, s)
		}
	}
	neg2 := pos
	neg2.X = slices.Clone(pos.X)
	neg2.X[17] = -50 * neg2.X[17] // one large negative contribution: restoring it lowers p_y
	neg2.Maps = slices.Clone(pos.Maps)
	neg2.Maps[17] = m.w[17] * float64(neg2.X[17])
	if s := scores(t, mono, &neg2)[0]; s.Value != 0 {
		t.Errorf("Monotonicity with a negative contribution: %+v, want 0", s)
	}

	mc := newMetric(t, "metric.monotonicity_correlation", sdk.Config{"features_in_step": int64(10), "nr_samples": int64(20)})
	good, bad := scores(t, mc, in), scores(t, mc, &neg)
	for i := range good {
		if good[i].Undefined != "" || bad[i].Undefined != "" {
			t.Fatalf("record %d: %+v, %+v", i, good[i], bad[i])
		}
	}
	// abs = true: the negated map has the same |a|, so the same score.
	for i := range good {
		if good[i].Value != bad[i].Value {
			t.Errorf("MonotonicityCorrelation record %d: %v for a, %v for -a: want equal with abs", i, good[i].Value, bad[i].Value)
		}
	}
}

// TestDrawsFollowTheKeys: the random metrics' scores are the same bytes
// for the same keys and change with them.
func TestDrawsFollowTheKeys(t *testing.T) {
	in := linearInput(3, 1, 40, 2)
	for _, c := range []struct {
		id  string
		cfg sdk.Config
	}{
		{"metric.faithfulness_correlation", sdk.Config{"subset_size": int64(5), "nr_runs": int64(10)}},
		{"metric.monotonicity_correlation", sdk.Config{"features_in_step": int64(4), "nr_samples": int64(2)}},
		{"metric.sensitivity_n", sdk.Config{"features_in_step": int64(10), "nr_samples": int64(3)}},
	} {
		m := newMetric(t, c.id, c.cfg)
		in.Keys = []uint64{5, 6, 7}
		a, b := scores(t, m, in), scores(t, m, in)
		in.Keys = []uint64{8, 9, 10}
		d := scores(t, m, in)
		for i := range a {
			if math.Float64bits(a[i].Value) != math.Float64bits(b[i].Value) {
				t.Errorf("%s record %d: %v then %v on the same keys", c.id, i, a[i].Value, b[i].Value)
			}
		}
		if a[0].Value == d[0].Value && a[1].Value == d[1].Value && a[2].Value == d[2].Value {
			t.Errorf("%s: the same scores for other keys", c.id)
		}
	}
}

// with returns c with the keys and values kv set.
func with(c sdk.Config, kv ...any) sdk.Config {
	o := c.Clone()
	for k := 0; k < len(kv); k += 2 {
		o[kv[k].(string)] = kv[k+1]
	}
	return o
}

// TestRobustnessClosedForms: an explainer whose map is the input itself
// changes exactly as the input does: LocalLipschitzEstimate (not
// normalised) is 1, and MaxSensitivity is max_s ||x - x'_s|| / ||x||,
// which for uniform noise on [-b, b] lies below b sqrt(n) / ||x||; one
// whose map ignores the input scores 0 on both; no explainer is an error.
func TestRobustnessClosedForms(t *testing.T) {
	in := linearInput(3, 2, 30, 4)
	in.Keys = []uint64{1, 2, 3}
	identity := func(_ context.Context, _ nn.Model, x []float32, _ []int, dst []float64) error {
		for j, v := range x {
			dst[j] = float64(v)
		}
		return nil
	}
	for j, v := range in.X {
		in.Maps[j] = float64(v)
	}
	in.Explain = identity
	ll := scores(t, newMetric(t, "metric.local_lipschitz_estimate", sdk.Config{"nr_samples": int64(7), "normalise": false}), in)
	ms := scores(t, newMetric(t, "metric.max_sensitivity", sdk.Config{"nr_samples": int64(7), "lower_bound": 0.05}), in)
	as := scores(t, newMetric(t, "metric.avg_sensitivity", sdk.Config{"nr_samples": int64(7), "lower_bound": 0.05}), in)
	for i := range in.N {
		if math.Abs(ll[i].Value-1) > 1e-6 {
			t.Errorf("record %d: Lipschitz estimate of the identity %v, want 1", i, ll[i].Value)
		}
		nx := 0.0
		for _, v := range in.X[i*60 : (i+1)*60] {
			nx += float64(v) * float64(v)
		}
		bound := 0.05 * math.Sqrt(60) / math.Sqrt(nx)
		if !(ms[i].Value > 0 && ms[i].Value <= bound && as[i].Value <= ms[i].Value) {
			t.Errorf("record %d: MaxSensitivity %v, AvgSensitivity %v: want 0 < avg <= max <= %v", i, ms[i].Value, as[i].Value, bound)
		}
	}
	in.Explain = func(_ context.Context, _ nn.Model, x []float32, _ []int, dst []float64) error {
		for j := range dst {
			dst[j] = float64(j % 60)
		}
		return nil
	}
	for j := range in.Maps {
		in.Maps[j] = float64(j % 60)
	}
	for _, id := range []string{"metric.local_lipschitz_estimate", "metric.max_sensitivity", "metric.avg_sensitivity"} {
		for i, s := range scores(t, newMetric(t, id, sdk.Config{"nr_samples": int64(3)}), in) {
			if s.Value != 0 {
				t.Errorf("%s record %d: %v for a map that ignores the input, want 0", id, i, s.Value)
			}
		}
	}
	in.Explain = nil
	if err := newMetric(t, "metric.max_sensitivity", nil).Score(context.Background(), in, make([]Score, in.N)); err == nil || !strings.Contains(err.Error(), "no explainer given") {
		t.Errorf("no explainer: %v", err)
	}
}

// TestInfidelityRandomLogitROADClosedForms: Infidelity of a linear
// model's gradient map w is 0 (each removal's logit change is w . (x -
// x')) up to float32 logits, and positive for another map; RandomLogit of an explainer blind to the class is 1 (the same map
// for both classes) under ssim and cosine; ROAD's imputation of a linear
// ramp with no noise rebuilds the removed interior samples exactly, so a
// prediction never moves, and a model at a tie predicts class 0 only.
func TestInfidelityRandomLogitROADClosedForms(t *testing.T) {
	in := linearInput(3, 2, 20, 6)
	lm := in.Model.(*linearModel)
	for j := range in.Maps {
		in.Maps[j] = lm.w[j%40]
	}
	inf := newMetric(t, "metric.infidelity", sdk.Config{"perturb_baseline": BaselineZero, "perturb_patch_sizes": []any{int64(1), int64(3)}})
	for i, s := range scores(t, inf, in) {
		if !(s.Value < 1e-9) {
			t.Errorf("Infidelity of the gradient, record %d: %v, want 0", i, s.Value)
		}
	}
	other := *in
	other.Maps = make([]float64, len(in.Maps))
	for j := range other.Maps {
		other.Maps[j] = in.Maps[len(in.Maps)-1-j]
	}
	for i, s := range scores(t, inf, &other) {
		if !(s.Value > 1e-4) {
			t.Errorf("Infidelity of a reversed map, record %d: %v, want > 0", i, s.Value)
		}
	}

	in.Keys = []uint64{1, 2, 3}
	in.Explain = func(_ context.Context, _ nn.Model, x []float32, _ []int, dst []float64) error {
		for j, v := range x {
			dst[j] = float64(v) * 2
		}
		return nil
	}
	for j, v := range in.X {
		in.Maps[j] = float64(v) * 2
	}
	for _, sim := range []string{"ssim", "cosine"} {
		for i, s := range scores(t, newMetric(t, "metric.random_logit", sdk.Config{"similarity_func": sim}), in) {
			if math.Abs(s.Value-1) > 1e-12 {
				t.Errorf("RandomLogit (%s) of a class-blind explainer, record %d: %v, want 1", sim, i, s.Value)
			}
		}
	}

	const T = 30
	ramp := &Input{N: 1, C: 1, T: T, X: make([]float32, T), Maps: make([]float64, T), Targets: []int{1}, Keys: []uint64{4}}
	w := make([]float64, T)
	for t := range T {
		ramp.X[t] = float32(t) + 1
		w[t] = 1
		ramp.Maps[t] = float64(min(t, T-1-t)) // the ends least relevant: interior runs only
	}
	ramp.Model = &linearModel{w: w}
	road := newMetric(t, "metric.road", sdk.Config{"noise": 0.0, "percentages": []any{int64(10), int64(50), int64(90)}})
	s := scores(t, road, ramp)[0]
	if !slices.Equal(s.Curve, []float64{1, 1, 1}) || s.Value != 1 {
		t.Errorf("ROAD on a ramp: %+v, want every prediction kept", s)
	}
	ramp.Model = &linearModel{w: make([]float64, T)} // p = (1/2, 1/2): class 0
	for y, want := range []float64{1, 0} {
		ramp.Targets[0] = y
		if s := scores(t, road, ramp)[0]; s.Value != want {
			t.Errorf("ROAD at a tie, target %d: %v, want %v", y, s.Value, want)
		}
	}
}

// TestMPRTClosedForms: re-initialising a layer draws what PyTorch's
// reset_parameters draws (uniform weights and biases within 1/sqrt(fan_in),
// a norm's scale 1 and shift 0, running statistics 0 and 1), the same
// values for the same seed; an explainer blind to the model scores 1 at
// every step, and a model that is not a network uaxai computes is refused.
func TestMPRTClosedForms(t *testing.T) {
	spec := graph.Spec{Name: "tiny", InChannels: 1, InLen: 12, Nodes: []graph.Node{
		{Name: "c1", Op: "conv1d", Attrs: map[string]any{"out": int64(3), "kernel": int64(4)}},
		{Name: "bn", Op: "batchnorm1d"},
		{Name: "gap", Op: "globalavgpool"},
		{Name: "fc", Op: "linear", Attrs: map[string]any{"out": int64(2)}},
	}}
	a := nn.GraphArch(spec)
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := Layers(lay); !slices.Equal(got, []string{"fc", "bn", "c1"}) {
		t.Fatalf("layers %v, want fc, bn, c1", got)
	}
	data := make([]float32, lay.Size)
	for j := range data {
		data[j] = 7
	}
	for _, l := range Layers(lay) {
		Reinitialise(data, lay, l, 42)
	}
	again := slices.Clone(data)
	for _, l := range Layers(lay) {
		Reinitialise(again, lay, l, 42)
	}
	if !slices.Equal(data, again) {
		t.Error("the same seed draws other values")
	}
	for _, tn := range lay.Tensors {
		v := data[tn.Offset : tn.Offset+tn.Size]
		bound := map[string]float64{"c1": 1 / math.Sqrt(4), "fc": 1 / math.Sqrt(3)}[tn.Name[:strings.Index(tn.Name, ".")]]
		for _, x := range v {
			switch tn.Name {
			case "bn.weight", "bn.running_var":
				if x != 1 {
					t.Errorf("%s = %v, want 1", tn.Name, x)
				}
			case "bn.bias", "bn.running_mean":
				if x != 0 {
					t.Errorf("%s = %v, want 0", tn.Name, x)
				}
			default:
				if !(math.Abs(float64(x)) <= bound) || x == 7 {
					t.Errorf("%s = %v, want within ±%v", tn.Name, x, bound)
				}
			}
		}
	}
	m, err := nn.Open(nn.Params{Arch: a, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{Model: m, N: 2, C: 1, T: 12, X: make([]float32, 24), Maps: make([]float64, 24), Targets: []int{0, 1}}
	for j := range in.X {
		in.X[j] = float32(j%12) - 5
		in.Maps[j] = float64(j%12) + 1
	}
	in.Explain = func(_ context.Context, _ nn.Model, x []float32, _ []int, dst []float64) error {
		for j := range dst {
			dst[j] = float64(j%12) + 1
		}
		return nil
	}
	for i, s := range scores(t, newMetric(t, "metric.mprt", nil), in) {
		if s.Value != 1 || !slices.Equal(s.Curve, []float64{1, 1, 1}) {
			t.Errorf("record %d: %+v, want 1 at every layer for a model-blind explainer", i, s)
		}
	}
	// With the gradient as the explainer the maps move; a record scores
	// the same bits alone as in the batch.
	in.Explain = func(ctx context.Context, m nn.Model, x []float32, y []int, dst []float64) error {
		g := make([]float32, len(x))
		if err := m.InputGrad(ctx, g, nil, x, y); err != nil {
			return err
		}
		for j, v := range g {
			dst[j] = float64(v)
		}
		return nil
	}
	mp := newMetric(t, "metric.mprt", sdk.Config{"layer_order": "independent"})
	both := scores(t, mp, in)
	for i := range 2 {
		one := *in
		one.N, one.X, one.Maps, one.Targets = 1, in.X[i*12:(i+1)*12], in.Maps[i*12:(i+1)*12], in.Targets[i:i+1]
		if got := scores(t, mp, &one)[0]; !slices.Equal(got.Curve, both[i].Curve) || both[i].Value == 1 {
			t.Errorf("record %d: alone %+v, in the batch %+v (want equal, and below 1)", i, got, both[i])
		}
	}
	in.Model = &linearModel{w: make([]float64, 12)}
	in.Targets = []int{0, 1}
	if err := newMetric(t, "metric.mprt", nil).Score(context.Background(), in, make([]Score, 2)); err == nil || !strings.Contains(err.Error(), "does not give its parameters") {
		t.Errorf("a model without parameters: %v", err)
	}
}

func TestFullID(t *testing.T) {
	for in, want := range map[string]string{"pixel_flipping": "metric.pixel_flipping", "metric.sparseness": "metric.sparseness"} {
		if got := FullID(in); got != want {
			t.Errorf("FullID(%q) = %q, want %q", in, got, want)
		}
	}
}
