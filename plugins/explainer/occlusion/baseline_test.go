package occlusion

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/internal/golden/paper"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/rng"
)

// pooledModel is a small random network with two input channels whose
// local stack ends in a global max pool (receptive field R = 6), so that
// Explain takes the trunk cache, the boundary-maxima path (windows of 5
// samples or more) and the narrow path (fewer).
func pooledModel(t *testing.T, T int) *nn.GraphModel {
	t.Helper()
	a := nn.Arch{Name: "two-channel-gmp", InChannels: 2, InLen: T, Layers: []nn.Layer{
		{Kind: nn.KindConv1D, Name: "c1", Out: 4, Kernel: 3},
		{Kind: nn.KindReLU},
		{Kind: nn.KindMaxPool1D, Kernel: 2},
		{Kind: nn.KindConv1D, Name: "c2", Out: 5, Kernel: 3},
		{Kind: nn.KindReLU},
		{Kind: nn.KindGlobalMaxPool},
		{Kind: nn.KindFlatten},
		{Kind: nn.KindDense, Name: "fc", Out: 4},
	}}
	lay, err := nn.NewLayout(a)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]float32, lay.Size)
	nn.Init(lay, p, rng.For(5, "test", "occlusion-gmp", -1, -1))
	m, err := nn.NewModel(nn.Params{Arch: a, Data: p})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// refMean is the mean baseline computed here: each channel's mean.
func refMean(x []float32, T int) []float32 {
	z := make([]float32, len(x))
	for c := 0; c < len(x)/T; c++ {
		s := 0.0
		for _, v := range x[c*T : (c+1)*T] {
			s += float64(v)
		}
		for t := range T {
			z[c*T+t] = float32(s / float64(T))
		}
	}
	return z
}

// baselineOf is the baseline signal the definition uses for cfg's
// baseline: the mean computed here, NoiseSignal and the fundamental fit
// (each checked on its own below), or the constant.
func baselineOf(t *testing.T, cfg sdk.Config, x []float32, T int) []float32 {
	t.Helper()
	switch v := cfg["baseline"].(type) {
	case string:
		switch v {
		case Mean:
			return refMean(x, T)
		case Noise:
			seed, _ := cfg.Int("seed", 0)
			return NoiseSignal(make([]float32, len(x)), x, T, uint64(seed))
		case Fundamental:
			period, _ := cfg.Float("period", 64)
			f, err := newFundamentalFit(T, period)
			if err != nil {
				t.Fatal(err)
			}
			return f.Signal(make([]float32, len(x)), x)
		}
	case float64:
		return constant(len(x), float32(v))
	}
	t.Fatalf("no baseline in %v", cfg)
	return nil
}

// TestBaselinesMatchDefinition: Explain under each baseline (a number,
// "mean", "noise", "fundamental") equals the definition, a forward pass a
// window with the window taken from the baseline signal, on the batched
// path (no fast path), on WindowProbsSignal of a network without a global
// max pool, and on a network with one (through the trunk cache: narrow
// windows and the boundary-maxima path), for two channels occluded at once
// ("all") and one at a time ("each"), a stride that leaves a tail and a
// window as long as the input.
func TestBaselinesMatchDefinition(t *testing.T) {
	const T = 48
	plain, pooled := twoChannelModel(t, T), pooledModel(t, T)
	n := plain.InputLen()
	r := rng.For(6, "test", "occlusion-baselines", -1, -1)
	const B = 3
	x := make([]float32, B*n)
	for i := range x {
		// a fundamental of 16 samples a cycle, an offset and noise
		x[i] = 0.4 + float32(math.Sin(2*math.Pi*float64(i%T)/16)) + 0.5*float32(r.NormFloat64())
	}
	targets := []int{0, 3, 2}
	baselines := []sdk.Config{
		{"baseline": 0.25},
		{"baseline": Mean},
		{"baseline": Noise, "seed": int64(7)},
		{"baseline": Fundamental, "period": 16.0},
	}
	for _, base := range baselines {
		for _, c := range []struct {
			window, stride int
			channels       string
		}{{3, 1, All}, {7, 5, All}, {T, 1, All}, {12, 2, All}, {3, 1, Each}, {7, 5, Each}, {T, 1, Each}, {12, 2, Each}} {
			cfg := sdk.Config{"window": int64(c.window), "stride": int64(c.stride), "channels": c.channels}
			for k, v := range base {
				cfg[k] = v
			}
			for name, model := range map[string]nn.Model{
				"batched": strictModel{plainModel{plain}, t}, "no pool": plain,
				"pooled, batched": plainModel{pooled}, "pooled": pooled,
			} {
				maps, err := New().Explain(context.Background(), model, sdk.ExplainRequest{X: x, Targets: targets, Config: cfg})
				if err != nil {
					t.Fatalf("%v, %s: %v", cfg, name, err)
				}
				def := plain
				if strings.HasPrefix(name, "pooled") {
					def = pooled
				}
				for b := range B {
					xb := x[b*n : (b+1)*n]
					want := bruteForce(t, def, xb, targets[b], c.window, c.stride, baselineOf(t, cfg, xb, T), c.channels)
					for i, w := range want {
						if math.Abs(maps[b][i]-w) > 1e-6 {
							t.Fatalf("%v, %s: input %d: map[%d] (channel %d, t %d) = %v, definition %v", cfg, name, b, i, i/T, i%T, maps[b][i], w)
						}
					}
				}
			}
		}
	}
}

// TestBaselineSignals: the mean baseline is each channel's own mean; the
// noise has each channel's mean and standard deviation (within five
// standard errors, a fixed draw); the fundamental fit reproduces a record
// that is an offset and a sine of the period (a non-integer number of
// cycles, two channels of other phases), and for any record leaves a
// residual orthogonal to 1, sin and cos (the normal equations).
func TestBaselineSignals(t *testing.T) {
	const T = 200
	r := rng.For(8, "test", "occlusion-signals", -1, -1)
	x := make([]float32, 2*T)
	for i := range x {
		x[i] = float32(2*r.NormFloat64() + float64(i/T)*3 - 1) // channel means -1 and 2
	}
	z := MeanSignal(make([]float32, len(x)), x, T)
	for c := range 2 {
		mu, _ := meanStd(x[c*T : (c+1)*T])
		ref := refMean(x, T)[c*T]
		if math.Abs(mu-float64(ref)) > 1e-6 {
			t.Fatalf("channel %d: meanStd %v, mean %v", c, mu, ref)
		}
		for t0 := range T {
			if z[c*T+t0] != ref {
				t.Fatalf("channel %d: mean baseline at %d = %v, want %v", c, t0, z[c*T+t0], ref)
			}
		}
	}
	z = NoiseSignal(make([]float32, len(x)), x, T, 3)
	for c := range 2 {
		mu, sigma := meanStd(x[c*T : (c+1)*T])
		nm, ns := meanStd(z[c*T : (c+1)*T])
		if math.Abs(nm-mu) > 5*sigma/math.Sqrt(T) || math.Abs(ns/sigma-1) > 5/math.Sqrt(2*T) {
			t.Errorf("channel %d: noise mean %v sd %v, record's %v and %v", c, nm, ns, mu, sigma)
		}
	}

	for _, period := range []float64{64, 37.5, 2.5} {
		f, err := newFundamentalFit(T, period)
		if err != nil {
			t.Fatal(err)
		}
		w := 2 * math.Pi / period
		for c := range 2 {
			m, a, b := 0.3*float64(c)-0.1, 1.5, -0.7+float64(c)
			for t0 := range T {
				x[c*T+t0] = float32(m + a*math.Sin(w*float64(t0)) + b*math.Cos(w*float64(t0)))
			}
		}
		z = f.Signal(make([]float32, len(x)), x)
		for i := range x {
			if math.Abs(float64(z[i]-x[i])) > 1e-5 {
				t.Fatalf("period %v: fit of a sine at %d = %v, the record %v", period, i, z[i], x[i])
			}
		}
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		z = f.Signal(make([]float32, len(x)), x)
		for c := range 2 {
			var dots [3]float64
			for t0 := range T {
				res := float64(x[c*T+t0]) - float64(z[c*T+t0])
				s, co := math.Sincos(w * float64(t0))
				dots[0] += res
				dots[1] += res * s
				dots[2] += res * co
			}
			for j, d := range dots {
				if math.Abs(d) > 1e-4 { // float32 rounding of z: about T * 6e-8
					t.Errorf("period %v channel %d: residual . basis %d = %v, want 0", period, c, j, d)
				}
			}
		}
	}
	if _, err := newFundamentalFit(2, 64); err == nil || !strings.Contains(err.Error(), `key "period"`) {
		t.Errorf("a fit over 2 samples: %v, want an error naming the key period", err)
	}
}

// TestPureSineHasZeroMap: on the paper's network, a record that is a pure
// sine of the period (the 50 Hz fundamental at 64 samples a cycle, with
// an offset) is its own fundamental baseline, and a constant record its
// own mean baseline: no window changes anything and the map is 0.
func TestPureSineHasZeroMap(t *testing.T) {
	m, _, _, _ := paper.Inference(t)
	sine, flat := make([]float32, 640), make([]float32, 640)
	for i := range sine {
		sine[i] = float32(0.05 + 0.9*math.Sin(2*math.Pi*float64(i)/64+0.3))
		flat[i] = 0.6
	}
	for _, c := range []struct {
		baseline string
		x        []float32
	}{{Fundamental, sine}, {Mean, flat}} {
		maps, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: c.x, Targets: []int{3}, Config: sdk.Config{"baseline": c.baseline}})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for _, v := range maps[0] {
			worst = math.Max(worst, math.Abs(v))
		}
		if worst > 1e-6 {
			t.Errorf("%s baseline of its own record: max |map| = %g, want 0", c.baseline, worst)
		}
		// The zero baseline does move this record: the test can fail.
		zero, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: c.x, Targets: []int{3}, Config: sdk.Config{}})
		if err != nil {
			t.Fatal(err)
		}
		moved := 0.0
		for _, v := range zero[0] {
			moved = math.Max(moved, math.Abs(v))
		}
		if moved < 1e-3 {
			t.Errorf("%s: max |map| %g under the zero baseline: the record does not tell baselines apart", c.baseline, moved)
		}
		t.Logf("%s: max |map| %.3g under its own baseline, %.3g under 0", c.baseline, worst, moved)
	}
}

// TestNoiseDeterministic: the noise baseline depends on the record and
// the seed only: a record's map is the same bytes alone, in a batch, in
// another position of it, and from another Explainer; another seed gives
// another map.
func TestNoiseDeterministic(t *testing.T) {
	m, x, y, _ := paper.Inference(t)
	cfg := sdk.Config{"baseline": Noise, "stride": int64(4)}
	batch, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[:3*640], Targets: y[:3], Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	swapped := append(append([]float32(nil), x[2*640:3*640]...), x[:2*640]...)
	other, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: swapped, Targets: []int{y[2], y[0], y[1]}, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[640 : 2*640], Targets: y[1:2], Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b []float64) bool {
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return false
			}
		}
		return true
	}
	if !same(batch[2], other[0]) || !same(batch[0], other[1]) || !same(batch[1], alone[0]) {
		t.Error("a record's noise map depends on its batch")
	}
	cfg2 := sdk.Config{"baseline": Noise, "stride": int64(4), "seed": int64(1)}
	reseeded, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[:640], Targets: y[:1], Config: cfg2})
	if err != nil {
		t.Fatal(err)
	}
	if same(batch[0], reseeded[0]) {
		t.Error("seeds 0 and 1 give the same noise map")
	}
	if NoiseKey(x[:640], 0) == NoiseKey(x[640:1280], 0) || NoiseKey(x[:640], 0) == NoiseKey(x[:640], 1) {
		t.Error("the noise key ignores the record or the seed")
	}
}

// TestBaselineErrors: a record with a non-finite sample has no mean,
// noise or fundamental baseline, nor probabilities: an error naming the
// input and the sample, not a NaN map.
func TestBaselineErrors(t *testing.T) {
	m := twoChannelModel(t, 10)
	n := m.InputLen()
	x := make([]float32, 2*n)
	x[n+13] = float32(math.NaN())
	for _, b := range []string{Mean, Noise, Fundamental} {
		_, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: []int{0, 1}, Config: sdk.Config{"window": int64(2), "baseline": b}})
		if err == nil || !strings.Contains(err.Error(), "input 1: sample 13 (channel 1, t 3) is NaN") {
			t.Errorf("%s: %v, want an error naming input 1, sample 13", b, err)
		}
	}
	// A number baseline has no statistics to miss, but the model has no
	// probabilities of the record: an error too, not a NaN map.
	if _, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: []int{0, 1}, Config: sdk.Config{"window": int64(2)}}); err == nil || !strings.Contains(err.Error(), "input 1: sample 13 (channel 1, t 3) is NaN (accepted: finite samples)") {
		t.Errorf("number baseline: %v, want an error naming input 1, sample 13", err)
	}
	// A huge record overflows its noise baseline in float32.
	big := make([]float32, n)
	for i := range big {
		big[i] = float32(math.Pow(-1, float64(i))) * 3e38
	}
	_, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: big, Targets: []int{0}, Config: sdk.Config{"window": int64(2), "baseline": Noise}})
	var i, ch, t0 int
	const head = "input 0: the noise baseline at sample"
	if err == nil || !strings.Contains(err.Error(), head) {
		t.Errorf("huge record: %v, want an overflow error", err)
	} else if _, serr := fmt.Sscanf(err.Error()[strings.Index(err.Error(), head):], head+" %d (channel %d, t %d) overflows float32", &i, &ch, &t0); serr != nil || ch != i/10 || t0 != i%10 {
		t.Errorf("huge record: %v, want an overflow error naming the sample, its channel and time", err)
	}
	if _, err := New().Explain(context.Background(), m, sdk.ExplainRequest{X: x[:n], Targets: []int{0}, Config: sdk.Config{"window": int64(2), "baseline": Fundamental, "period": 2.0001}}); err != nil {
		t.Errorf("period 2.0001 over 10 samples: %v", err)
	}
}

// TestCheckBaselines: what the key baseline and its companions accept,
// and errors that name the key and what would have been accepted.
func TestCheckBaselines(t *testing.T) {
	e := New()
	for _, ok := range []sdk.Config{
		{}, {"baseline": 0.0}, {"baseline": int64(-1)}, {"baseline": Mean}, {"baseline": Noise},
		{"baseline": Noise, "seed": int64(12)}, {"baseline": Fundamental}, {"baseline": Fundamental, "period": 63.5},
		{"baseline": Fundamental, "period": int64(1 << 20)}, {"baseline": math.MaxFloat32}, {"baseline": -math.MaxFloat32},
	} {
		if err := e.Check(ok); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	accepted := `(accepted: a number, "mean", "noise", "fundamental")`
	for _, c := range []struct {
		cfg  sdk.Config
		want string
	}{
		{sdk.Config{"baseline": "zeros"}, `key "baseline": "zeros" is not a baseline ` + accepted},
		{sdk.Config{"baseline": "Mean"}, `key "baseline": "Mean" is not a baseline`},
		{sdk.Config{"baseline": true}, `key "baseline": want a number, "mean", "noise", "fundamental", got bool true`},
		{sdk.Config{"baseline": []any{0.0}}, `key "baseline": want a number`},
		{sdk.Config{"baseline": math.NaN()}, `key "baseline": NaN is not a finite number ` + accepted},
		{sdk.Config{"baseline": 1e39}, `key "baseline": 1e+39 is beyond float32`},
		{sdk.Config{"seed": int64(1)}, `key "seed" applies only to baseline = "noise" (the baseline is 0)`},
		{sdk.Config{"baseline": Mean, "seed": int64(1)}, `key "seed" applies only to baseline = "noise" (the baseline is "mean")`},
		{sdk.Config{"baseline": Noise, "period": 64.0}, `key "period" applies only to baseline = "fundamental"`},
		{sdk.Config{"baseline": 0.25, "period": 64.0}, `(the baseline is 0.25)`},
		{sdk.Config{"baseline": Noise, "seed": int64(-1)}, `key "seed": -1 is out of range`},
		{sdk.Config{"baseline": Noise, "seed": 1.5}, `key "seed": want an integer`},
		{sdk.Config{"baseline": Fundamental, "period": 2.0}, `key "period": 2 samples a cycle (accepted: 2 < period <= 1048576`},
		{sdk.Config{"baseline": Fundamental, "period": float64(1<<20 + 1)}, `key "period": 1.048577e+06 samples a cycle`},
		{sdk.Config{"baseline": Fundamental, "period": "64"}, `key "period": want a number`},
	} {
		err := e.Check(c.cfg)
		if err == nil || !strings.HasPrefix(err.Error(), ID+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to contain %q", c.cfg, err, c.want)
		}
	}
}

// TestGoldenDefault: the default configuration (no keys: window 60,
// stride 1, baseline 0) gives the bytes of the explicit paper settings,
// which match Captum's golden maps (TestGoldenOcclusion), on the fast path
// and the batched one.
func TestGoldenDefault(t *testing.T) {
	m, x, y, dir := paper.Inference(t)
	want := golden.CSV32(t, filepath.Join(dir, "occlusion.csv"))
	for name, model := range map[string]nn.Model{"plain": plainModel{m}, "model": m} {
		def, err := New().Explain(context.Background(), model, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{}})
		if err != nil {
			t.Fatal(err)
		}
		explicit, err := New().Explain(context.Background(), model, sdk.ExplainRequest{X: x, Targets: y, Config: sdk.Config{"window": int64(60), "stride": int64(1), "baseline": 0.0}})
		if err != nil {
			t.Fatal(err)
		}
		for r := range want {
			for i, w := range want[r] {
				if math.Float64bits(def[r][i]) != math.Float64bits(explicit[r][i]) {
					t.Fatalf("%s: record %d: map[%d] = %v by default, %v with the paper's keys", name, r, i, def[r][i], explicit[r][i])
				}
				if d := math.Abs(def[r][i] - float64(w)); d > 1e-5 {
					t.Fatalf("%s: record %d: map[%d] = %v, Captum %v", name, r, i, def[r][i], w)
				}
			}
		}
	}
}
