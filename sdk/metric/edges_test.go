package metric

// Tests at the edges of the Input checks, the shared keys and the map,
// robustness, randomisation and ROAD metrics: each pins a boundary or a
// path the other tests leave open (the mutants a gremlins run on the
// files of sdk/metric outside the chain metrics left alive). Every
// expected value is worked out by hand from the metric's definition.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/nn/graph"
)

// wantErr fails t unless err contains want.
func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want one containing %q", what, err, want)
	}
}

// TestCheckEdges: a record of no channels or no samples is refused; a
// fundamental or a training mean of the right length passes and one of
// another length is refused; a bad input sample of a later record of
// several channels is named by its record, index, channel and step.
func TestCheckEdges(t *testing.T) {
	info := Info{ID: "metric.x"}
	for _, s := range [][2]int{{0, 5}, {2, 0}} {
		in := &Input{N: 1, C: s[0], T: s[1], Targets: []int{0}}
		wantErr(t, fmt.Sprintf("C = %d, T = %d", s[0], s[1]), in.Check(info), "want N >= 0 records of C >= 1 channels of T >= 1 samples")
	}
	const N, C, T = 2, 2, 40
	n := C * T
	good := func() *Input {
		return &Input{N: N, C: C, T: T, X: make([]float32, N*n), Maps: make([]float64, N*n), Targets: make([]int, N)}
	}
	in := good()
	in.Fundamental, in.TrainMean = make([]float32, N*n), make([]float32, n)
	if err := in.Check(info); err != nil {
		t.Errorf("a fundamental of %d values and a training mean of %d: %v", N*n, n, err)
	}
	in = good()
	in.Fundamental = make([]float32, n)
	wantErr(t, "a short fundamental", in.Check(info), "80 fundamental values for 2 records of 2 x 40 (want 160)")
	in = good()
	in.TrainMean = make([]float32, N*n)
	wantErr(t, "a long training mean", in.Check(info), "a training mean of 160 values for records of 2 x 40 (want 80)")
	in = good()
	in.X[n+45] = float32(math.NaN())
	wantErr(t, "NaN input", in.Check(info), "record 1: input sample 45 (channel 1, step 5) is NaN")
}

// TestKeysEdges: a value of the wrong type for abs or softmax is refused,
// not taken for the default; a metric without features_in_step does not
// list it and refuses it; eps = 0 is a threshold and perturb_std = 0 no
// noise (refused); one of the noise bounds may be 0, not both, and their
// sum must be finite; ROAD's percentages lie in (0, 100] (100 in
// TestROADImputesEachChannel).
func TestKeysEdges(t *testing.T) {
	reg := Builtin()
	for _, c := range []struct {
		id   string
		cfg  sdk.Config
		want string
	}{
		{"metric.sparseness", sdk.Config{"abs": "yes"}, `key "abs": want true or false`},
		{"metric.pixel_flipping", sdk.Config{"softmax": "yes"}, `key "softmax": want true or false`},
		{"metric.region_perturbation", sdk.Config{"features_in_step": int64(4)}, `unknown key "features_in_step"`},
		{"metric.infidelity", sdk.Config{"features_in_step": int64(4)}, `unknown key "features_in_step"`},
		{"metric.local_lipschitz_estimate", sdk.Config{"perturb_std": 0.0}, "want a finite mean and a finite std > 0"},
		{"metric.road", sdk.Config{"percentages": []any{int64(10), 0.0}}, "want a list of percentages in (0, 100]"},
		{"metric.max_sensitivity", sdk.Config{"lower_bound": 0.0, "upper_bound": 0.0}, "want finite bounds >= 0, not both 0"},
		{"metric.max_sensitivity", sdk.Config{"lower_bound": 1e308}, "want finite bounds >= 0, not both 0"}, // the width 2e308 is not finite
		{"metric.avg_sensitivity", sdk.Config{"nr_samples": int64(0)}, `key "nr_samples": 0 is out of range`},
		{"metric.road", sdk.Config{"percentages": []any{100.5}}, "want a list of percentages in (0, 100]"},
	} {
		_, err := reg.New(c.id, c.cfg)
		wantErr(t, c.id+" "+sdk.Quote(c.cfg), err, c.want)
	}
	for _, id := range []string{"metric.region_perturbation", "metric.selectivity", "metric.faithfulness_correlation", "metric.infidelity"} {
		e, _ := reg.Lookup(id)
		for _, p := range e.Info.Params {
			if p.Name == "features_in_step" {
				t.Errorf("%s lists features_in_step (default %v), a key it does not read", id, p.Default)
			}
		}
	}
	for _, c := range []struct {
		id  string
		cfg sdk.Config
	}{
		{"metric.effective_complexity", sdk.Config{"eps": 0.0}},
		{"metric.max_sensitivity", sdk.Config{"lower_bound": 0.0, "upper_bound": 0.1}},
		{"metric.max_sensitivity", sdk.Config{"lower_bound": 0.1, "upper_bound": 0.0}},
	} {
		if _, err := reg.New(c.id, c.cfg); err != nil {
			t.Errorf("%s %s: %v", c.id, sdk.Quote(c.cfg), err)
		}
	}
}

// mapScore is metric id (configured by cfg) of one record of map a and
// mask mask (nil: none).
func mapScore(t *testing.T, id string, cfg sdk.Config, a []float64, mask []bool) Score {
	t.Helper()
	in := &Input{N: 1, C: 1, T: len(a), X: make([]float32, len(a)), Maps: a, Targets: []int{0}, Masks: mask}
	return scores(t, newMetric(t, id, cfg), in)[0]
}

// TestEffectiveComplexityIsStrict: the count is of |a| > eps, strictly:
// a sample at eps is not counted, and with eps = 0 every non-zero sample
// is.
func TestEffectiveComplexityIsStrict(t *testing.T) {
	a := []float64{0.5, -0.25, 0.25, 0, 0.75, 0}
	for _, c := range []struct {
		eps  float64
		want float64
	}{{0.25, 2}, {0, 4}, {0.75, 0}} {
		got := mapScore(t, "metric.effective_complexity", sdk.Config{"eps": c.eps, "normalise": false}, a, nil)
		if got.Value != c.want {
			t.Errorf("eps = %v: %+v, want %v samples above it", c.eps, got, c.want)
		}
	}
}

// TestAttributionLocalisationTinyMass: the 1e-9 in the denominator adds
// to the map's mass: a mass of 1e-9, all inside the mask, scores
// 1e-9 / (1e-9 + 1e-9) = 1/2.
func TestAttributionLocalisationTinyMass(t *testing.T) {
	a, mask := make([]float64, 8), make([]bool, 8)
	a[3], mask[3], mask[4] = 1e-9, true, true
	got := mapScore(t, "metric.attribution_localisation", sdk.Config{"normalise": false}, a, mask)
	if math.Abs(got.Value-0.5) > 1e-12 {
		t.Errorf("%+v, want 1/2", got)
	}
}

// noiseRecorder is an explainer that keeps in dst each noisy copy's
// values and appends to got their noise, the copy minus in's record of T
// samples.
func noiseRecorder(in *Input, T int, got *[]float64) ExplainFunc {
	return func(_ context.Context, _ nn.Model, x []float32, _ []int, dst []float64) error {
		for j, v := range x {
			*got = append(*got, float64(v)-float64(in.X[j%T]))
			dst[j] = float64(v)
		}
		return nil
	}
}

// TestLipschitzNoiseLaw: the noisy copies LocalLipschitzEstimate hands
// the explainer are x + e with e ~ N(perturb_mean, perturb_std^2): over
// 1000 draws the sample mean lies within 4 standard errors of
// perturb_mean and the sample deviation within 10% of perturb_std.
func TestLipschitzNoiseLaw(t *testing.T) {
	const T, S, mu, sigma = 50, 20, 0.5, 0.1
	in := linearInput(1, 1, T, 12)
	var e []float64
	in.Explain = noiseRecorder(in, T, &e)
	scores(t, newMetric(t, "metric.local_lipschitz_estimate", sdk.Config{"nr_samples": int64(S), "perturb_mean": mu, "perturb_std": sigma}), in)
	if len(e) != S*T {
		t.Fatalf("%d noisy samples explained, want %d", len(e), S*T)
	}
	var m, v float64
	for _, d := range e {
		m += d
	}
	m /= float64(len(e))
	for _, d := range e {
		v += (d - m) * (d - m)
	}
	sd := math.Sqrt(v / float64(len(e)-1))
	if math.Abs(m-mu) > 4*sigma/math.Sqrt(float64(len(e))) || math.Abs(sd-sigma) > 0.1*sigma {
		t.Errorf("noise of mean %v and deviation %v, want N(%v, %v^2)", m, sd, mu, sigma)
	}
}

// TestLipschitzUnmovedInput: where the noise is below float32's step of
// the input (x = 2^40, perturb_std 0.1) the copies equal x, and the
// estimate is the map's change over the 1e-10 of the denominator alone.
func TestLipschitzUnmovedInput(t *testing.T) {
	const T = 10
	in := &Input{Model: &linearModel{w: make([]float64, T)}, N: 1, C: 1, T: T, X: make([]float32, T), Maps: make([]float64, T), Targets: []int{1}}
	for j := range T {
		in.X[j] = 1 << 40
		in.Maps[j] = float64(j)
	}
	in.Explain = func(_ context.Context, _ nn.Model, x []float32, _ []int, dst []float64) error {
		for j, v := range x {
			if v != 1<<40 {
				return errors.New("the noise moved the input")
			}
			dst[j] = float64(j % T)
			if j%T == 0 {
				dst[j] = 3 // the map moves by 3 at one sample
			}
		}
		return nil
	}
	got := scores(t, newMetric(t, "metric.local_lipschitz_estimate", sdk.Config{"nr_samples": int64(3), "normalise": false}), in)[0]
	if want := 3 / 1e-10; !(math.Abs(got.Value-want) <= 1e-12*want) {
		t.Errorf("%+v, want 3 / 1e-10", got)
	}
}

// classModel is a stand-in model of K classes over inputs of n values,
// for metrics that only ask it for its shape.
type classModel struct {
	nn.Model
	n, K int
}

func (m classModel) InputLen() int { return m.n }
func (m classModel) Classes() int  { return m.K }

// TestRandomLogitOtherClass: the class RandomLogit explains is another
// class than the target, below num_classes: of two classes the other
// one, of three each of the two others for some records; num_classes
// may not exceed the model's classes and a target must lie below it.
func TestRandomLogitOtherClass(t *testing.T) {
	const N, T = 40, 8
	run := func(K int, cfg sdk.Config, targets []int) ([]int, error) {
		in := &Input{Model: classModel{n: T, K: K}, N: len(targets), C: 1, T: T, X: make([]float32, len(targets)*T), Maps: make([]float64, len(targets)*T), Targets: targets}
		for j := range in.Maps {
			in.Maps[j] = float64(j % T)
		}
		var off []int
		in.Explain = func(_ context.Context, _ nn.Model, _ []float32, y []int, dst []float64) error {
			off = append(off, y...)
			for j := range dst {
				dst[j] = float64(j % T)
			}
			return nil
		}
		m, err := Builtin().New("metric.random_logit", cfg)
		if err != nil {
			return nil, err
		}
		return off, m.Score(context.Background(), in, make([]Score, in.N))
	}
	targets := make([]int, N)
	for i := range targets {
		targets[i] = i % 2
	}
	for _, c := range []struct {
		K   int
		cfg sdk.Config
	}{{2, nil}, {3, sdk.Config{"num_classes": int64(2)}}} {
		off, err := run(c.K, c.cfg, targets)
		if err != nil {
			t.Fatal(err)
		}
		for i, y := range targets {
			if off[i] != 1-y {
				t.Errorf("%d classes, %v: record %d of target %d: other class %d, want %d", c.K, c.cfg, i, y, off[i], 1-y)
			}
		}
	}
	for i := range targets {
		targets[i] = i % 3
	}
	off, err := run(3, nil, targets)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]int]bool{}
	for i, y := range targets {
		if off[i] == y || off[i] < 0 || off[i] >= 3 {
			t.Errorf("3 classes: record %d of target %d: other class %d", i, y, off[i])
		}
		seen[[2]int{y, off[i]}] = true
	}
	if len(seen) != 6 {
		t.Errorf("3 classes: (target, other) pairs drawn %v, want all 6", seen)
	}
	_, err = run(3, sdk.Config{"num_classes": int64(1)}, []int{0})
	wantErr(t, "num_classes 1", err, `key "num_classes": 1 is out of range`)
	_, err = run(3, sdk.Config{"num_classes": int64(4)}, []int{0})
	wantErr(t, "num_classes 4 of 3", err, "num_classes = 4, but the model has 3 classes")
	_, err = run(3, sdk.Config{"num_classes": int64(2)}, []int{0, 2})
	wantErr(t, "target 2 of num_classes 2", err, "record 1: target 2 is not below num_classes = 2")
}

// TestSSIMOneWindow: maps of 7 values hold exactly one window of 7, so
// their SSIM exists: 1 for a map against itself; 6 values hold none.
func TestSSIMOneWindow(t *testing.T) {
	a := []float64{0, 3, 1, 4, 1, 5, 9}
	if s := ssim(a, a); s.Undefined != "" || s.Value != 1 {
		t.Errorf("SSIM of 7 values against themselves: %+v, want 1", s)
	}
	if s := ssim(a[:6], a[:6]); s.Undefined == "" {
		t.Errorf("SSIM of 6 values: %+v, want undefined", s)
	}
}

// tinyNet is a network of three layers with parameters, c1 (a
// convolution of out channels, kernel 4, on one channel of 12 samples),
// bn and fc, with its parameters set to 1, 2, 3, ... in layout order.
func tinyNet(t *testing.T, out int) (nn.Model, *nn.Layout) {
	t.Helper()
	spec := graph.Spec{Name: "tiny", InChannels: 1, InLen: 12, Nodes: []graph.Node{
		{Name: "c1", Op: "conv1d", Attrs: map[string]any{"out": int64(out), "kernel": int64(4)}},
		{Name: "bn", Op: "batchnorm1d"},
		{Name: "gap", Op: "globalavgpool"},
		{Name: "fc", Op: "linear", Attrs: map[string]any{"out": int64(2)}},
	}}
	a := nn.GraphArch(spec)
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float32, lay.Size)
	for j := range data {
		data[j] = float32(j + 1)
	}
	m, err := nn.Open(nn.Params{Arch: a, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return m, lay
}

// TestReinitialiseFillsTheBound: a layer's weights are drawn uniform on
// ±1/sqrt(fan_in), fan_in the weight's size over its first dimension
// (4 for a kernel of 4 on one channel, whatever the out channels): 160
// draws of c1 come within 10% of the bound 1/2 and none pass it.
func TestReinitialiseFillsTheBound(t *testing.T) {
	m, lay := tinyNet(t, 32)
	data := slices.Clone(m.(paramsModel).Params().Data)
	Reinitialise(data, lay, "c1", 7)
	var top float64
	k := 0
	for _, tn := range lay.Tensors {
		if !strings.HasPrefix(tn.Name, "c1.") {
			continue
		}
		for _, v := range data[tn.Offset : tn.Offset+tn.Size] {
			top = max(top, math.Abs(float64(v)))
			k++
		}
	}
	if k != 32*4+32 || top > 0.5 || top < 0.45 {
		t.Errorf("%d draws of c1, the largest |v| %v: want 160 within 1/2, the largest above 0.45", k, top)
	}
}

// TestMPRTLayerOrders: with an explainer whose map is |c1's weights|
// (12 values: 3 channels x kernel 4), a step leaves the map as it was
// (similarity 1) until c1 is re-initialised, and after that every step
// gives the map of c1's one draw: top_down (fc, bn, c1, cascading)
// scores [1, 1, r], bottom_up (c1 first) [r, r, r] and independent
// (each layer alone, from the output) [1, 1, r], with r < 1.
func TestMPRTLayerOrders(t *testing.T) {
	m, lay := tinyNet(t, 3)
	w, ok := lay.Lookup("c1.weight")
	if !ok || w.Size != 12 {
		t.Fatalf("c1.weight %+v, want 12 values", w)
	}
	explain := func(_ context.Context, m nn.Model, x []float32, _ []int, dst []float64) error {
		p := m.(paramsModel).Params().Data[w.Offset : w.Offset+w.Size]
		for j := range dst {
			dst[j] = float64(p[j%12])
		}
		return nil
	}
	in := &Input{Model: m, N: 1, C: 1, T: 12, X: make([]float32, 12), Maps: make([]float64, 12), Targets: []int{0}, Explain: explain}
	if err := explain(context.Background(), m, in.X, in.Targets, in.Maps); err != nil {
		t.Fatal(err)
	}
	curve := map[string][]float64{}
	for _, order := range []string{"top_down", "bottom_up", "independent"} {
		s := scores(t, newMetric(t, "metric.mprt", sdk.Config{"layer_order": order}), in)[0]
		if len(s.Curve) != 3 {
			t.Fatalf("%s: %+v, want a curve of 3 layers", order, s)
		}
		curve[order] = s.Curve
	}
	r := curve["bottom_up"][0]
	for order, want := range map[string][]float64{"top_down": {1, 1, r}, "bottom_up": {r, r, r}, "independent": {1, 1, r}} {
		if !slices.Equal(curve[order], want) || !(r < 1) {
			t.Errorf("%s: curve %v, want %v with r < 1", order, curve[order], want)
		}
	}
}

// failingModel is a linear model whose calls fail from the call after
// ok on.
type failingModel struct {
	linearModel
	ok int
}

var errModel = errors.New("the model service is down")

func (m *failingModel) Probs(ctx context.Context, dst, x []float32) error {
	if m.ok == 0 {
		return errModel
	}
	m.ok--
	return m.linearModel.Probs(ctx, dst, x)
}

// TestROADPastOneBatch: six records of 50 percentages queue 300 copies,
// more than ForwardBatch: every copy of a positive ramp, imputed without
// noise, keeps a positive logit and so class 1 (each curve all ones), in
// two model calls; a model that fails on the first call (the full
// queue's, mid-way) or the second fails the score.
func TestROADPastOneBatch(t *testing.T) {
	const N, T = 6, 30
	in := &Input{N: N, C: 1, T: T, X: make([]float32, N*T), Maps: make([]float64, N*T), Targets: make([]int, N)}
	w := make([]float64, T)
	for j := range w {
		w[j] = 1
	}
	for i := range N {
		in.Targets[i] = 1
		for t := range T {
			in.X[i*T+t] = float32(t + 1 + i)
			in.Maps[i*T+t] = float64((t*7 + i) % T)
		}
	}
	lm := &linearModel{w: w}
	in.Model = lm
	m := newMetric(t, "metric.road", sdk.Config{"noise": 0.0})
	for i, s := range scores(t, m, in) {
		if len(s.Curve) != 50 || s.Value != 1 || slices.ContainsFunc(s.Curve, func(v float64) bool { return v != 1 }) {
			t.Errorf("record %d: %+v, want 50 hits", i, s)
		}
	}
	if lm.calls != 2 || lm.inputs != N*50 {
		t.Errorf("%d model calls of %d inputs, want 2 of %d", lm.calls, lm.inputs, N*50)
	}
	for ok := range 2 {
		in.Model = &failingModel{linearModel: linearModel{w: w}, ok: ok}
		err := m.Score(context.Background(), in, make([]Score, N))
		if !errors.Is(err, errModel) {
			t.Errorf("a model failing after %d calls: %v, want its error", ok, err)
		}
	}
}

// TestCosine: a . b / (|a| |b|) on vectors whose cosine is known, defined
// (not NaN) wherever neither map is zero: (3, 4) and (4, 3) give 24/25,
// a map against itself 1, against its negation -1; a zero map on either
// side has none.
func TestCosine(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{3, 4}, []float64{4, 3}, 24.0 / 25},
		{[]float64{1, 2, 2}, []float64{1, 2, 2}, 1},
		{[]float64{1, 2, 2}, []float64{-1, -2, -2}, -1},
	} {
		if s := cosine(c.a, c.b); s.Undefined != "" || math.Abs(s.Value-c.want) > 1e-15 {
			t.Errorf("cosine(%v, %v) = %+v, want %v", c.a, c.b, s, c.want)
		}
	}
	for _, ab := range [][2][]float64{{{0, 0}, {1, 2}}, {{1, 2}, {0, 0}}} {
		if s := cosine(ab[0], ab[1]); s.Undefined == "" || !math.IsNaN(s.Value) {
			t.Errorf("cosine(%v, %v) = %+v, want undefined", ab[0], ab[1], s)
		}
	}
}

// recModel is a linear model that keeps every input it is asked for.
type recModel struct {
	linearModel
	seen [][]float32
}

func (m *recModel) Probs(ctx context.Context, dst, x []float32) error {
	n := len(m.w)
	for b := range len(x) / n {
		m.seen = append(m.seen, slices.Clone(x[b*n:(b+1)*n]))
	}
	return m.linearModel.Probs(ctx, dst, x)
}

// TestROADImputesEachChannel: ROAD imputes each channel from its own
// kept samples, worked out by hand on a record of two channels of six
// steps: interior gaps linearly between their neighbours, a gap at the
// start from the first kept sample, one at the end from the last (the
// first sample too, when it is the only one kept), a channel removed
// whole as 0; the noise adds noise * z_j to each imputed
// sample j of the record's field z (here chosen by hand).
func TestROADImputesEachChannel(t *testing.T) {
	const C, T = 2, 6
	x := []float32{1, 2, 9, 4, 5, 6, 10, 25, 5, 40, 99, 60}
	// The MoRF order: ch0 step 2, ch1 step 4, ch0 steps 0, 1, ch1 steps 5,
	// 1, 2, 3, then the rest in index order.
	a := []float64{10, 9, 12, 0, 0, 0, 0, 7, 6, 5, 11, 8}
	percent := []any{20.0, 60.0, 70.0, int64(100)} // of 12: 2.4, 7.2, 8.4, 12 samples
	rm := &recModel{linearModel: linearModel{w: make([]float64, C*T)}}
	in := &Input{Model: rm, N: 1, C: C, T: T, X: x, Maps: a, Targets: []int{1}, Keys: []uint64{9}}
	scores(t, newMetric(t, "metric.road", sdk.Config{"noise": 0.0, "percentages": percent}), in)
	got := rm.seen
	if len(got) != 4 {
		t.Fatalf("%d copies, want 4", len(got))
	}
	for p, want := range [][]float32{
		{1, 2, 3, 4, 5, 6, 10, 25, 5, 40, 50, 60},
		{4, 4, 4, 4, 5, 6, 10, 20, 30, 40, 40, 40},
		{4, 4, 4, 4, 5, 6, 10, 10, 10, 10, 10, 10}, // ch1: step 0 kept alone
		make([]float32, C*T),
	} {
		if !slices.Equal(got[p], want) {
			t.Errorf("copy %d: %v, want %v", p, got[p], want)
		}
	}
	// The noise: impute with a field z chosen by hand, z_j = j/8 - 1/2,
	// scaled by 0.5: each imputed sample is its noiseless value + z_j/2.
	m := newMetric(t, "metric.road", sdk.Config{"noise": 0.5, "percentages": percent}).(*road)
	rm = &recModel{linearModel: linearModel{w: make([]float64, C*T)}}
	fw := newForwards(rm)
	fw.hits = true
	z := make([]float64, C*T)
	order := []int{2, 10, 0, 1, 11, 7, 8, 9, 3, 4, 5, 6}
	for j := range z {
		z[j] = float64(j)/8 - 0.5
	}
	curve := make([]float64, 4)
	if err := m.impute(context.Background(), fw, 1, x, C, T, order, z, curve); err != nil {
		t.Fatal(err)
	}
	if err := fw.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for p, k := range []int{2, 7, 8, 12} {
		for j, v := range rm.seen[p] {
			want := x[j]
			if slices.Contains(order[:k], j) {
				want = float32(float64(got[p][j]) + 0.5*z[j])
			}
			if v != want {
				t.Errorf("noisy copy %d sample %d: %v, want %v", p, j, v, want)
			}
		}
	}
}

// TestSensitivityNoiseLaw: the copies MaxSensitivity explains are x + u,
// u uniform on [-lower_bound, upper_bound]: with bounds 0.1 and 0.3,
// 1200 draws lie within them, come within 2% of the width to each end,
// and average (0.3 - 0.1) / 2 within 4 standard errors.
func TestSensitivityNoiseLaw(t *testing.T) {
	const T, S, lo, hi = 60, 20, 0.1, 0.3
	in := linearInput(1, 1, T, 13)
	var u []float64
	in.Explain = noiseRecorder(in, T, &u)
	scores(t, newMetric(t, "metric.max_sensitivity", sdk.Config{"nr_samples": int64(S), "lower_bound": lo, "upper_bound": hi}), in)
	if len(u) != S*T {
		t.Fatalf("%d noisy samples explained, want %d", len(u), S*T)
	}
	bot, top, mean := slices.Min(u), slices.Max(u), 0.0
	for _, d := range u {
		mean += d / float64(len(u))
	}
	const width, slack = lo + hi, 1e-6 // slack: the copies are float32
	se := width / math.Sqrt(12*float64(len(u)))
	if bot < -lo-slack || top > hi+slack || bot > -lo+0.02*width || top < hi-0.02*width || math.Abs(mean-(hi-lo)/2) > 4*se {
		t.Errorf("noise on [%v, %v] of mean %v: want uniform on [-%v, %v], mean %v", bot, top, mean, lo, hi, (hi-lo)/2)
	}
}

// TestSensitivityDropsChangedPredictions: with
// return_nan_when_prediction_changes, MaxSensitivity and AvgSensitivity
// are the max and the mean of ||x - x'_s|| / ||x|| (an explainer whose
// map is the input) over the copies whose predicted class (the first on
// a tie, as numpy's argmax) is the record's, worked out here from the
// copies and the model's own definition; a record whose copies all
// change has no score. Record 0 predicts class 1 by a margin of 0.05;
// record 1 sits at a tie (class 0), which every copy leaves.
func TestSensitivityDropsChangedPredictions(t *testing.T) {
	const T, S = 4, 40
	w := []float64{1, 0, 0, 0}
	// class is the linear model's predicted class, the first of equal
	// float32 probabilities.
	class := func(x []float32) int {
		p := 1 / (1 + math.Exp(-float64(x[0])))
		if float32(p) > float32(1-p) {
			return 1
		}
		return 0
	}
	var xs []float32
	identity := func(_ context.Context, _ nn.Model, x []float32, _ []int, dst []float64) error {
		xs = append(xs, x...)
		for j, v := range x {
			dst[j] = float64(v)
		}
		return nil
	}
	in := &Input{Model: &linearModel{w: w}, N: 2, C: 1, T: T, X: []float32{0.05, 1, 2, 3, 0, 1, 2, 3}, Maps: make([]float64, 2*T), Targets: []int{1, 1}, Keys: []uint64{1, 2}, Explain: identity}
	for j, v := range in.X {
		in.Maps[j] = float64(v)
	}
	cfg := sdk.Config{"nr_samples": int64(S), "normalise": false, "return_nan_when_prediction_changes": true}
	for _, id := range []string{"metric.max_sensitivity", "metric.avg_sensitivity"} {
		xs = nil
		got := scores(t, newMetric(t, id, cfg), in)
		for i := range in.N {
			x := in.X[i*T : (i+1)*T]
			var top, sum float64
			k := 0
			for s := range S {
				c := xs[(i*S+s)*T : (i*S+s+1)*T]
				if class(c) != class(x) {
					continue
				}
				var d2, x2 float64
				for j := range T {
					d := float64(x[j]) - float64(c[j])
					d2 += d * d
					x2 += float64(x[j]) * float64(x[j])
				}
				r := math.Sqrt(d2) / math.Sqrt(x2)
				top, sum, k = max(top, r), sum+r, k+1
			}
			if k == 0 || k == S {
				t.Fatalf("record %d: %d of %d copies keep the class: want some of each", i, k, S)
			}
			want := top
			if id == "metric.avg_sensitivity" {
				want = sum / float64(k)
			}
			if !(math.Abs(got[i].Value-want) <= 1e-12*want) {
				t.Errorf("%s record %d: %+v, want %v over the %d copies that keep the class", id, i, got[i], want, k)
			}
		}
	}
	// Noise on [-0.5, 0) moves x_0 = 1e-5 below 0 in every copy.
	one := *in
	one.N, one.X, one.Maps, one.Targets, one.Keys = 1, []float32{1e-5, 1, 2, 3}, []float64{1e-5, 1, 2, 3}, []int{1}, []uint64{3}
	s := scores(t, newMetric(t, "metric.max_sensitivity", with(cfg, "lower_bound", 0.5, "upper_bound", 0.0)), &one)[0]
	if s.Undefined == "" || !math.IsNaN(s.Value) {
		t.Errorf("every copy changes the class: %+v, want undefined", s)
	}
}

// TestExplainBatches: a metric hands the explainer ExplainBatch copies a
// call, never none (128 copies: two calls of 64), and a value the
// explainer gives that is not finite is named by its copy and index.
func TestExplainBatches(t *testing.T) {
	const T = 5
	in := linearInput(2, 1, T, 14)
	var calls []int
	in.Explain = func(_ context.Context, _ nn.Model, x []float32, y []int, dst []float64) error {
		calls = append(calls, len(y))
		for j, v := range x {
			dst[j] = float64(v)
		}
		return nil
	}
	m := newMetric(t, "metric.max_sensitivity", sdk.Config{"nr_samples": int64(64)})
	scores(t, m, in)
	if !slices.Equal(calls, []int{64, 64}) {
		t.Errorf("explainer calls of %v copies, want [64 64]", calls)
	}
	in.Explain = func(_ context.Context, _ nn.Model, x []float32, y []int, dst []float64) error {
		for j := range dst {
			dst[j] = 1
		}
		if len(y) > 1 {
			dst[T+3] = math.Inf(1)
		}
		return nil
	}
	wantErr(t, "an infinite map value", m.Score(context.Background(), in, make([]Score, in.N)), "the explainer gave +Inf at value 3 of perturbed input 1")
}

// TestSensitivityNSizes: on a linear model's exact contributions (the
// logit, zero baseline) every size's correlation is 1. n_max_percentage
// is a share in (0, 1]: 0.1 of 100 samples with features_in_step 10
// holds one size (a curve [1]); 1 holds every size up to the whole
// record, whose subsets are all the same set (a constant relevance: no
// correlation, the record undefined); 0.05 holds none (an error), and 0
// is refused.
func TestSensitivityNSizes(t *testing.T) {
	in := linearInput(1, 2, 50, 15)
	base := sdk.Config{"perturb_baseline": BaselineZero, "features_in_step": int64(10), "nr_samples": int64(6), "softmax": false}
	one := scores(t, newMetric(t, "metric.sensitivity_n", with(base, "n_max_percentage", 0.1)), in)[0]
	if len(one.Curve) != 1 || !(math.Abs(one.Value-1) < 1e-5) {
		t.Errorf("n_max_percentage 0.1: %+v, want the curve [1]", one)
	}
	all := scores(t, newMetric(t, "metric.sensitivity_n", with(base, "features_in_step", int64(50), "n_max_percentage", 1.0)), in)[0]
	if len(all.Curve) != 2 || !(math.Abs(all.Curve[0]-1) < 1e-5) || !strings.Contains(all.Undefined, "subsets of 100 samples") {
		t.Errorf("n_max_percentage 1, features_in_step 50: %+v, want the curve [1, -] undefined at 100 samples", all)
	}
	err := newMetric(t, "metric.sensitivity_n", with(base, "n_max_percentage", 0.05)).Score(context.Background(), in, make([]Score, 1))
	wantErr(t, "n_max_percentage 0.05", err, "n_max_percentage = 0.05 of 100 samples holds no subset of features_in_step = 10")
	_, err = Builtin().New("metric.sensitivity_n", sdk.Config{"n_max_percentage": 0.0})
	wantErr(t, "n_max_percentage 0", err, "n_max_percentage = 0: want a share in (0, 1]")
}

// TestTopKWholeRecord: k may be the whole record, C*T samples: the
// share is then the mask's, |S| / (C*T).
func TestTopKWholeRecord(t *testing.T) {
	const C, T = 2, 20
	in := linearInput(1, C, T, 16)
	in.Masks = make([]bool, C*T)
	for j := range 10 {
		in.Masks[3*j] = true
	}
	s := scores(t, newMetric(t, "metric.top_k_intersection", sdk.Config{"k": int64(C * T)}), in)[0]
	if s.Value != 10.0/40 {
		t.Errorf("k = C*T: %+v, want 10/40", s)
	}
}

// TestBaselineSignals: what a removed sample of record 1 (of two)
// becomes under each baseline: the record's minimum, maximum and mean,
// 0, the record's own fitted fundamental and the training mean; the
// training mean is refused where none is known.
func TestBaselineSignals(t *testing.T) {
	const C, T = 2, 2
	in := &Input{N: 2, C: C, T: T, X: []float32{9, 9, 9, 9, 1, -3, 4, 2}, Maps: make([]float64, 2*C*T)}
	in.Fundamental = []float32{0, 0, 0, 0, 5, 6, 7, 8}
	in.TrainMean = []float32{0.5, 1.5, 2.5, 3.5}
	for b, want := range map[string][]float32{
		BaselineBlack:       {-3, -3, -3, -3},
		BaselineWhite:       {4, 4, 4, 4},
		BaselineMean:        {1, 1, 1, 1},
		BaselineZero:        {0, 0, 0, 0},
		BaselineFundamental: {5, 6, 7, 8},
		BaselineTrainMean:   {0.5, 1.5, 2.5, 3.5},
	} {
		dst := make([]float32, C*T)
		if err := baselineSignal(dst, in, 1, b); err != nil || !slices.Equal(dst, want) {
			t.Errorf("%s: %v (%v), want %v", b, dst, err, want)
		}
	}
	in.TrainMean = nil
	wantErr(t, "no training mean", baselineSignal(make([]float32, C*T), in, 1, BaselineTrainMean), `perturb_baseline = "train_mean": no training mean is known`)
}

// TestRelevanceMassZeroSum: a map whose relevance sums to 0 has no share
// of it (undefined); abs = true takes |a| and gives the share of |a|.
func TestRelevanceMassZeroSum(t *testing.T) {
	a := []float64{1, -1, 0, 2, -2, 0}
	mask := []bool{true, false, false, true, false, false}
	if s := mapScore(t, "metric.relevance_mass_accuracy", nil, a, mask); s.Undefined == "" || !math.IsNaN(s.Value) {
		t.Errorf("a map summing to 0: %+v, want undefined", s)
	}
	if s := mapScore(t, "metric.relevance_mass_accuracy", sdk.Config{"abs": true}, a, mask); s.Value != 0.5 {
		t.Errorf("abs: %+v, want (1 + 2) / 6", s)
	}
}

// softmax3 is a three-class model over inputs of n values: logits (x_0,
// x_1, 0). It counts its calls.
type softmax3 struct {
	nn.Model
	n, calls int
}

func (m *softmax3) InputLen() int { return m.n }
func (m *softmax3) Classes() int  { return 3 }
func (m *softmax3) Probs(_ context.Context, dst, x []float32) error {
	m.calls++
	for b := range len(x) / m.n {
		copy(dst[3*b:], softmax3Probs(x[b*m.n:(b+1)*m.n]))
	}
	return nil
}

func softmax3Probs(x []float32) []float32 {
	e0, e1 := math.Exp(float64(x[0])), math.Exp(float64(x[1]))
	z := e0 + e1 + 1
	return []float32{float32(e0 / z), float32(e1 / z), float32(1 / z)}
}

// TestPredictionChangedThreeClasses: of three classes the predicted one
// is the most probable (the first of equals), worked out here from each
// copy: MaxSensitivity over the copies that keep it, as in
// TestSensitivityDropsChangedPredictions, on 2 x 256 copies asked of the
// model ForwardBatch at a time (one call for the records, two for the
// copies).
func TestPredictionChangedThreeClasses(t *testing.T) {
	const T, S = 3, 256
	class := func(x []float32) int {
		p := softmax3Probs(x)
		best := 0
		for k := range p {
			if p[k] > p[best] {
				best = k
			}
		}
		return best
	}
	var xs []float32
	model := &softmax3{n: T}
	in := &Input{Model: model, N: 2, C: 1, T: T, X: []float32{0.1, 0.05, 1, -0.1, 0.02, 2}, Maps: make([]float64, 2*T), Targets: []int{0, 2}, Keys: []uint64{5, 6}}
	in.Explain = func(_ context.Context, _ nn.Model, x []float32, _ []int, dst []float64) error {
		xs = append(xs, x...)
		for j, v := range x {
			dst[j] = float64(v)
		}
		return nil
	}
	for j, v := range in.X {
		in.Maps[j] = float64(v)
	}
	got := scores(t, newMetric(t, "metric.max_sensitivity", sdk.Config{"nr_samples": int64(S), "normalise": false, "lower_bound": 0.3, "return_nan_when_prediction_changes": true}), in)
	if model.calls != 3 {
		t.Errorf("%d model calls for 2 records and 512 copies, want 3", model.calls)
	}
	for i := range in.N {
		x := in.X[i*T : (i+1)*T]
		var top, x2 float64
		for _, v := range x {
			x2 += float64(v) * float64(v)
		}
		k := 0
		for s := range S {
			c := xs[(i*S+s)*T : (i*S+s+1)*T]
			if class(c) != class(x) {
				continue
			}
			var d2 float64
			for j := range T {
				d := float64(x[j]) - float64(c[j])
				d2 += d * d
			}
			top, k = max(top, math.Sqrt(d2)/math.Sqrt(x2)), k+1
		}
		if k == 0 || k == S {
			t.Fatalf("record %d: %d of %d copies keep the class: want some of each", i, k, S)
		}
		if !(math.Abs(got[i].Value-top) <= 1e-12*top) {
			t.Errorf("record %d: %+v, want %v over the %d copies that keep the class", i, got[i], top, k)
		}
	}
}
