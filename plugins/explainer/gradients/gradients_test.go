package gradients

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/uaxai/uaxai/internal/golden"
	"github.com/uaxai/uaxai/sdk"
	"github.com/uaxai/uaxai/sdk/nn"
	"github.com/uaxai/uaxai/sdk/onnx"
	"github.com/uaxai/uaxai/sdk/rng"
)

// goldenModel is a golden network of testdata/golden/archs (its ONNX
// export, run by the Go graph), its waveforms and targets.
func goldenModel(t testing.TB, name string) (nn.Model, []float32, []int, string) {
	t.Helper()
	dir := filepath.Join(golden.Dir(t, "archs"), name)
	net, err := onnx.LoadNet(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	x := golden.Flat(golden.CSV32(t, filepath.Join(dir, "waveforms.csv")))
	var y []int
	for _, r := range golden.CSV32(t, filepath.Join(dir, "targets.csv")) {
		y = append(y, int(r[0]))
	}
	return nn.NewGraphModel(net), x, y, dir
}

func explain(t testing.TB, e sdk.Explainer, m nn.Model, x []float32, y []int, cfg sdk.Config, seeds []uint64) [][]float64 {
	t.Helper()
	if err := e.Check(cfg); err != nil {
		t.Fatal(err)
	}
	out, err := e.Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: cfg, Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(y) {
		t.Fatalf("%d maps for %d inputs", len(out), len(y))
	}
	return out
}

// TestGoldenGradients: on four golden networks (one of three channels),
// saliency with abs = false is Captum's Saliency(abs=False) map
// (input_grad.csv) within 1e-4 of each map's largest value, with abs its
// absolute value, and input_x_gradient the input times it.
func TestGoldenGradients(t *testing.T) {
	for _, name := range []string{"fcn", "resnet1d", "stridednet", "resnet1d-3ph"} {
		t.Run(name, func(t *testing.T) {
			m, x, y, dir := goldenModel(t, name)
			want := golden.CSV32(t, filepath.Join(dir, "input_grad.csv"))
			golden.RowsClose(t, "saliency abs=false", explain(t, NewSaliency(), m, x, y, sdk.Config{"abs": false}, nil), want, 1e-4)
			n := m.InputLen()
			abs, ixg := make([][]float64, len(want)), make([][]float64, len(want))
			for i, row := range want {
				for j, v := range row {
					abs[i] = append(abs[i], math.Abs(float64(v)))
					ixg[i] = append(ixg[i], float64(x[i*n+j])*float64(v))
				}
			}
			golden.RowsClose(t, "saliency", explain(t, NewSaliency(), m, x, y, sdk.Config{}, nil), abs, 1e-4)
			golden.RowsClose(t, "input_x_gradient", explain(t, NewInputXGradient(), m, x, y, sdk.Config{}, nil), ixg, 1e-4)
		})
	}
}

// TestRule: the weights of every rule sum to 1 and its nodes lie in
// [0, 1]; n-point Gauss-Legendre integrates a^k exactly (1/(k+1)) for
// k <= 2n-1; the trapezoid rule is exact for a linear integrand, the
// midpoint rule too; left and right sums of a^1 are (n-1)/2n and (n+1)/2n.
func TestRule(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 50} {
		for _, m := range []string{GaussLegendre, RiemannLeft, RiemannRight, RiemannMiddle, RiemannTrapezoid} {
			if m == RiemannTrapezoid && n < 2 {
				if _, _, err := Rule(m, n); err == nil {
					t.Errorf("trapezoid with 1 point: no error")
				}
				continue
			}
			a, w, err := Rule(m, n)
			if err != nil {
				t.Fatal(err)
			}
			moment := func(k int) float64 {
				var s float64
				for i := range a {
					s += w[i] * math.Pow(a[i], float64(k))
				}
				return s
			}
			for i := range a {
				if a[i] < 0 || a[i] > 1 || w[i] <= 0 {
					t.Fatalf("%s n=%d: node %g weight %g", m, n, a[i], w[i])
				}
			}
			if math.Abs(moment(0)-1) > 1e-12 {
				t.Errorf("%s n=%d: weights sum to %g", m, n, moment(0))
			}
			switch m {
			case GaussLegendre:
				for k := 1; k <= 2*n-1; k++ {
					if d := moment(k) - 1/float64(k+1); math.Abs(d) > 1e-12 {
						t.Errorf("gausslegendre n=%d: a^%d integrates to %.15g, want %.15g", n, k, moment(k), 1/float64(k+1))
					}
				}
			case RiemannTrapezoid, RiemannMiddle:
				if math.Abs(moment(1)-0.5) > 1e-12 {
					t.Errorf("%s n=%d: a integrates to %g", m, n, moment(1))
				}
			case RiemannLeft:
				if want := float64(n-1) / float64(2*n); math.Abs(moment(1)-want) > 1e-12 {
					t.Errorf("left n=%d: %g, want %g", n, moment(1), want)
				}
			case RiemannRight:
				if want := float64(n+1) / float64(2*n); math.Abs(moment(1)-want) > 1e-12 {
					t.Errorf("right n=%d: %g, want %g", n, moment(1), want)
				}
			}
		}
	}
	if _, _, err := Rule("simpson", 5); err == nil || !strings.Contains(err.Error(), GaussLegendre) {
		t.Errorf("an unknown method: %v; want an error naming the accepted ones", err)
	}
}

// TestIntegratedGradients: the maps are complete, sum_t map[t] = p(x) -
// p(x') (Gauss-Legendre of 1,000 points, within 1e-4, the convergence
// delta, smaller than with 10), for a zero and a non-zero baseline; the right Riemann sum of
// one point from a zero baseline is input x gradient exactly; and the
// trapezoid rule's delta shrinks as its points grow.
func TestIntegratedGradients(t *testing.T) {
	m, x, y, _ := goldenModel(t, "fcn")
	x, y = x[:4*m.InputLen()], y[:4]
	n, k := m.InputLen(), m.Classes()
	probs := func(pts []float32) []float32 {
		p := make([]float32, len(pts)/n*k)
		if err := m.Probs(context.Background(), p, pts); err != nil {
			t.Fatal(err)
		}
		return p
	}
	delta := func(maps [][]float64, base float32) float64 {
		px := probs(x)
		b := make([]float32, len(x))
		for i := range b {
			b[i] = base
		}
		pb := probs(b)
		worst := 0.0
		for i, mp := range maps {
			var s float64
			for _, v := range mp {
				s += v
			}
			worst = max(worst, math.Abs(s-float64(px[i*k+y[i]]-pb[i*k+y[i]])))
		}
		return worst
	}
	for _, base := range []float64{0, -0.3} {
		// the FCN's ReLUs make the path's integrand kinked: Gauss-Legendre
		// converges slowly (50 points: 4e-4 on these records)
		d10 := delta(explain(t, NewIntegratedGradients(), m, x, y, sdk.Config{"baseline": base, "n_steps": int64(10)}, nil), float32(base))
		d := delta(explain(t, NewIntegratedGradients(), m, x, y, sdk.Config{"baseline": base, "n_steps": int64(1000)}, nil), float32(base))
		if !(d < 1e-4 && d < d10) {
			t.Errorf("baseline %g: convergence delta %.3g with 1000 points, %.3g with 10", base, d, d10)
		}
	}
	one := explain(t, NewIntegratedGradients(), m, x, y, sdk.Config{"n_steps": int64(1), "method": RiemannRight}, nil)
	ixg := explain(t, NewInputXGradient(), m, x, y, sdk.Config{}, nil)
	for i := range one {
		for j := range one[i] {
			if one[i][j] != ixg[i][j] {
				t.Fatalf("one right step, input %d sample %d: %g, input x gradient %g", i, j, one[i][j], ixg[i][j])
			}
		}
	}
	d4 := delta(explain(t, NewIntegratedGradients(), m, x, y, sdk.Config{"n_steps": int64(4), "method": RiemannTrapezoid}, nil), 0)
	d200 := delta(explain(t, NewIntegratedGradients(), m, x, y, sdk.Config{"n_steps": int64(200), "method": RiemannTrapezoid}, nil), 0)
	if !(d200 < d4/10) {
		t.Errorf("trapezoid: delta %.3g with 200 points, %.3g with 4", d200, d4)
	}
}

// TestSmoothGradWithoutNoise: with stdevs = 0 every sample is the input:
// smoothgrad is the saliency, smoothgrad_sq its square and vargrad 0;
// gradient_shap of stdevs 0 keeps its sign convention, (x - x') g.
func TestSmoothGradWithoutNoise(t *testing.T) {
	m, x, y, _ := goldenModel(t, "stridednet")
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}[:len(y)]
	sal := explain(t, NewSaliency(), m, x, y, sdk.Config{}, nil)
	for _, c := range []struct {
		nt string
		f  func(float64) float64
	}{{SmoothGrad, func(v float64) float64 { return v }}, {SmoothGradSq, func(v float64) float64 { return v * v }}, {VarGrad, func(float64) float64 { return 0 }}} {
		got := explain(t, NewSmoothGrad(), m, x, y, sdk.Config{"stdevs": 0.0, "nt_type": c.nt, "nt_samples": int64(3)}, seeds)
		for i := range got {
			for j, v := range got[i] {
				if want := c.f(sal[i][j]); math.Abs(v-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Fatalf("%s input %d sample %d: %g, want %g", c.nt, i, j, v, want)
				}
			}
		}
	}
}

// TestNoisySeeded: the noisy explainers' maps depend on the input's seed
// alone: an input explained alone or in a batch gives the same bytes, a
// second seed other maps.
func TestNoisySeeded(t *testing.T) {
	m, x, y, _ := goldenModel(t, "fcn")
	n := m.InputLen()
	for _, e := range []*Noisy{NewSmoothGrad(), NewGradientShap()} {
		cfg := sdk.Config{"stdevs": 0.1}
		all := explain(t, e, m, x[:3*n], y[:3], cfg, []uint64{11, 12, 13})
		alone := explain(t, e, m, x[n:2*n], y[1:2], cfg, []uint64{12})
		other := explain(t, e, m, x[n:2*n], y[1:2], cfg, []uint64{99})
		same, differ := true, false
		for j := range alone[0] {
			same = same && alone[0][j] == all[1][j]
			differ = differ || other[0][j] != alone[0][j]
		}
		if !same || !differ {
			t.Errorf("%s: alone equals in the batch %v; another seed differs %v", e.Info().ID, same, differ)
		}
	}
}

// TestGradientShapIsIGInExpectation: without noise, GradientSHAP's
// a_k ~ U(0, 1) make it a Monte Carlo estimate of integrated gradients:
// with 4,000 samples it is within 5% (relative L2) of a 100-point
// Gauss-Legendre IG.
func TestGradientShapIsIGInExpectation(t *testing.T) {
	m, x, y, _ := goldenModel(t, "fcn")
	n := m.InputLen()
	x, y = x[:n], y[:1]
	ig := explain(t, NewIntegratedGradients(), m, x, y, sdk.Config{"n_steps": int64(100)}, nil)[0]
	gs := explain(t, NewGradientShap(), m, x, y, sdk.Config{"n_samples": int64(4000)}, []uint64{5})[0]
	var num, den float64
	for j := range ig {
		num += (gs[j] - ig[j]) * (gs[j] - ig[j])
		den += ig[j] * ig[j]
	}
	if r := math.Sqrt(num / den); !(r < 0.05) {
		t.Errorf("GradientSHAP of 4000 samples is %.3g (relative L2) from IG", r)
	}
}

// TestConfigErrors: a bad table is an error naming the key and what is
// accepted.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		e    sdk.Explainer
		cfg  sdk.Config
		want string
	}{
		{NewSaliency(), sdk.Config{"abs": "yes"}, `"abs"`},
		{NewSaliency(), sdk.Config{"window": int64(3)}, "window"},
		{NewInputXGradient(), sdk.Config{"abs": true}, "abs"},
		{NewIntegratedGradients(), sdk.Config{"n_steps": int64(0)}, "1..10000"},
		{NewIntegratedGradients(), sdk.Config{"method": "simpson"}, "accepted: gausslegendre"},
		{NewIntegratedGradients(), sdk.Config{"method": RiemannTrapezoid, "n_steps": int64(1)}, "n_steps >= 2"},
		{NewSmoothGrad(), sdk.Config{"nt_type": "smooth"}, "accepted: smoothgrad, smoothgrad_sq, vargrad"},
		{NewSmoothGrad(), sdk.Config{"stdevs": -1.0}, ">= 0"},
		{NewGradientShap(), sdk.Config{"n_samples": int64(0)}, "n_samples"},
		{NewGradientShap(), sdk.Config{"nt_type": "vargrad"}, "nt_type"},
	} {
		err := c.e.Check(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v; want an error with %q", c.e.Info().ID, c.cfg, err, c.want)
		}
	}
	m, x, y, _ := goldenModel(t, "fcn")
	if _, err := NewSmoothGrad().Explain(context.Background(), m, sdk.ExplainRequest{X: x[:m.InputLen()], Targets: y[:1]}); err == nil || !strings.Contains(err.Error(), "seeds") {
		t.Errorf("smoothgrad without seeds: %v", err)
	}
}

// TestCaptumIntegratedGradients: integrated gradients on four golden
// networks equal Captum 0.8's (testdata/golden/gradients: Gauss-Legendre
// of 50 points, the trapezoid rule of 20, Captum's maps there scaled by
// n/(n-1)) within 1e-4 in relative L2 norm, and their convergence deltas
// Captum's within 3e-5.
func TestCaptumIntegratedGradients(t *testing.T) {
	for _, name := range []string{"fcn", "resnet1d", "stridednet", "resnet1d-3ph"} {
		t.Run(name, func(t *testing.T) {
			m, x, y, _ := goldenModel(t, name)
			dir := filepath.Join(golden.Dir(t, "gradients"), name)
			deltas := golden.CSV32(t, filepath.Join(dir, "deltas.csv"))
			k := m.Classes()
			px, p0 := make([]float32, len(y)*k), make([]float32, len(y)*k)
			if err := m.Probs(context.Background(), px, x); err != nil {
				t.Fatal(err)
			}
			if err := m.Probs(context.Background(), p0, make([]float32, len(x))); err != nil {
				t.Fatal(err)
			}
			for col, c := range []struct {
				method string
				steps  int64
				file   string
			}{{GaussLegendre, 50, "ig_gausslegendre_50.csv"}, {RiemannTrapezoid, 20, "ig_riemann_trapezoid_20.csv"}} {
				got := explain(t, NewIntegratedGradients(), m, x, y, sdk.Config{"method": c.method, "n_steps": c.steps}, nil)
				want := golden.CSV32(t, filepath.Join(dir, c.file))
				scale := 1.0
				if c.method == RiemannTrapezoid {
					// Captum's trapezoid weights are 1/n, not 1/(n-1)
					// (docs/own-data-and-models.md): its maps are (n-1)/n of the rule's
					scale = float64(c.steps-1) / float64(c.steps)
				}
				var num, den float64
				for i, row := range want {
					for j, v := range row {
						d := scale*got[i][j] - float64(v)
						num += d * d
						den += float64(v) * float64(v)
					}
				}
				// pointwise the maps can differ by 1e-3 of the largest
				// value where a path point's pre-activation is within
				// float32 rounding of a ReLU's kink (the gradient jumps
				// there, in one implementation and not the other)
				if r := math.Sqrt(num / den); r > 1e-4 {
					t.Errorf("%s: relative L2 difference %.3g from Captum's maps", c.file, r)
				}
				for i, mp := range got {
					var s float64
					for _, v := range mp {
						s += v
					}
					d := scale*s - float64(px[i*k+y[i]]-p0[i*k+y[i]])
					if want := float64(deltas[i][col]); math.Abs(d-want) > 3e-5 {
						t.Errorf("%s input %d: convergence delta %.6g, Captum's %.6g", c.file, i, d, want)
					}
				}
			}
		})
	}
}

// BenchmarkResNet1D times, per map, integrated gradients (50
// Gauss-Legendre steps) and SmoothGrad (50 samples, stdev 0.1) on the
// golden ResNet1D's 8 waveforms: the cases testdata/peers/
// gradients_golden.py --bench times for Captum.
func BenchmarkResNet1D(b *testing.B) {
	m, x, y, _ := goldenModel(b, "resnet1d")
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	for _, c := range []struct {
		name string
		e    sdk.Explainer
		cfg  sdk.Config
	}{
		{"integrated_gradients_50", NewIntegratedGradients(), sdk.Config{"n_steps": int64(50)}},
		{"smoothgrad_50", NewSmoothGrad(), sdk.Config{"nt_samples": int64(50), "stdevs": 0.1}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.e.Explain(context.Background(), m, sdk.ExplainRequest{X: x, Targets: y, Config: c.cfg, Seeds: seeds}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N)/float64(len(y))*1e3, "ms/map")
		})
	}
}

// TestNoisyClosedForm: GradientSHAP of one sample without noise is
// (x - x') g(x' + a (x - x')) with a the first uniform draw of the
// input's seed, written out here; and SmoothGrad of a batch cut into
// several groups of points (8 inputs of 100 samples: 2 inputs a group)
// gives each input the maps it gets alone.
func TestNoisyClosedForm(t *testing.T) {
	m, x, y, _ := goldenModel(t, "fcn")
	n := m.InputLen()
	x1, y1 := x[:n], y[:1]
	const base = -0.2
	got := explain(t, NewGradientShap(), m, x1, y1, sdk.Config{"n_samples": int64(1), "baseline": base}, []uint64{42})[0]
	a := float32(rng.New(42).Float64())
	pt := make([]float32, n)
	for j, v := range x1 {
		pt[j] = base + a*(v-base)
	}
	g := make([]float32, n)
	if err := m.InputGrad(context.Background(), g, nil, pt, y1); err != nil {
		t.Fatal(err)
	}
	for j := range got {
		if want := (float64(x1[j]) - base) * float64(g[j]); math.Abs(got[j]-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Fatalf("sample %d: %g, want %g", j, got[j], want)
		}
	}
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	cfg := sdk.Config{"nt_samples": int64(100), "stdevs": 0.05}
	all := explain(t, NewSmoothGrad(), m, x, y, cfg, seeds)
	for i := range y {
		alone := explain(t, NewSmoothGrad(), m, x[i*n:(i+1)*n], y[i:i+1], cfg, seeds[i:i+1])[0]
		for j := range alone {
			if alone[j] != all[i][j] {
				t.Fatalf("input %d sample %d: %g alone, %g in a batch of groups", i, j, alone[j], all[i][j])
			}
		}
	}
}

// TestCaptumNoisy: given the points Captum drew (from torch's generator:
// testdata/peers/gradients_golden.py --noisy), smoothgrad in its three
// forms (abs, 4 samples, stdev 0.1) equals Captum 0.8's
// NoiseTunnel(Saliency), and gradient_shap (4 samples, no noise, a zero
// baseline) its GradientShap, within 1e-4 of each map's largest value, on
// a network of one channel and one of three; the maps uaxai draws itself
// differ (the points matter).
func TestCaptumNoisy(t *testing.T) {
	for _, name := range []string{"fcn", "resnet1d-3ph"} {
		t.Run(name, func(t *testing.T) {
			m, x, y, _ := goldenModel(t, name)
			dir := filepath.Join(golden.Dir(t, "gradients"), name)
			n := m.InputLen()
			x, y = x[:2*n], y[:2]
			seeds := []uint64{1, 2}
			pts := golden.Flat(golden.CSV32(t, filepath.Join(dir, "points_noise_tunnel.csv")))
			for _, typ := range []string{SmoothGrad, SmoothGradSq, VarGrad} {
				cfg := sdk.Config{"nt_samples": int64(4), "stdevs": 0.1, "nt_type": typ}
				want := golden.CSV32(t, filepath.Join(dir, "nt_"+typ+".csv"))
				got := explain(t, &Noisy{given: pts}, m, x, y, cfg, seeds)
				golden.RowsClose(t, typ, got, want, 1e-4)
				own := explain(t, NewSmoothGrad(), m, x, y, cfg, seeds)
				if slices.Equal(own[0], got[0]) {
					t.Errorf("%s: uaxai's own draws give Captum's map", typ)
				}
			}
			cfg := sdk.Config{"n_samples": int64(4)}
			pts = golden.Flat(golden.CSV32(t, filepath.Join(dir, "points_gradient_shap.csv")))
			got := explain(t, &Noisy{shap: true, given: pts}, m, x, y, cfg, seeds)
			golden.RowsClose(t, "gradient_shap", got, golden.CSV32(t, filepath.Join(dir, "gradient_shap.csv")), 1e-4)
		})
	}
}
