package lime

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/sdktest"
)

// readSamples reads lime_samples.csv: per wave, the masks, weights and
// outputs Captum fitted its surrogate on.
type samples struct {
	masks  [][]bool
	weight []float64
	output []float64
}

func readSamples(t *testing.T, dir string) []samples {
	t.Helper()
	recs := golden.Records(t, filepath.Join(dir, "lime_samples.csv"))
	out := make([]samples, 16)
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, rec := range recs[1:] {
		w := int(num(rec[0]))
		m := make([]bool, len(rec)-4)
		for j := range m {
			m[j] = rec[4+j] == "1"
		}
		out[w].masks = append(out[w].masks, m)
		out[w].weight = append(out[w].weight, num(rec[2]))
		out[w].output = append(out[w].output, num(rec[3]))
	}
	return out
}

func readRows(t *testing.T, path string, header bool) [][]float64 {
	t.Helper()
	recs := golden.Records(t, path)
	if header {
		recs = recs[1:]
	}
	out := make([][]float64, len(recs))
	for i, rec := range recs {
		for _, s := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				t.Fatal(err)
			}
			out[i] = append(out[i], v)
		}
	}
	return out
}

func near(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	scale := 0.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	for j := range want {
		if math.Abs(got[j]-want[j]) > tol*math.Max(scale, 1e-300) {
			t.Fatalf("%s[%d] = %.17g, want %.17g (scale %g)", what, j, got[j], want[j], scale)
		}
	}
}

// TestGoldenSurrogates: on Captum's samples, the OLS and lasso surrogates
// are scikit-learn's float64 fits (lime_ols.csv, lime_lasso.csv and their
// intercepts).
func TestGoldenSurrogates(t *testing.T) {
	dir := golden.Dir(t, "paper-1dcnn")
	s := readSamples(t, dir)
	ols := readRows(t, filepath.Join(dir, "lime_ols.csv"), false)
	lasso := readRows(t, filepath.Join(dir, "lime_lasso.csv"), false)
	icpt := readRows(t, filepath.Join(dir, "lime_intercepts.csv"), true)
	for w := range s {
		c, b := OLS(s[w].masks, s[w].output, s[w].weight)
		near(t, "wave "+strconv.Itoa(w)+" OLS", append(c, b), append(ols[w], icpt[w][0]), 1e-9)
		c, b = Lasso(s[w].masks, s[w].output, s[w].weight, 1e-4)
		near(t, "wave "+strconv.Itoa(w)+" lasso", append(c, b), append(lasso[w], icpt[w][1]), 1e-9)
		for j, v := range c {
			if (v != 0) != (lasso[w][j] != 0) {
				t.Errorf("wave %d lasso coefficient %d: %v, scikit-learn %v (support differs)", w, j, v, lasso[w][j])
			}
		}
	}
}

// TestGoldenSamples: Captum's weight and output of each of its samples
// follow from the mask, the waveform and the model as this package
// computes them (Captum's cosine is float32: 1e-6).
func TestGoldenSamples(t *testing.T) {
	m, x, y, dir := paper.Inference(t)
	s := readSamples(t, dir)
	for _, wave := range []int{0, 7, 15} {
		xw := x[wave*640 : (wave+1)*640]
		xs := make([]float32, len(s[wave].masks)*640)
		for i, mk := range s[wave].masks {
			for t := range 640 {
				if mk[t/16] {
					xs[i*640+t] = xw[t]
				}
			}
			if got := Similarity(xw, xs[i*640:(i+1)*640], 1); math.Abs(got-s[wave].weight[i]) > 1e-6 {
				t.Fatalf("wave %d sample %d: weight %v, Captum %v", wave, i, got, s[wave].weight[i])
			}
		}
		pr := make([]float32, len(s[wave].masks)*16)
		if err := m.Probs(context.Background(), pr, xs); err != nil {
			t.Fatal(err)
		}
		sp := make([]float32, len(s[wave].masks))
		cs := Features{C: 1, T: 640, Width: 16}.ChannelSpans(nil, s[wave].masks)
		if err := nn.Perturbed(context.Background(), m, nn.Perturbation{X: xw, Class: y[wave], Spans: cs, Channel: nn.AllChannels}, sp); err != nil {
			t.Fatal(err)
		}
		for i := range s[wave].masks {
			if got := float64(pr[i*16+y[wave]]); math.Abs(got-s[wave].output[i]) > 1e-5 {
				t.Fatalf("wave %d sample %d: output %v, Captum %v", wave, i, got, s[wave].output[i])
			}
			if got := float64(sp[i]); math.Abs(got-s[wave].output[i]) > 1e-5 {
				t.Fatalf("wave %d sample %d: SpanProbs %v, Captum %v", wave, i, got, s[wave].output[i])
			}
		}
	}
}

func TestSimilarity(t *testing.T) {
	x := []float32{1, 2, 3}
	if got := Similarity(x, x, 1); got != 1 {
		t.Errorf("identical: %v, want 1", got)
	}
	if got, want := Similarity(x, []float32{0, 0, 0}, 1), math.Exp(-0.5); got != want {
		t.Errorf("zero: %v, want exp(-1/2) = %v", got, want)
	}
	// Orthogonal: d = 1; width 2: exp(-1/8).
	if got, want := Similarity([]float32{1, 0}, []float32{0, 5}, 2), math.Exp(-1.0/8); math.Abs(got-want) > 1e-15 {
		t.Errorf("orthogonal, width 2: %v, want %v", got, want)
	}
}

// TestOLSExact: data made by an exact linear model are fitted exactly;
// with one feature always on, the design is rank deficient and the
// minimum-norm solution still reproduces the outputs.
func TestOLSExact(t *testing.T) {
	masks := [][]bool{{true, false, true}, {false, true, true}, {true, true, false}, {false, false, true}, {true, false, false}, {false, true, false}}
	c0, b0 := []float64{0.5, -1, 2}, 0.25
	y := make([]float64, len(masks))
	w := []float64{1, 2, 0.5, 1, 3, 1}
	for k, m := range masks {
		y[k] = b0
		for j, v := range m {
			y[k] += c0[j] * b2f(v)
		}
	}
	c, b := OLS(masks, y, w)
	near(t, "OLS", append(c, b), append(c0, b0), 1e-12)
	// Lasso with alpha 0 is OLS.
	c, b = Lasso(masks, y, w, 0)
	near(t, "lasso alpha 0", append(c, b), append(c0, b0), 1e-9)
	// A huge alpha leaves only the intercept: the weighted mean.
	c, b = Lasso(masks, y, w, 1e6)
	var sw, sy float64
	for k := range y {
		sw += w[k]
		sy += w[k] * y[k]
	}
	near(t, "lasso, alpha large", append(c, b), []float64{0, 0, 0, sy / sw}, 1e-12)
	always := [][]bool{{true, true}, {true, false}, {true, true}, {true, false}}
	ya := []float64{3, 1, 3, 1}
	c, b = OLS(always, ya, []float64{1, 1, 1, 1})
	for k, m := range always {
		if got := b + c[0]*b2f(m[0]) + c[1]*b2f(m[1]); math.Abs(got-ya[k]) > 1e-12 {
			t.Errorf("rank deficient: sample %d fitted %v, want %v", k, got, ya[k])
		}
	}
}

func TestConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  sdk.Config
		want string
	}{
		{sdk.Config{}, ""},
		{sdk.Config{"samples": int64(64), "feature": int64(32), "kernel_width": 0.5, "surrogate": "ols", "alpha": 0.0}, ""},
		{sdk.Config{"samples": int64(1)}, `"samples"`},
		{sdk.Config{"feature": int64(0)}, `"feature"`},
		{sdk.Config{"kernel_width": 0.0}, `key "kernel_width": 0`},
		{sdk.Config{"surrogate": "ridge"}, `key "surrogate" is "ridge" (accepted: "lasso", "ols")`},
		{sdk.Config{"alpha": -1.0}, `key "alpha": -1`},
		{sdk.Config{"n_samples": int64(3)}, `unknown key "n_samples"`},
	} {
		err := New().Check(c.cfg)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%v): %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestExplain: maps are piecewise constant over the features, the same
// seed gives the same map, another seed another one.
func TestExplain(t *testing.T) {
	m, x, y, _ := paper.Inference(t)
	req := sdk.ExplainRequest{X: x[:2*640], Targets: y[:2], Seeds: []uint64{1, 2}, Config: sdk.Config{"samples": int64(64)}}
	a, err := New().Explain(context.Background(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	for b, mp := range a {
		for t0 := 0; t0 < 640; t0++ {
			if mp[t0] != mp[t0/16*16] {
				t.Fatalf("input %d sample %d: %v, feature start %v", b, t0, mp[t0], mp[t0/16*16])
			}
		}
	}
	again, _ := New().Explain(context.Background(), m, req)
	if !reflect.DeepEqual(a, again) {
		t.Error("the same seeds gave other maps")
	}
	req.Seeds = []uint64{3, 4}
	other, _ := New().Explain(context.Background(), m, req)
	if reflect.DeepEqual(a[0], other[0]) {
		t.Error("another seed gave the same map")
	}
}

func TestConformance(t *testing.T) {
	p, x, y, _ := paper.Model(t)
	sdktest.Explainer(t, New(), sdktest.ExplainerCase{Model: p, X: x[:3*640], Targets: y[:3], Config: sdk.Config{"samples": int64(32)}})
	sdktest.Explainer(t, New(), sdktest.ExplainerCase{Model: p, X: x[:2*640], Targets: y[:2], Config: sdk.Config{"samples": int64(32), "surrogate": "ols"}})
}

// TestExplainIsTheSurrogateOfItsSamples: a map is the surrogate fitted on
// Sample's masks, the target's probabilities of the perturbed inputs and
// their weights, spread over the features; with a feature width that does
// not divide N, the last feature is shorter.
func TestExplainIsTheSurrogateOfItsSamples(t *testing.T) {
	m, x, y, _ := paper.Inference(t)
	const n = 24
	for _, feature := range []int{7, 16} {
		f := (640 + feature - 1) / feature // 92 (the last of 3 samples) or 40
		masks := make([][]bool, n)
		for i := range masks {
			masks[i] = make([]bool, f)
		}
		xs, w := make([]float32, n*640), make([]float64, n)
		Sample(masks, xs, w, x[640:1280], Features{C: 1, T: 640, Width: feature}, 0.5, 42)
		for i, mk := range masks {
			for t0 := range 640 {
				want := float32(0)
				if mk[t0/feature] {
					want = x[640+t0]
				}
				if xs[i*640+t0] != want {
					t.Fatalf("sample %d position %d: %v, want %v", i, t0, xs[i*640+t0], want)
				}
			}
			if w[i] != Similarity(x[640:1280], xs[i*640:(i+1)*640], 0.5) {
				t.Fatalf("sample %d: weight %v", i, w[i])
			}
		}
		// The explainer takes the outputs from SpanProbs on the masked-out
		// spans, which equal forward passes of xs up to float32 rounding.
		pr := make([]float32, n*16)
		if err := m.Probs(context.Background(), pr, xs); err != nil {
			t.Fatal(err)
		}
		sp := make([]float32, n)
		cs := Features{C: 1, T: 640, Width: feature}.ChannelSpans(nil, masks)
		if err := nn.Perturbed(context.Background(), m, nn.Perturbation{X: x[640:1280], Class: y[1], Spans: cs, Channel: nn.AllChannels}, sp); err != nil {
			t.Fatal(err)
		}
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(sp[i])
			if d := math.Abs(out[i] - float64(pr[i*16+y[1]])); d > 1e-6 {
				t.Fatalf("feature %d sample %d: SpanProbs %v, forward pass %v", feature, i, sp[i], pr[i*16+y[1]])
			}
		}
		c, _ := OLS(masks, out, w)
		maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[640:1280], Targets: y[1:2], Seeds: []uint64{42},
			Config: sdk.Config{"samples": int64(n), "feature": int64(feature), "kernel_width": 0.5, "surrogate": "ols"}})
		if err != nil {
			t.Fatal(err)
		}
		for t0, v := range maps[0] {
			if v != c[t0/feature] {
				t.Fatalf("position %d: %v, want coefficient %d = %v", t0, v, t0/feature, c[t0/feature])
			}
		}
	}
	if Similarity([]float32{0, 0}, []float32{0, 0}, 1) != math.Exp(-0.5) {
		t.Error("two zero vectors: want distance 1")
	}
}

// TestSpans: masked-out features become spans, consecutive ones merged,
// the last feature cut at n; the slices of an earlier call are reused.
func TestSpans(t *testing.T) {
	masks := [][]bool{
		{false, false, true, false}, // features 0-1 merged, feature 3 short
		{true, true, true, true},    // nothing masked
		{false, true, false, true},
	}
	want := [][]nn.Span{{{Lo: 0, Hi: 10}, {Lo: 15, Hi: 18}}, nil, {{Lo: 0, Hi: 5}, {Lo: 10, Hi: 15}}}
	got := Spans(nil, masks, 5, 18)
	again := Spans(got, masks, 5, 18)
	for _, g := range [][][]nn.Span{got, again} {
		if len(g) != len(want) {
			t.Fatalf("%d span lists, want %d", len(g), len(want))
		}
		for i := range want {
			if !slices.Equal(g[i], want[i]) {
				t.Errorf("sample %d: %v, want %v", i, g[i], want[i])
			}
		}
	}
	if &again[0][0] != &got[0][0] {
		t.Error("the spans of the first call were not reused")
	}
}

// TestExplainRejectsTargets: a target outside 0..k-1 is an error, for
// the first input and the last; 0 and k-1 are accepted.
func TestExplainRejectsTargets(t *testing.T) {
	m, x, _, _ := paper.Inference(t)
	cfg := sdk.Config{"samples": int64(8)}
	if _, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[:1280], Targets: []int{0, 15}, Seeds: []uint64{1, 2}, Config: cfg}); err != nil {
		t.Errorf("targets 0 and 15: %v", err)
	}
	for _, targets := range [][]int{{16, 0}, {0, -1}} {
		_, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[:1280], Targets: targets, Seeds: []uint64{1, 2}, Config: cfg})
		if err == nil || !strings.Contains(err.Error(), "out of range 0..15") {
			t.Errorf("targets %v: %v", targets, err)
		}
	}
}
